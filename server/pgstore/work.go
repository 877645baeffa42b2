package pgstore

// This file holds the work's transaction in transactional mode: BeginWork,
// which begins it under a lease, and the Work that ends it, for BeginWork
// and ClaimWork alike.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
)

// BeginWork implements [server.Transactor].
//
// Without Options.Transactional it returns ctx unchanged and a nil Work:
// the work runs outside the database and its outcome is stored with
// [Store.Complete].
//
// In transactional mode it takes a connection from the pool and begins a
// READ COMMITTED transaction on it, with the work's idle timeout
// (Options.IdleInTransaction), in one round trip; the returned context
// carries the transaction for [Tx]. The connection stays out of the pool
// until the Work's Commit or Rollback, one of which must be called.
// Commit stores the outcome fenced by token (see [Store.Complete]).
func (s *Store) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	if !s.opts.Transactional {
		return ctx, nil, nil
	}
	pool, err := s.conns(ctx)
	if err != nil {
		return ctx, nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return ctx, nil, translate(ctx, "begin work", err)
	}
	if err := s.begin(ctx, conn); err != nil {
		conn.Release() // closed by the pool if the BEGIN left it in a transaction
		return ctx, nil, translate(ctx, "begin work", err)
	}
	w := &txWork{s: s, k: k, token: token, conn: conn, tx: &workTx{conn: conn.Conn()}}
	return context.WithValue(ctx, txKey{}, w.tx), w, nil
}

// begin begins the work's transaction of BeginWork on conn and applies
// its settings, pipelined in one round trip.
func (s *Store) begin(ctx context.Context, conn *pgxpool.Conn) error {
	if s.q.workSettings == "" {
		_, err := conn.Exec(ctx, s.q.begin)
		return err
	}
	b := &pgx.Batch{}
	b.Queue(s.q.begin)
	b.Queue(s.q.workSettings)
	return conn.SendBatch(ctx, b).Close()
}

// txWork is the Work of a transactional Store, begun by BeginWork (under
// a lease: token is set) or by ClaimWork (under the transaction's lock:
// lock is set). It is not safe for concurrent use; the middleware calls
// it from the request's goroutine.
type txWork struct {
	s     *Store
	k     server.Key
	token string        // BeginWork's lease token
	lock  *lockedWork   // ClaimWork's claim
	conn  *pgxpool.Conn // nil once the work ended, or reconnect gave it back closed and got none
	tx    *workTx       // the handler's view of the transaction, on tx.conn (conn's, or the closed one)
	done  bool

	// pending is, for a claim sent with the work's first statement
	// (Options.PipelineClaim), the table's OID its lock's key is computed
	// from, until the claim is sent; 0 once it is, and for other claims.
	// refused is the answer to such a claim once it was refused.
	pending uint32
	refused *server.Claim
}

// lockedWork is what ClaimWork learnt about the key it locked, for the
// record statement.
type lockedWork struct {
	fingerprint string
	// seen is the token of the row lookup found and may replace (a
	// completed record past its retention, or a lapsed lease with the same
	// fingerprint); nil if there was none.
	seen *string
}

// Commit stores resp and commits the transaction, both in one round trip:
// the fenced statement and COMMIT are pipelined in one batch. Under a
// lease the statement is the fenced completion; under ClaimWork's lock it
// inserts the record, fenced by the primary key. If the fence fails the
// statement raises an error, PostgreSQL skips the COMMIT, and the
// transaction is rolled back (a second round trip, on that path only);
// Commit then returns server.ErrLeaseLost: the lease was taken over, or
// (under the lock) a record for the key committed meanwhile through a
// path that takes no lock.
//
// If the handler left the transaction failed (a statement errored and was
// not rolled back to a savepoint), Commit rolls back and returns an error
// that is not ErrLeaseLost; the caller then releases the key (under the
// lock, the rollback released it).
func (w *txWork) Commit(ctx context.Context, resp server.StoredResponse, retention time.Duration) error {
	if w.done {
		return errors.New("pgstore: commit: work already ended")
	}
	w.tx.end() // waits for a statement of the handler's still under way
	if w.pending != 0 {
		// A pipelined claim, and the handler sent no statement: the
		// claim goes alone, and the outcome after it.
		if err := w.claim(ctx); err != nil && !errors.Is(err, ErrNotClaimed) {
			w.rollback(ctx)
			w.end()
			return translate(ctx, "commit", err)
		}
	}
	if w.refused != nil {
		return w.endRefused()
	}
	defer w.end()
	switch st := w.tx.conn.PgConn().TxStatus(); st {
	case 'T':
	case 'E':
		w.rollback(ctx)
		return errors.New("pgstore: commit: the work's transaction failed and was rolled back")
	default:
		// The handler committed or rolled back on the raw connection (or
		// it closed); its writes are beyond our reach.
		return fmt.Errorf("pgstore: commit: the work's transaction was ended by the handler or its connection (status %q)", st)
	}
	b := &pgx.Batch{}
	switch {
	case w.lock != nil && w.lock.seen == nil:
		b.Queue(w.s.q.insert, w.k.Scope, w.k.Key, w.lock.fingerprint, rand.Text(),
			int32(resp.Status), encodeHeader(resp.Header), resp.Body, retention.Microseconds())
	case w.lock != nil:
		b.Queue(w.s.q.record, w.k.Scope, w.k.Key, w.lock.fingerprint, rand.Text(),
			int32(resp.Status), encodeHeader(resp.Header), resp.Body, retention.Microseconds(), *w.lock.seen)
	default:
		b.Queue(w.s.q.commit, completeArgs(w.k, w.token, resp, retention)...)
	}
	b.Queue("COMMIT")
	br := w.tx.conn.SendBatch(ctx, b)
	_, fenceErr := br.Exec()
	var commitErr error
	if fenceErr == nil {
		var tag pgconn.CommandTag
		tag, commitErr = br.Exec()
		if commitErr == nil && tag.String() != "COMMIT" {
			commitErr = fmt.Errorf("server answered %s", tag)
		}
	}
	closeErr := br.Close()
	switch {
	case fenceErr != nil:
		w.rollback(ctx)
		var pgErr *pgconn.PgError
		if errors.As(fenceErr, &pgErr) && (pgErr.Code == fenceFailed || pgErr.Code == uniqueViolation) {
			return server.ErrLeaseLost
		}
		return translate(ctx, "commit", fenceErr)
	case commitErr != nil:
		w.rollback(ctx)
		return translate(ctx, "commit", commitErr)
	case closeErr != nil:
		return translate(ctx, "commit", closeErr)
	}
	return nil
}

// Rollback discards the work's writes and returns its connection to the
// pool; under ClaimWork's lock that frees the key. It does nothing once
// the work has ended, so it is safe to defer.
//
// A pipelined claim not sent yet (the handler sent no statement) is sent
// first, as Commit sends it: the request is answered as its claim, a
// replay or 409 for a repeat (ClaimRefused), whatever the handler
// answered; only a request that holds the key gets the handler's own
// failure.
func (w *txWork) Rollback(ctx context.Context) error {
	if w.done {
		return nil
	}
	w.tx.end()
	if w.pending != 0 {
		if err := w.claim(ctx); err != nil && !errors.Is(err, ErrNotClaimed) {
			w.rollback(ctx)
			w.end()
			return translate(ctx, "rollback", err)
		}
	}
	if w.refused != nil {
		return w.endRefused()
	}
	defer w.end()
	c := w.tx.conn
	if c.IsClosed() {
		awaitCleanup(ctx, c)
		return nil // the server rolls back when it sees the connection close
	}
	if c.PgConn().TxStatus() == 'I' {
		return nil // nothing to roll back
	}
	if _, err := c.Exec(ctx, "ROLLBACK"); err != nil {
		if c.IsClosed() {
			awaitCleanup(ctx, c)
			return nil // closed under it (a cancelled query): rolled back all the same
		}
		return translate(ctx, "rollback", err)
	}
	return nil
}

// awaitCleanup waits, up to ctx's end or cleanupWait, for pgx to finish
// closing c. pgx closes a connection whose query was cancelled in a
// goroutine of its own, which first sends PostgreSQL a cancel request:
// until then the server may still run the statement, its transaction open
// and the key's lock held, and a retry answered at once would find the
// key in flight.
func awaitCleanup(ctx context.Context, c *pgx.Conn) {
	t := time.NewTimer(cleanupWait)
	defer t.Stop()
	select {
	case <-c.PgConn().CleanupDone():
	case <-ctx.Done():
	case <-t.C:
	}
}

// cleanupWait bounds awaitCleanup. A server that is reachable answers a
// cancel request within a round trip or two; one that is not (a
// partition) gets the cancel no sooner for being waited on, and pgx gives
// it 15 s, which would hold the request's answer that long after its
// handler gave up on a query.
const cleanupWait = time.Second

// rollback ends a transaction that will not commit. A failure leaves the
// connection in a transaction; end then destroys it instead of pooling it,
// which rolls the transaction back on the server.
func (w *txWork) rollback(ctx context.Context) {
	if c := w.tx.conn; !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
		_, _ = c.Exec(ctx, "ROLLBACK")
	}
}

// endRefused ends the work of a pipelined claim that was refused: its
// failed transaction is rolled back in the background, as the transaction
// of a claim that acquired nothing is (endClaim), and the request is
// answered meanwhile.
func (w *txWork) endRefused() error {
	w.s.endClaim(w.conn)
	w.conn, w.done = nil, true
	return &server.ClaimRefused{Claim: *w.refused}
}

// end returns the connection to the pool, which closes it instead if it is
// still inside a transaction. The handler's transaction was closed to it
// (tx.end) before.
func (w *txWork) end() {
	if w.conn != nil { // nil once reconnect gave back a closed one
		w.conn.Release()
	}
	w.conn, w.done = nil, true
}
