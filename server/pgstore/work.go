package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
)

// txKey is the context key under which BeginWork stores the work's
// transaction.
type txKey struct{}

// Tx returns the transaction of the work running under ctx, and true, when
// the Store is in transactional mode and ctx descends from the context
// BeginWork returned (in the middleware: the request's context). Writes made
// through it commit together with the stored response, or not at all.
//
// The transaction belongs to idem: the handler must not commit or roll it
// back. Its Commit and Rollback methods return an error and change nothing;
// savepoints (Begin on it) are fine. It must not be used after the handler
// returns, nor from two goroutines at once.
func Tx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok
}

// errOwnedTx is returned by Commit and Rollback of the transaction Tx hands
// out.
var errOwnedTx = errors.New("pgstore: the work's transaction is committed or rolled back by idem, not by the handler")

// ownedTx is the work's transaction as the handler sees it: everything but
// ending it, until the work ends. After that its statements fail with
// pgx.ErrTxClosed, as pgx's own would, rather than run on a connection
// back in the pool (in autocommit, or in another request's transaction):
// a goroutine the handler left running cannot write outside its work
// through it. Conn and LargeObjects reach past it to the connection, and
// must not be used once the handler has returned.
type ownedTx struct {
	pgx.Tx
	ended atomic.Bool
}

func (*ownedTx) Commit(context.Context) error   { return errOwnedTx }
func (*ownedTx) Rollback(context.Context) error { return errOwnedTx }

func (t *ownedTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if t.ended.Load() {
		return nil, pgx.ErrTxClosed
	}
	return t.Tx.Begin(ctx)
}

func (t *ownedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.ended.Load() {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *ownedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.ended.Load() {
		return nil, pgx.ErrTxClosed
	}
	return t.Tx.Query(ctx, sql, args...)
}

func (t *ownedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.ended.Load() {
		return errRow{}
	}
	return t.Tx.QueryRow(ctx, sql, args...)
}

func (t *ownedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.ended.Load() {
		return errBatch{}
	}
	return t.Tx.SendBatch(ctx, b)
}

func (t *ownedTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if t.ended.Load() {
		return 0, pgx.ErrTxClosed
	}
	return t.Tx.CopyFrom(ctx, table, columns, src)
}

func (t *ownedTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if t.ended.Load() {
		return nil, pgx.ErrTxClosed
	}
	return t.Tx.Prepare(ctx, name, sql)
}

// errRow and errBatch answer every use with pgx.ErrTxClosed.
type errRow struct{}

func (errRow) Scan(...any) error { return pgx.ErrTxClosed }

type errBatch struct{}

func (errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, pgx.ErrTxClosed }
func (errBatch) Query() (pgx.Rows, error)         { return nil, pgx.ErrTxClosed }
func (errBatch) QueryRow() pgx.Row                { return errRow{} }
func (errBatch) Close() error                     { return pgx.ErrTxClosed }

// BeginWork implements [server.Transactor].
//
// Without Options.Transactional it returns ctx unchanged and a nil Work:
// the work runs outside the database and its outcome is stored with
// [Store.Complete].
//
// In transactional mode it takes a connection from the pool and begins a
// transaction on it (one round trip); the returned context carries the
// transaction for [Tx]. The connection stays out of the pool until the
// Work's Commit or Rollback, one of which must be called.
func (s *Store) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	if !s.opts.Transactional {
		return ctx, nil, nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return ctx, nil, translate(ctx, "begin work", err)
	}
	tx, err := conn.BeginTx(ctx, s.opts.TxOptions)
	if err != nil {
		conn.Release()
		return ctx, nil, translate(ctx, "begin work", err)
	}
	w := &txWork{s: s, k: k, token: token, conn: conn, tx: tx, owned: &ownedTx{Tx: tx}}
	return context.WithValue(ctx, txKey{}, pgx.Tx(w.owned)), w, nil
}

// txWork is the Work of a transactional Store. It is not safe for
// concurrent use; the middleware calls it from the request's goroutine.
type txWork struct {
	s     *Store
	k     server.Key
	token string
	conn  *pgxpool.Conn // nil once the work has ended
	tx    pgx.Tx
	owned *ownedTx // the handler's view of tx
}

// Commit stores resp fenced by the lease token and commits the transaction,
// both in one round trip: the fenced UPDATE and COMMIT are pipelined in one
// batch. If the fence fails the UPDATE raises an error, PostgreSQL skips the
// COMMIT, and the transaction is rolled back (a second round trip, on that
// path only); Commit then returns server.ErrLeaseLost.
//
// If the handler left the transaction failed (a statement errored and was
// not rolled back to a savepoint), Commit rolls back and returns an error
// that is not ErrLeaseLost; the caller then releases the key.
func (w *txWork) Commit(ctx context.Context, resp server.Response, retention time.Duration) error {
	if w.conn == nil {
		return errors.New("pgstore: commit: work already ended")
	}
	defer w.end()
	switch st := w.conn.Conn().PgConn().TxStatus(); st {
	case 'T':
	case 'E':
		w.rollback(ctx)
		return errors.New("pgstore: commit: the work's transaction failed and was rolled back")
	default:
		// The handler committed or rolled back on the raw connection; its
		// writes are beyond our reach.
		return fmt.Errorf("pgstore: commit: the work's transaction was ended by the handler (status %q)", st)
	}
	b := &pgx.Batch{}
	b.Queue(w.s.q.commit, completeArgs(w.k, w.token, resp, retention)...)
	b.Queue("COMMIT")
	br := w.conn.SendBatch(ctx, b)
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
		if errors.As(fenceErr, &pgErr) && pgErr.Code == "22012" { // division_by_zero: the fence
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
// pool. It does nothing once the work has ended, so it is safe to defer.
func (w *txWork) Rollback(ctx context.Context) error {
	if w.conn == nil {
		return nil
	}
	defer w.end()
	if w.conn.Conn().PgConn().TxStatus() == 'I' || w.conn.Conn().IsClosed() {
		return nil // nothing to roll back, or the server did when the connection closed
	}
	if _, err := w.conn.Exec(ctx, "ROLLBACK"); err != nil {
		if w.conn.Conn().IsClosed() {
			return nil // closed under it (a cancelled query): rolled back all the same
		}
		return translate(ctx, "rollback", err)
	}
	return nil
}

// rollback ends a transaction that will not commit. A failure leaves the
// connection in a transaction; end then destroys it instead of pooling it,
// which rolls the transaction back on the server.
func (w *txWork) rollback(ctx context.Context) {
	if w.conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = w.conn.Exec(ctx, "ROLLBACK")
	}
}

// end returns the connection to the pool, which closes it instead if it is
// still inside a transaction.
func (w *txWork) end() {
	w.owned.ended.Store(true) // before the connection can serve anyone else
	w.conn.Release()
	w.conn = nil
}
