// This file holds the contracts between the middleware and a store: the
// records a store keeps, [Store], the optional [Transactor] and
// [WorkClaimer] with the [Work] they begin, and the errors stores return.

package server

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Key names one idempotent operation: the caller's Scope (tenant, account or
// API credential) and the Idempotency-Key it sent, normalised (the bare form
// of a quoted key). Keys from different scopes never meet.
type Key struct {
	Scope string
	Key   string
}

// StoredResponse is an outcome as it is stored and replayed: the status, the
// headers that are safe to replay, and the body.
type StoredResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// Record is what a store holds for a key that is running or completed.
type Record struct {
	// Fingerprint of the request that claimed the key. A running record's
	// is empty when the store cannot tell which request holds the key (a
	// lock held by another unit of work: see WorkClaimer); such a key is
	// in flight to every request, never reused.
	Fingerprint string
	// Completed is true once an outcome is stored; Response holds it.
	Completed bool
	// LeaseExpires is when the running worker's lease lapses (zero once
	// completed). After it, a retry with the same fingerprint may take the
	// key over; one with another fingerprint never does.
	LeaseExpires time.Time
	// Response is the stored outcome when Completed.
	Response StoredResponse
	// ExpiresAt is when a completed record's retention ends: after it the
	// key may be claimed afresh by any request. For a running record it is
	// the lease expiry; a store may forget such a record some time after
	// its lease lapsed (memstore keeps it for Options.Abandon).
	ExpiresAt time.Time
}

// Claim is the answer to [Store.Claim] and [WorkClaimer.ClaimWork].
type Claim struct {
	// Acquired reports that the caller now owns the key and must run the
	// work, then end the claim exactly once: with Complete or Release and
	// Token after Store.Claim, or with the Work's Commit or Rollback after
	// WorkClaimer.ClaimWork.
	Acquired bool
	// Token fences the caller's lease: Renew, Complete and Release succeed
	// only while the key is still held under this token. It is empty for
	// a claim held by a WorkClaimer's unit of work.
	Token string
	// TakenOver reports that the key was acquired from a worker whose lease
	// lapsed (it crashed or hung).
	TakenOver bool
	// Record is the existing record when Acquired is false.
	Record Record
}

// Store keeps idempotency records. Implementations must be safe for
// concurrent use by multiple goroutines and, where they are shared, by
// multiple processes. Every store passes the storetest conformance suite.
type Store interface {
	// Claim atomically claims k for a request with the given fingerprint.
	//
	// If k is unknown, or its completed record has passed its ExpiresAt, or
	// it is running under a lapsed lease with the same fingerprint, the
	// caller acquires it under a fresh token with a lease of the given
	// length. Otherwise Claim reports the existing record and changes
	// nothing; in particular a running record whose fingerprint differs is
	// never taken over, lapsed lease or not. A store with no room for a
	// new key refuses it with an error wrapping ErrStoreFull.
	Claim(ctx context.Context, k Key, fingerprint string, lease time.Duration) (Claim, error)

	// Renew extends the lease held under token to lease from now. It returns
	// ErrLeaseLost if the key is no longer held under token.
	Renew(ctx context.Context, k Key, token string, lease time.Duration) error

	// Complete stores resp as the outcome of k, kept for retention, if the
	// key is still held under token; otherwise it returns ErrLeaseLost and
	// stores nothing.
	Complete(ctx context.Context, k Key, token string, resp StoredResponse, retention time.Duration) error

	// Release forgets a running claim held under token, so a retry runs the
	// work again. It returns ErrLeaseLost if the key is not held under token.
	Release(ctx context.Context, k Key, token string) error
}

// Transactor is implemented by stores that can run the work inside a
// database transaction that commits together with the stored outcome.
// The middleware and RunOnce use it when the store implements it.
type Transactor interface {
	// BeginWork starts the unit of work for a key acquired under token. The
	// returned context carries whatever the work needs to join it (pgstore
	// exposes its transaction through pgstore.Tx). A store configured
	// without transactions returns ctx unchanged and a nil Work: the work
	// then runs outside the store, and its outcome is stored with Complete.
	// (A Work's failed Commit means the work was undone, and the key is
	// released for a retry; a failed Complete after work outside the store
	// leaves the key held instead, since the work happened.)
	BeginWork(ctx context.Context, k Key, token string) (context.Context, Work, error)
}

// WorkClaimer is implemented by stores whose claim on a key can live
// inside the work's own database transaction, as a lock that transaction
// holds (pgstore in transactional mode is one): the claim, the work's
// writes and the stored outcome commit together, and a crashed worker's
// claim vanishes with its connection. Such a claim has no token, no lease,
// no renewal and nothing to fence. The middleware and RunOnce use
// ClaimWork instead of [Store.Claim] and [Transactor.BeginWork] when the
// store implements it; the store's other methods are then not called for
// the claims ClaimWork makes.
type WorkClaimer interface {
	// ClaimWork claims k for a request with the given fingerprint inside a
	// unit of work it begins, and returns one of three answers.
	//
	// Acquired: k is free (unknown, released, or its completed record has
	// passed its ExpiresAt) and now held by the unit of work. ClaimWork
	// returns a Claim with Acquired set and no Token, the context the work
	// runs with (it descends from ctx and carries whatever the work needs
	// to join the unit, as [Transactor.BeginWork]'s does), and the Work.
	// The caller calls exactly one of Work.Commit, which stores the
	// outcome and commits it with the work's writes, or Work.Rollback,
	// which discards both and frees k. Until then, every other ClaimWork
	// or Claim of k answers that k is running.
	//
	// Not acquired: ClaimWork holds nothing, changes nothing, and returns
	// a nil context and Work with the existing record in Claim.Record:
	// completed (the caller replays it, or answers 422 if its Fingerprint
	// differs), or running, because another unit of work holds k. A
	// running record's Fingerprint is empty when the store cannot tell
	// which request holds k; the caller then answers that k is in flight
	// (409), never that it was reused. LeaseExpires and ExpiresAt of a
	// running record may be zero.
	//
	// A store that offers ClaimWork only in some configurations returns an
	// error wrapping errors.ErrUnsupported, having done nothing; the caller
	// then claims k with Store.Claim. Any other error means nothing is
	// held and nothing ran (the middleware answers 503).
	//
	// A store may defer the claim, in a mode its user opts into: it then
	// answers Acquired before asking anyone, and sends the claim together
	// with the work's first statement, which runs only if the claim holds.
	// A work that ends before any statement sends its claim then, in its
	// Commit or its Rollback alike, so that a repeat is answered as its
	// claim whether its work succeeded or failed.
	// If the claim is refused once sent, the work's statements fail,
	// nothing of the work commits, and the Work's Commit or Rollback
	// returns a [*ClaimRefused] holding the answer the claim got; the
	// caller then answers the request as if ClaimWork had returned that
	// answer, and the work's own answer is thrown away. Such a mode is
	// safe only for work whose effects are all in the store's database:
	// an effect made before the first statement returned would be made
	// again by every repeat.
	ClaimWork(ctx context.Context, k Key, fingerprint string) (Claim, context.Context, Work, error)
}

// ClaimRefused is the error a [Work]'s Commit or Rollback returns when
// the store deferred the claim that ClaimWork answered Acquired (see
// [WorkClaimer]) and the claim, once sent, was refused: another unit of
// work holds the key, or its record is completed. Nothing of the work
// committed and nothing is held. Claim is the answer the claim got, with
// Acquired false: its Record is to be answered as ClaimWork's would be (a
// replay, 422 for another fingerprint, or in flight).
type ClaimRefused struct {
	Claim Claim
}

func (e *ClaimRefused) Error() string {
	switch r := &e.Claim.Record; {
	case r.Completed:
		return "idem/server: claim refused: the key's record is completed"
	default:
		return "idem/server: claim refused: the key is in flight"
	}
}

// Work is a unit of work begun by [Transactor.BeginWork] or
// [WorkClaimer.ClaimWork]. Exactly one of Commit or Rollback must be
// called, from one goroutine. Once the Work has ended, a further Commit
// returns an error and stores nothing, and Rollback returns nil, so that
// a caller may defer Rollback.
type Work interface {
	// Commit stores resp for retention and commits the work with it.
	// After BeginWork the stored outcome is fenced by the lease token: if
	// the lease was lost the work is rolled back and Commit returns
	// ErrLeaseLost. After ClaimWork there is no lease; if a record of k
	// was stored by another unit of work all the same (the store's last
	// line of defence, such as its primary key, refused a second one),
	// the work is rolled back and Commit returns ErrLeaseLost. Any other
	// error means the work did not commit, or its answer was lost: a
	// retry of k finds out which.
	Commit(ctx context.Context, resp StoredResponse, retention time.Duration) error
	// Rollback discards the work. After BeginWork the caller then releases
	// the key; after ClaimWork the rollback frees it.
	Rollback(ctx context.Context) error
}

// ErrStoreFull is wrapped by the error a store returns from Claim (or
// ClaimWork) when it has no room for a new key: it never forgets a key
// inside its retention to make room. Nothing was claimed. The middleware
// answers 503 with [ProblemStoreFull] and a Retry-After longer than a
// failing store's, and logs a warning without the key; [RunOnce] returns
// an error wrapping it. A store wraps it in a sentinel of its own:
//
//	var ErrFull = fmt.Errorf("idem/mystore: store full: %w", server.ErrStoreFull)
var ErrStoreFull = errors.New("idem/server: store full")

// ErrResponseTooLarge is wrapped by the error a store's Complete returns
// for an outcome it cannot keep for its size (redisstore's
// Options.MaxResponse). Nothing was stored and the key is still held under
// the token. The middleware and RunOnce then complete the key with a small
// outcome in its place, with the same status and a [ProblemResponseNotKept]
// body, so a retry learns that the work ran and its answer was not kept,
// never runs the work again, and never waits out the retention in flight.
var ErrResponseTooLarge = errors.New("idem/server: response too large to store")

// ErrLeaseLost is returned by a store when a key is no longer held under the
// caller's lease token: the lease lapsed and another worker took the key
// over, or the claim was released.
var ErrLeaseLost = errors.New("idem/server: lease lost")
