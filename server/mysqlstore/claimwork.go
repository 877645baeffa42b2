package mysqlstore

// This file holds ClaimWork: in transactional mode, the key claimed by a
// named lock of the work's own connection.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/idemhq/idem/server"
)

// ClaimWork claims k for a request with the given fingerprint by a named
// lock (GET_LOCK) held by the connection of the work's own transaction,
// and begins that transaction: the connection is the lease. It needs
// Options.Transactional; otherwise it returns an error wrapping
// [errors.ErrUnsupported] and touches nothing, and the caller claims with
// [Store.Claim] instead. It does the same on a server that refuses named
// locks (a Galera node: see the package documentation).
//
// ClaimWork takes a connection from the pool and reads the key's record;
// only if the record leaves the key to be claimed (there is none, or it
// is past its expiry and completed, or running for this very request) the
// same statement tries the key's lock without waiting. Then:
//
//   - The record is completed and inside its retention: Claim.Record is
//     that record, to replay (or, with another fingerprint, to refuse).
//     One round trip, no lock, no write.
//   - The record is running under a live lease (a claim through
//     [Store.Claim]), or under a lapsed one for another request, which is
//     never taken over: Claim.Record is that running record.
//   - The lock is held by another connection: the key is running, and
//     Claim.Record is a running record with an empty Fingerprint (that
//     request's fingerprint is not known until it commits). The caller
//     answers it as in flight (409, or waits and claims again), whatever
//     its own fingerprint; a different body is refused once the first
//     request's record is stored.
//   - The lock is taken: ClaimWork reads the record again (a holder that
//     committed and gave the lock back between the first read and the
//     lock is seen now) and, if the key is still free, begins the
//     transaction: the Claim is Acquired (TakenOver for a lapsed lease of
//     this request), the returned context carries the transaction for
//     [Tx], and the Work's Commit stores the outcome and commits with the
//     handler's writes, or its Rollback discards them and frees the key.
//     Exactly one of them must be called; until then the connection stays
//     out of the pool. Claim.Token is empty: no Renew, Complete or
//     Release applies, and nothing needs renewing while the work runs.
//
// A claim that acquires nothing holds nothing when ClaimWork returns,
// except the lock it took to find the key claimed meanwhile, which it
// gives back in the background with its connection.
//
// A worker that crashes frees its keys as its connection closes: MySQL
// rolls its transaction back and releases its named locks, and a retry
// takes the key at once. A worker that is alive keeps its keys for as long
// as it runs, and nothing can take them from it, so nothing needs
// fencing. If a record for the key commits meanwhile through a path that
// takes no lock (Store.Claim of a Store that is not transactional), the
// primary key makes this work's Commit fail with [server.ErrLeaseLost]
// and roll back.
//
// The returned context is nil, as the Work is, when the key is not
// acquired. A cancelled ctx returns its error wrapped.
func (s *Store) ClaimWork(ctx context.Context, k server.Key, fingerprint string) (server.Claim, context.Context, server.Work, error) {
	if !s.opts.Transactional {
		return server.Claim{}, nil, nil, fmt.Errorf("mysqlstore: ClaimWork without Options.Transactional: %w", errors.ErrUnsupported)
	}
	if err := checkKey(k, fingerprint); err != nil {
		return server.Claim{}, nil, nil, err
	}
	id := keyID(k.Scope, k.Key)
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return server.Claim{}, nil, nil, translate(ctx, "claim", err)
	}
	var row lookupRow
	var locked int
	if err := row.scan(conn.QueryRowContext(ctx, s.q.workLookup(id[:], fingerprint)), &locked); err != nil {
		// Whether the lock was taken is unknown: closing the connection
		// gives it back.
		discard(conn)
		if isCode(err, errNotSupportedYet) {
			return server.Claim{}, nil, nil, fmt.Errorf("mysqlstore: ClaimWork: the server refuses named locks (a Galera node?): %w", errors.ErrUnsupported)
		}
		return server.Claim{}, nil, nil, translate(ctx, "claim", err)
	}
	if locked != 1 {
		_ = conn.Close() // holds nothing
		if row.live(fingerprint) {
			rec, err := row.record()
			return server.Claim{Record: rec}, nil, nil, err
		}
		// Another connection holds the key's lock.
		return server.Claim{}, nil, nil, nil
	}
	var one int
	if err := row.scan(conn.QueryRowContext(ctx, s.q.plainLookup(id[:])), &one); err != nil {
		s.giveBack(conn, id)
		return server.Claim{}, nil, nil, translate(ctx, "claim", err)
	}
	if row.live(fingerprint) {
		// The lock's previous holder committed this record meanwhile.
		s.giveBack(conn, id)
		rec, err := row.record()
		return server.Claim{Record: rec}, nil, nil, err
	}
	if _, err := conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
		s.giveBack(conn, id)
		return server.Claim{}, nil, nil, translate(ctx, "claim", err)
	}
	w := &txWork{
		s: s, id: id, k: keyText{k.Scope, k.Key}, fingerprint: fingerprint,
		conn: conn, tx: &workTx{conn: conn}, locked: true, claimedAt: row.now,
	}
	if row.found {
		seen := row.token
		w.seen = &seen
	}
	return server.Claim{Acquired: true, TakenOver: row.found && !row.completed}, context.WithValue(ctx, txKey{}, w.tx), w, nil
}

// giveBack releases the key's named lock held by conn and returns conn to
// the pool, in the background: the caller has its answer, and the release
// takes a round trip after it. Until then a retry of the key finds it in
// flight, or replays the record that was committed. If the release fails,
// or takes longer than releaseTimeout, the connection is closed instead,
// which releases the lock on the server all the same. Store.Close waits
// for these releases; once it has begun, the release runs before giveBack
// returns.
func (s *Store) giveBack(conn *sql.Conn, id [32]byte) {
	if !s.uses.enter() {
		s.releaseLock(conn, id)
		return
	}
	go func() {
		defer s.uses.leave()
		s.releaseLock(conn, id)
	}()
}

// releaseLock releases the key's named lock held by conn and returns conn
// to the pool, or closes conn if the release fails.
func (s *Store) releaseLock(conn *sql.Conn, id [32]byte) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if _, err := conn.ExecContext(ctx, s.q.release(id[:])); err != nil {
		discard(conn)
		return
	}
	_ = conn.Close()
}

// releaseTimeout bounds the release of a named lock.
const releaseTimeout = 10 * time.Second

// discard closes conn's connection instead of returning it to the pool:
// the server then rolls back its transaction and releases its named locks.
// database/sql closes a connection that a Raw function reports bad.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}
