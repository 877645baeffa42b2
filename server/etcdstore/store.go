package etcdstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemhq/idem/server"
)

var (
	_ server.Store       = (*Store)(nil)
	_ server.SystemNamer = (*Store)(nil)
)

var (
	// ErrResponseTooLarge is wrapped by the error Complete returns for an
	// outcome over Options.MaxResponse, or one the cluster refused for its
	// size (--max-request-bytes, or the client's MaxCallSendMsgSize). It
	// wraps server.ErrResponseTooLarge: nothing was stored and the key is
	// still held under the token, and the middleware (and RunOnce) then
	// complete it with a small outcome that says the answer was not kept.
	ErrResponseTooLarge = fmt.Errorf("idem/etcdstore: response too large for the record: %w", server.ErrResponseTooLarge)

	// ErrFull is wrapped by the error Claim returns when etcd refuses
	// writes for want of space (its NOSPACE alarm: the database reached
	// --quota-backend-bytes). Replays, which write nothing, still work. It
	// wraps [server.ErrStoreFull], so the middleware answers 503 with
	// [server.ProblemStoreFull] and Retry-After: 30.
	ErrFull = fmt.Errorf("idem/etcdstore: etcd is out of space (NOSPACE alarm): %w", server.ErrStoreFull)
)

// maxWrites bounds how many transactions one call makes when the record
// keeps changing under it (other claims, renewals): each failed compare
// hands back the record as it now is, and the call decides again.
const maxWrites = 8

// Store is a [server.Store] on an etcd v3 cluster. Every write is a
// transaction through the cluster's consensus, fenced by the record's
// revision; a replay is one linearizable read. It is safe for concurrent
// use by multiple goroutines and by multiple processes sharing the
// cluster (whose clocks must agree: see the package documentation).
type Store struct {
	cli    *clientv3.Client
	cfg    config
	leases *leases
	now    func() time.Time
}

// StoreSystem returns "etcd", which observers give the store's calls as
// db.system.name (see [server.SystemNamer]).
func (s *Store) StoreSystem() string { return "etcd" }

// New returns a Store keeping its records in the cluster cli talks to. It
// does not touch the cluster. It fails if cli is nil or opts is invalid
// (an error wrapping [ErrInvalidOptions]). The caller keeps ownership of
// cli and closes it after the Store's last use; calls still running then
// fail.
func New(cli *clientv3.Client, opts Options) (*Store, error) {
	if cli == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidOptions)
	}
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	return &Store{cli: cli, cfg: cfg, leases: newLeases(cli.Lease, cfg.tryTimeout), now: time.Now}, nil
}

// Claim implements [server.Store]. It reads the record (one linearizable
// read, which is all a replay or a repeat in flight costs) and, for a new
// key, an expired or abandoned record, or a lapsed lease with the same
// fingerprint (TakenOver), writes the claim in one transaction: for a new
// key "if the key was never created, put the claim", otherwise "if the
// record is still at the revision read, put the claim". A compare that
// fails hands back the record as it now is, and Claim decides again.
// A running record with another fingerprint is reported, never taken
// over. The token is the claim's revision, with what fences it.
//
// When the write fails without a clear answer (the member died, the
// leader changed, the request timed out), the claim may have been
// recorded all the same, now or later. Claim reads the record once to
// find out; if that fails too (or Claim fails later on), it returns the
// error and releases the claim in the background, fenced by its nonce,
// for at most the lease, so that it does not hold the key from the
// retries for a whole lease.
func (s *Store) Claim(ctx context.Context, k server.Key, fingerprint string, lease time.Duration) (_ server.Claim, err error) {
	key := recordKey(s.cfg.prefix, k)
	resp, err := s.get(ctx, key)
	if err != nil {
		return server.Claim{}, translate(ctx, "claim", err)
	}
	cur := first(resp.Kvs)
	nonce := rand.Text()
	takeover := false
	// uncertain: a write's answer was lost. If Claim then fails, that
	// write may still land (etcd applies a proposal that timed out at the
	// client once it commits); a claim nobody runs is deleted behind it.
	uncertain := false
	defer func() {
		if uncertain && err != nil {
			s.releaseLater(key, nonce, lease)
		}
	}()
	for range maxWrites {
		if rev, ok := heldBy(cur, nonce); ok {
			// This call's own earlier write, whose answer was lost.
			return s.acquired(rev, nonce, fingerprint, takeover), nil
		}
		now := s.now()
		d, err := decide(cur, fingerprint, now, s.cfg.abandon)
		if err != nil {
			return server.Claim{}, fmt.Errorf("etcdstore: claim: %w", err)
		}
		if d.report != nil {
			return server.Claim{Record: d.report.asRecord()}, nil
		}
		takeover = d.takeover
		lapse := now.Add(lease)
		id, err := s.leases.forExpiry(ctx, now, lapse.Add(s.cfg.abandon))
		if err != nil {
			return server.Claim{}, translate(ctx, "claim: lease", err)
		}
		value := (&record{state: stateRunning, fingerprint: fingerprint, claimNonce: nonce, lapse: lapse}).encode()
		cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		if cur != nil {
			cmp = clientv3.Compare(clientv3.ModRevision(key), "=", cur.ModRevision)
		}
		tr, err := s.txn(ctx, cmp, clientv3.OpPut(key, string(value), clientv3.WithLease(id)), clientv3.OpGet(key))
		switch {
		case err == nil && tr.Succeeded:
			return s.acquired(tr.Header.Revision, nonce, fingerprint, takeover), nil
		case err == nil:
			cur = first(tr.Responses[0].GetResponseRange().Kvs)
			continue
		case leaseGone(err):
			s.leases.forgetID(id)
			continue
		case !ambiguous(err):
			return server.Claim{}, translate(ctx, "claim", err)
		}
		// The write may have landed: look.
		uncertain = true
		resp, rerr := s.get(ctx, key)
		if rerr != nil {
			return server.Claim{}, translate(ctx, "claim", err)
		}
		cur = first(resp.Kvs)
	}
	return server.Claim{}, fmt.Errorf("etcdstore: claim: the record changed under each of %d writes", maxWrites)
}

func (s *Store) acquired(rev int64, nonce, fingerprint string, takenOver bool) server.Claim {
	tok := token{rev: rev, nonce: nonce, fingerprint: fingerprint}
	return server.Claim{Acquired: true, Token: tok.String(), TakenOver: takenOver}
}

// decision is what Claim does with the record it read: report it, or
// write a claim over it (taking a lapsed lease over, or not).
type decision struct {
	report   *record
	takeover bool
}

// decide is Claim's rule, on the record cur read at now (nil: no record).
// A completed record is reported until its retention ends; a running one
// is reported while its lease runs, and to another fingerprint until it is
// abandoned; a lapsed lease is taken over by the same fingerprint. Past
// its retention or abandonment a record counts as gone, whether or not
// etcd has deleted it yet. A value that is not a record is an error: the
// store does not overwrite what it cannot read.
func decide(cur *mvccpb.KeyValue, fingerprint string, now time.Time, abandon time.Duration) (decision, error) {
	if cur == nil {
		return decision{}, nil
	}
	r, err := decodeRecord(cur.Value)
	if err != nil {
		return decision{}, fmt.Errorf("key %q: %w", cur.Key, err)
	}
	switch {
	case r.state == stateCompleted:
		if now.Before(r.expires) {
			return decision{report: r}, nil
		}
		return decision{}, nil
	case !now.Before(r.lapse.Add(abandon)):
		return decision{}, nil
	case !now.After(r.lapse) || r.fingerprint != fingerprint:
		return decision{report: r}, nil
	}
	return decision{takeover: true}, nil
}

// heldBy reports whether cur is a running record written by the claim
// with nonce, and its revision.
func heldBy(cur *mvccpb.KeyValue, nonce string) (int64, bool) {
	if cur == nil {
		return 0, false
	}
	r, err := decodeRecord(cur.Value)
	if err != nil || r.state != stateRunning || r.claimNonce != nonce {
		return 0, false
	}
	return cur.ModRevision, true
}

// releaseLater deletes the running record of key written by the claim
// with nonce, if it appears, in a goroutine of its own: a claim whose
// answer was lost may land after the error was returned (etcd applies a
// proposal that timed out at the client once it commits). It looks every
// second or so for at most lease, and stops once it has deleted the claim
// or the client is closed.
func (s *Store) releaseLater(key, nonce string, lease time.Duration) {
	go func() {
		ctx, cancel := context.WithTimeout(s.cli.Ctx(), max(lease, time.Second))
		defer cancel()
		for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			if resp, err := s.get(ctx, key); err == nil {
				cur := first(resp.Kvs)
				if rev, ok := heldBy(cur, nonce); ok {
					_, err := s.txn(ctx, clientv3.Compare(clientv3.ModRevision(key), "=", rev), clientv3.OpDelete(key), clientv3.OpGet(key))
					if err == nil {
						return
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
}

// Renew implements [server.Store]: one transaction, "if the record is
// still at the token's revision, put it with the new lapse". After an
// earlier renewal the compare fails and hands back the record; if it is
// still this claim's (its nonce), Renew writes again at its revision.
func (s *Store) Renew(ctx context.Context, k server.Key, tokenString string, lease time.Duration) error {
	tok, ok := parseToken(tokenString)
	if !ok {
		return server.ErrLeaseLost
	}
	key := recordKey(s.cfg.prefix, k)
	rev := tok.rev
	for range maxWrites {
		now := s.now()
		lapse := now.Add(lease)
		id, err := s.leases.forExpiry(ctx, now, lapse.Add(s.cfg.abandon))
		if err != nil {
			return translate(ctx, "renew: lease", err)
		}
		value := (&record{state: stateRunning, fingerprint: tok.fingerprint, claimNonce: tok.nonce, lapse: lapse}).encode()
		tr, err := s.fencedTxn(ctx, key, rev, clientv3.OpPut(key, string(value), clientv3.WithLease(id)))
		switch {
		case err == nil && tr.Succeeded:
			return nil
		case err == nil:
			if rev, err = stillHeld(tr, tok); err != nil {
				return err
			}
		case leaseGone(err):
			s.leases.forgetID(id)
		default:
			return translate(ctx, "renew", err)
		}
	}
	return fmt.Errorf("etcdstore: renew: the record changed under each of %d writes", maxWrites)
}

// Release implements [server.Store]: one transaction, "if the record is
// still at the token's revision, delete it" (two after a renewal, as
// Renew).
func (s *Store) Release(ctx context.Context, k server.Key, tokenString string) error {
	tok, ok := parseToken(tokenString)
	if !ok {
		return server.ErrLeaseLost
	}
	key := recordKey(s.cfg.prefix, k)
	rev := tok.rev
	for range maxWrites {
		tr, err := s.fencedTxn(ctx, key, rev, clientv3.OpDelete(key))
		if err != nil {
			return translate(ctx, "release", err)
		}
		if tr.Succeeded {
			return nil
		}
		if rev, err = stillHeld(tr, tok); err != nil {
			return err
		}
	}
	return fmt.Errorf("etcdstore: release: the record changed under each of %d writes", maxWrites)
}

// fencedTxn runs "if key is at rev then op, else read key".
func (s *Store) fencedTxn(ctx context.Context, key string, rev int64, op clientv3.Op) (*clientv3.TxnResponse, error) {
	return s.txn(ctx, clientv3.Compare(clientv3.ModRevision(key), "=", rev), op, clientv3.OpGet(key))
}

// errNoAnswer is what a call to etcd that took longer than
// Options.TryTimeout fails with (its context is not done).
var errNoAnswer = errors.New("no answer from etcd within Options.TryTimeout")

// get reads key, linearizably, within Options.TryTimeout.
func (s *Store) get(ctx context.Context, key string) (*clientv3.GetResponse, error) {
	tctx, cancel := context.WithTimeout(ctx, s.cfg.tryTimeout)
	defer cancel()
	resp, err := s.cli.Get(tctx, key)
	return resp, s.tried(ctx, tctx, err)
}

// txn runs "if cmp then op else other" within Options.TryTimeout.
func (s *Store) txn(ctx context.Context, cmp clientv3.Cmp, op, other clientv3.Op) (*clientv3.TxnResponse, error) {
	tctx, cancel := context.WithTimeout(ctx, s.cfg.tryTimeout)
	defer cancel()
	resp, err := s.cli.Txn(tctx).If(cmp).Then(op).Else(other).Commit()
	return resp, s.tried(ctx, tctx, err)
}

// tried is err, or errNoAnswer if it is the try's own timeout and not
// the caller's context.
func (s *Store) tried(ctx, tctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		return fmt.Errorf("%w (%v)", errNoAnswer, s.cfg.tryTimeout)
	}
	return err
}

// stillHeld reads the record a failed fenced transaction handed back and
// returns its revision if the claim of tok still holds it, or
// server.ErrLeaseLost.
func stillHeld(tr *clientv3.TxnResponse, tok token) (int64, error) {
	rev, ok := heldBy(first(tr.Responses[0].GetResponseRange().Kvs), tok.nonce)
	if !ok {
		return 0, server.ErrLeaseLost
	}
	return rev, nil
}

// first is the first of kvs, or nil.
func first(kvs []*mvccpb.KeyValue) *mvccpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}

// valueOf is kv's value, or nil.
func valueOf(kv *mvccpb.KeyValue) []byte {
	if kv == nil {
		return nil
	}
	return kv.Value
}
