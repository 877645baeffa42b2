package mysqlstore

// This file holds the work's transaction in transactional mode: BeginWork,
// which begins it under a lease, and the Work that ends it, for BeginWork
// and ClaimWork alike.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"time"

	"github.com/idemhq/idem/server"
)

// BeginWork implements [server.Transactor].
//
// Without Options.Transactional it returns ctx unchanged and a nil Work:
// the work runs outside the database and its outcome is stored with
// [Store.Complete].
//
// In transactional mode it takes a connection from the pool and begins a
// READ COMMITTED transaction on it (two round trips: SET TRANSACTION, then
// START TRANSACTION); the returned context carries the transaction for
// [Tx]. READ COMMITTED whatever the session's default: renewals update the
// key's row while the work runs, and under MariaDB's
// innodb_snapshot_isolation a REPEATABLE READ transaction could not then
// write the fenced completion. The connection stays out of the pool until
// the Work's Commit or Rollback, one of which must be called. Commit
// stores the outcome fenced by token (see [Store.Complete]) and commits.
func (s *Store) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	if !s.opts.Transactional {
		return ctx, nil, nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return ctx, nil, translate(ctx, "begin work", err)
	}
	for _, stmt := range []string{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "START TRANSACTION"} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			discard(conn)
			return ctx, nil, translate(ctx, "begin work", err)
		}
	}
	w := &txWork{s: s, id: keyID(k.Scope, k.Key), token: token, conn: conn, tx: &workTx{conn: conn}}
	return context.WithValue(ctx, txKey{}, w.tx), w, nil
}

// txWork is the Work of a transactional Store, begun by BeginWork (under a
// lease: token is set) or by ClaimWork (under the connection's named lock:
// locked is set). It is not safe for concurrent use; the middleware calls
// it from the request's goroutine.
type txWork struct {
	s  *Store
	id [32]byte

	// BeginWork's lease token.
	token string

	// ClaimWork's claim: the key as stored, the request's fingerprint,
	// when the key was read (microseconds, the database's clock), and the
	// token of the row the lookup found replaceable, if any.
	locked      bool
	k           keyText
	fingerprint string
	claimedAt   int64
	seen        *string

	conn *sql.Conn
	tx   *workTx // the handler's view of the transaction
	done bool
}

// errWorkEnded is returned by a Commit after the Work ended.
var errWorkEnded = errors.New("mysqlstore: commit: work already ended")

// Commit stores resp and commits the transaction. Under a lease the store
// statement is the fenced completion; under ClaimWork's lock it inserts
// the record (after deleting, fenced by its token, the expired row the
// claim replaces), fenced by the primary key. If the fence fails, the
// transaction is rolled back and Commit returns server.ErrLeaseLost: the
// lease was taken over, or (under the lock) a record for the key committed
// meanwhile through a path that takes no lock. After ClaimWork the key's
// lock is given back once the COMMIT returns, in the background.
//
// An outcome over Options.MaxResponse is not stored: the work rolls back
// and Commit returns an error wrapping server.ErrResponseTooLarge. If the
// handler left the transaction unusable (its statements broke the
// connection), the work rolls back with the connection and Commit returns
// an error that is not ErrLeaseLost. If the COMMIT itself fails, the
// connection is closed (which rolls back whatever did not commit) and the
// error returned: a retry of the key finds out whether it committed.
func (w *txWork) Commit(ctx context.Context, resp server.StoredResponse, retention time.Duration) error {
	if w.done {
		return errWorkEnded
	}
	w.tx.end() // waits for a statement of the handler's being sent
	header := encodeHeader(resp.Header)
	if err := w.s.fits(header, resp.Body); err != nil {
		w.rollback(ctx)
		return err
	}
	if err := w.store(ctx, resp, header, retention); err != nil {
		w.rollback(ctx)
		return err
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		w.done = true
		discard(w.conn)
		return translate(ctx, "commit", err)
	}
	w.finish()
	return nil
}

// store runs the statements that record resp in the transaction.
func (w *txWork) store(ctx context.Context, resp server.StoredResponse, header []byte, retention time.Duration) error {
	if !w.locked {
		res, err := w.conn.ExecContext(ctx, w.s.q.complete(w.id[:], w.token, resp.Status, header, resp.Body, retention))
		if err != nil {
			return translate(ctx, "commit", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return server.ErrLeaseLost
		}
		return nil
	}
	if w.seen != nil {
		if _, err := w.conn.ExecContext(ctx, w.s.q.clearSeen(w.id[:], w.fingerprint, *w.seen)); err != nil {
			return translate(ctx, "commit", err)
		}
	}
	_, err := w.conn.ExecContext(ctx, w.s.q.insertCompleted(w.id[:], w.k, w.fingerprint, rand.Text(),
		resp.Status, header, resp.Body, w.claimedAt, retention))
	if isCode(err, errDupEntry) {
		return server.ErrLeaseLost
	}
	return translate(ctx, "commit", err)
}

// Rollback discards the work's writes and returns its connection to the
// pool; under ClaimWork's lock it gives the lock back before it returns,
// which frees the key. If the ROLLBACK or the release fails, the
// connection is closed instead, which does both on the server. It does
// nothing once the work has ended, so it is safe to defer.
func (w *txWork) Rollback(ctx context.Context) error {
	if w.done {
		return nil
	}
	w.tx.end()
	w.rollback(ctx)
	return nil
}

// rollback rolls the transaction back and ends the work.
func (w *txWork) rollback(ctx context.Context) {
	w.done = true
	if _, err := w.conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		discard(w.conn)
		return
	}
	if w.locked {
		w.s.releaseLock(w.conn, w.id)
		return
	}
	_ = w.conn.Close()
}

// finish ends a committed work: the lock, if any, is given back in the
// background with the connection.
func (w *txWork) finish() {
	w.done = true
	if w.locked {
		w.s.giveBack(w.conn, w.id)
		return
	}
	_ = w.conn.Close()
}
