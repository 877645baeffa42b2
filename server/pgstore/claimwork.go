package pgstore

// This file holds ClaimWork: in transactional mode, the key claimed by a
// lock of the work's own transaction.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
)

// DefaultTakeover is Options.Takeover's default.
const DefaultTakeover = 30 * time.Second

// ClaimWork claims k for a request with the given fingerprint by a lock
// held by the work's own transaction, and begins that transaction: the
// transaction is the lease. It needs Options.Transactional; otherwise it
// returns an error wrapping [errors.ErrUnsupported] and touches nothing,
// and the caller claims with [Store.Claim] instead.
//
// ClaimWork takes a connection from the pool and, in one round trip,
// begins a READ COMMITTED transaction, tries the key's transaction-scoped
// advisory lock without waiting, and then, in the next statement, reads
// the key's record. Then:
//
//   - The lock is taken and the key is new, its record past its retention,
//     or running under a lapsed lease with this fingerprint (TakenOver):
//     the Claim is Acquired, the returned context carries the transaction
//     for [Tx], and the Work's Commit stores the outcome and commits with
//     the handler's writes (one round trip, one commit), or its Rollback
//     discards them and frees the key. Exactly one of them must be called;
//     until then the connection stays out of the pool. Claim.Token is
//     empty: no Renew, Complete or Release applies, and nothing needs
//     renewing while the work runs.
//   - The record is completed and inside its retention: Claim.Record is
//     that record, to replay (or, with another fingerprint, to refuse).
//   - Otherwise the key is running: Claim.Record is a running record. Its
//     Fingerprint is the running request's when a claim through
//     [Store.Claim] holds the key, and empty when only another
//     transaction's lock does: that request's fingerprint is not known
//     until it commits. The caller answers such a record as in flight
//     (409, or waits and calls ClaimWork again), whatever its own
//     fingerprint; a different body is refused once the first request's
//     record is stored.
//
// A claim that acquires nothing costs one round trip before ClaimWork
// returns (a replay, a repeat in flight); its transaction, which wrote
// nothing, is rolled back in the background (a second round trip, after
// the answer) and its connection goes back to the pool: a repeat waiting
// for a running request holds no connection.
//
// A worker that crashes frees its keys as its connection closes: a retry
// takes the key over at once. A worker that is alive keeps its keys for as
// long as it runs, and nothing can take them from it, so nothing needs
// fencing; a worker whose machine vanished without closing its connection
// keeps them until PostgreSQL notices, about Options.Takeover later. If a
// record for the key commits meanwhile through a path that takes no lock
// (Store.Claim, as a process of an earlier version would), the primary key
// makes this work's Commit fail with [server.ErrLeaseLost] and roll back.
//
// The lock's 64-bit key is the start of a SHA-256 of the table, scope and
// key, so clients cannot choose keys whose locks collide. It is computed
// in Go from the table's OID, which the Store learns on its first
// ClaimWork (a second round trip, once) and again if the table is created
// anew; its value is the one earlier versions computed in SQL. Two different
// keys whose locks collide all the same only make one wait (in flight)
// while the other runs; they never run as one, since each keeps its own
// record.
//
// Rolling upgrades: earlier versions of pgstore derived the lock key with
// hashtextextended (see the CHANGELOG). An old and a new process take different locks for
// one key, so while both serve one table a key may run in both at once
// (the primary key refuses the second record, and that work rolls back
// with [server.ErrLeaseLost], but effects outside the database happen
// twice). Drain the old processes before the new ones take requests.
//
// With Options.PipelineClaim, ClaimWork takes a connection and answers
// Acquired without a round trip; the claim goes with the handler's first
// statement (see the Pipelined claim section of the package
// documentation), and the Work's Commit or Rollback returns a
// [*server.ClaimRefused] if it was refused.
//
// The returned context is nil, as the Work is, when the key is not
// acquired. A cancelled ctx returns its error wrapped.
func (s *Store) ClaimWork(ctx context.Context, k server.Key, fingerprint string) (server.Claim, context.Context, server.Work, error) {
	if !s.opts.Transactional {
		return server.Claim{}, nil, nil, fmt.Errorf("pgstore: ClaimWork without Options.Transactional: %w", errors.ErrUnsupported)
	}
	pool, err := s.conns(ctx)
	if err != nil {
		return server.Claim{}, nil, nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return server.Claim{}, nil, nil, translate(ctx, "claim", err)
	}
	if s.opts.PipelineClaim {
		if w := s.deferClaim(conn, k, fingerprint); w != nil {
			return server.Claim{Acquired: true}, context.WithValue(ctx, txKey{}, w.tx), w, nil
		}
	}
	locked, row, found, err := s.lockAndLookup(ctx, conn, k)
	if err != nil {
		s.endClaim(conn)
		return server.Claim{}, nil, nil, translate(ctx, "claim", err)
	}
	running := found && !row.completed
	switch {
	case found && row.completed && !row.expired:
		// A stored outcome is final: replay it, lock or no lock.
		s.endClaim(conn)
		rec, err := row.record()
		if err != nil {
			return server.Claim{}, nil, nil, err
		}
		return server.Claim{Record: rec}, nil, nil, nil
	case !locked:
		// Another transaction holds the key. Its fingerprint is known only
		// if a claim through Store.Claim runs it under a live lease.
		s.endClaim(conn)
		rec := server.Record{}
		if running && !row.expired {
			rec, _ = row.record()
		}
		return server.Claim{Record: rec}, nil, nil, nil
	case running && (!row.expired || row.fingerprint != fingerprint):
		// A claim through Store.Claim under a live lease, or a lapsed one
		// for another request, which is never taken over.
		s.endClaim(conn)
		rec, _ := row.record()
		return server.Claim{Record: rec}, nil, nil, nil
	}
	// Locked, and the key is new, past its retention, or running under a
	// lapsed lease for this very request.
	lock := &lockedWork{fingerprint: fingerprint}
	if found {
		lock.seen = &row.token
	}
	w := &txWork{s: s, k: k, lock: lock, conn: conn, tx: &workTx{conn: conn.Conn()}}
	return server.Claim{Acquired: true, TakenOver: running}, context.WithValue(ctx, txKey{}, w.tx), w, nil
}

// lockAndLookup runs BEGIN, the lock statement and the lookup pipelined in
// one round trip, and reports whether the lock was taken and the key's
// record, if found. The lock's key is computed here, once, from the
// table's OID as last seen; if the table's OID is not that one (the
// first claim of the Store, or the table was created again), the lock
// statement takes nothing, and the lock and the lookup are sent again in
// the same transaction with the OID it reported: a second round trip, on
// that path only.
func (s *Store) lockAndLookup(ctx context.Context, conn *pgxpool.Conn, k server.Key) (locked bool, row lookupRow, found bool, err error) {
	inSQL := !isASCII(k.Scope) || !isASCII(k.Key)
	if inSQL && conn.Conn().PgConn().ParameterStatus("server_encoding") == "UTF8" {
		inSQL = false // Go's bytes are the server's
	}
	oid := s.tableOID.Load()
	for attempt := range 2 {
		var seen uint32
		var got *bool
		got, seen, row, found, err = s.lockOnce(ctx, conn, k, oid, inSQL, attempt == 0)
		if err != nil || got != nil {
			return got != nil && *got, row, found, err
		}
		// The table's OID was not oid: nothing was locked.
		s.tableOID.Store(seen)
		oid = seen
	}
	return false, row, false, errors.New("pgstore: claim: the table's OID changed while the lock was taken")
}

// lockOnce sends the lock statement for the table OID oid, after BEGIN if
// begin, and the lookup after it, in one round trip. locked is nil when
// the lock statement took nothing because the table's OID is not oid;
// seen is the OID it found.
func (s *Store) lockOnce(ctx context.Context, conn *pgxpool.Conn, k server.Key, oid uint32, inSQL, begin bool) (locked *bool, seen uint32, row lookupRow, found bool, err error) {
	b := &pgx.Batch{}
	if begin {
		b.Queue(s.q.begin)
	}
	if inSQL {
		b.Queue(s.q.lockInSQL, k.Scope, k.Key)
	} else {
		b.Queue(s.q.lock, lockKeyOf(oid, k), oid)
	}
	b.Queue(s.q.lookup, k.Scope, k.Key)
	br := conn.SendBatch(ctx, b)
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if begin {
		if _, err = br.Exec(); err != nil {
			return nil, 0, row, false, err
		}
	}
	var settings string
	if err = br.QueryRow().Scan(&locked, &seen, &settings); err != nil {
		return nil, 0, row, false, err
	}
	if found, err = scanLookup(br.QueryRow(), &row); err != nil {
		return nil, 0, row, false, err
	}
	return locked, seen, row, found, nil
}

// scanLookup scans the row of the lookup statement into row,
// and reports whether there was one.
func scanLookup(q pgx.Row, row *lookupRow) (bool, error) {
	err := q.Scan(&row.fingerprint, &row.token, &row.completed, &row.status,
		&row.header, &row.body, &row.expiresAt, &row.expired)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// lockKeyOf is the advisory lock key of k in the table whose OID is oid,
// the value lockKey computes in SQL: the first 8 bytes of the SHA-256 of
// the OID in decimal, a colon, the scope's length in bytes, a colon, the
// scope and the key, read as a big-endian signed 64-bit integer.
func lockKeyOf(oid uint32, k server.Key) int64 {
	var buf [64]byte
	h := sha256.New()
	p := strconv.AppendUint(buf[:0], uint64(oid), 10)
	p = append(p, ':')
	p = strconv.AppendInt(p, int64(len(k.Scope)), 10)
	p = append(p, ':')
	h.Write(p)
	io.WriteString(h, k.Scope)
	io.WriteString(h, k.Key)
	var sum [sha256.Size]byte
	return int64(binary.BigEndian.Uint64(h.Sum(sum[:0])[:8]))
}

// isASCII reports whether s is ASCII, the same bytes in every encoding
// PostgreSQL serves.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// endClaim ends the transaction of a claim that acquired nothing and puts
// its connection back in the pool, in the background: the caller has its
// answer after one round trip, and the ROLLBACK takes a second one while
// the caller replays or refuses. Until then the transaction keeps the
// key's lock, if it took it: a retry in that moment finds the key in
// flight. If the rollback fails, or takes longer than rollbackTimeout, the
// pool closes the connection, which ends the transaction on the server
// all the same. Store.Close waits for these rollbacks; once it has begun,
// the rollback runs before endClaim returns.
func (s *Store) endClaim(conn *pgxpool.Conn) {
	if !s.uses.enter() {
		rollbackClaim(conn)
		return
	}
	go func() {
		defer s.uses.leave()
		rollbackClaim(conn)
	}()
}

// rollbackClaim rolls back the transaction of a claim that acquired
// nothing and puts its connection back in the pool.
func rollbackClaim(conn *pgxpool.Conn) {
	if c := conn.Conn(); !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
		ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
		_, _ = c.Exec(ctx, "ROLLBACK")
		cancel()
	}
	conn.Release()
}

// rollbackTimeout bounds the background rollback of a claim that acquired
// nothing.
const rollbackTimeout = 10 * time.Second

// lookupRow is a record as the lookup statement reads it.
type lookupRow struct {
	fingerprint, token string
	completed, expired bool
	status             int32
	header, body       []byte
	expiresAt          time.Time
}

// record returns the row as a server.Record.
func (r *lookupRow) record() (server.Record, error) {
	rec := server.Record{Fingerprint: r.fingerprint, Completed: r.completed, ExpiresAt: r.expiresAt}
	if !r.completed {
		rec.LeaseExpires = r.expiresAt
		return rec, nil
	}
	rec.Response = server.StoredResponse{Status: int(r.status), Body: r.body}
	h, err := decodeHeader(r.header)
	if err != nil {
		return server.Record{}, fmt.Errorf("pgstore: claim: stored header: %v", err)
	}
	rec.Response.Header = h
	return rec, nil
}

// takeoverSettings returns the set_config calls of the lock statement
// that set, for the work's transaction only, the TCP settings bounding how
// long PostgreSQL takes to notice a vanished worker (Options.Takeover):
// keepalive probes after a third of d of silence, then every sixth of d,
// four of them unanswered, and unacknowledged data for d, end the
// connection. PostgreSQL ignores them on Unix-domain sockets, and logs
// and ignores those the server's platform lacks.
func takeoverSettings(d time.Duration) []string {
	if d < 0 {
		return nil
	}
	if d == 0 {
		d = DefaultTakeover
	}
	secs := func(d time.Duration) string { return strconv.FormatInt(max(int64(d/time.Second), 1), 10) }
	return []string{
		`set_config('tcp_keepalives_idle', '` + secs(d/3) + `', true)`,
		`set_config('tcp_keepalives_interval', '` + secs(d/6) + `', true)`,
		`set_config('tcp_keepalives_count', '4', true)`,
		`set_config('tcp_user_timeout', '` + strconv.FormatInt(max(d.Milliseconds(), 1), 10) + `', true)`,
	}
}
