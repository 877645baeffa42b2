package pgstore

// This file holds the work's transaction as the handler sees it: Tx, the
// guarded pgx.Tx it returns, its savepoints, and the stand-in returned when
// there is no transaction.

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// txKey is the context key under which ClaimWork and BeginWork store the
// work's transaction.
type txKey struct{}

// ErrNoTx is returned by every statement of the transaction [Tx] returns
// when the context carries none.
var ErrNoTx = errors.New("pgstore: no transaction in this context: the Store is not in transactional mode (Options.Transactional), or the context does not come from the request the middleware ran")

// DBTX is the work's transaction as the handler sees it: its statements
// (Exec, Query and QueryRow, what sqlc's generated code asks for, with
// batches, COPY and prepared statements), its large objects, and
// savepoints, but neither its end nor its connection: idem commits it with
// the stored response, or rolls it back. It is what [Tx] returns.
//
// Begin opens a savepoint, a pgx.Tx whose Commit releases it and whose
// Rollback rolls back to it; its statements go through the work's
// transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error)
	LargeObjects() pgx.LargeObjects
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Tx returns the transaction of the work running under ctx, and true, when
// the Store is in transactional mode and ctx descends from the context
// ClaimWork or BeginWork returned (in the middleware: the request's
// context). Writes made through it commit together with the stored
// response, or not at all.
//
// Without one, Tx returns false and a transaction whose every statement
// fails with [ErrNoTx] (its LargeObjects unusable), so
// that a handler that ignores the boolean gets a clear error rather than
// a nil pointer. A handler that may run without a key (Optional routes)
// tests the boolean and uses its pool instead.
//
// The transaction belongs to idem: [DBTX] has no Commit or Rollback, and
// no connection to reach past it; savepoints (Begin on it) are fine. Once the work has ended its
// statements fail with [pgx.ErrTxClosed]. It must not be used after the
// handler returns, nor from two goroutines at once: a statement sent
// while another runs, or while the Rows or BatchResults of another are
// open, fails with an error (pgx's "conn busy", in effect), and idem ends
// the work only once a statement under way has finished, closing the
// Rows and BatchResults left open, so that a goroutine the handler left
// running cannot break the connection under the commit. Statements
// through its LargeObjects (and a savepoint's Conn) are not guarded.
func Tx(ctx context.Context) (DBTX, bool) {
	if tx, ok := ctx.Value(txKey{}).(*workTx); ok {
		return tx, true
	}
	return noTx{}, false
}

// workTx is the work's transaction as the handler sees it: every statement
// pgx.Tx offers, but not its end, and nothing once the work has ended.
// After that its statements fail with pgx.ErrTxClosed, as pgx's own would,
// rather than run on a connection back in the pool (in autocommit, or in
// another request's transaction): a goroutine the handler left running
// cannot write outside its work through it. Its statements run one at a
// time under a guard that the end of the work waits for and then keeps
// (see guard): such a goroutine's statement never runs while idem commits
// or rolls back on the connection, which pgx does not survive.
// LargeObjects, and a savepoint's Conn, reach past the guard to the
// connection, and must not be used once the handler has returned.
//
// workTx implements each method of DBTX itself, delegating to the
// connection, rather than embedding an interface: nothing reaches the
// connection without the guard by accident.
type workTx struct {
	conn *pgx.Conn
	g    guard
	// w is the work, when its claim is sent with the first statement
	// (Options.PipelineClaim); nil otherwise.
	w *txWork

	// savepoints numbers the savepoints of Begin; lo is the transaction
	// behind LargeObjects, opened on first use. Both are used only from
	// the handler's goroutine.
	savepoints int64
	lo         pgx.Tx
}

var (
	_ DBTX   = (*workTx)(nil)
	_ pgx.Tx = (*savepointTx)(nil)
	_ DBTX   = noTx{}
)

// end closes the transaction to the handler, waiting for a statement of
// its under way, and gives the connection to the caller alone. It is
// called before idem ends the transaction, and before the connection can
// serve anyone else.
func (t *workTx) end() { t.g.end() }

// Begin opens a savepoint: a pseudo nested transaction, as pgx's own.
func (t *workTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.g.enter(); err != nil {
		return nil, err
	}
	defer t.g.mu.Unlock()
	if err := t.claimFirst(ctx); err != nil {
		return nil, err
	}
	t.savepoints++
	name := "idem_sp_" + strconv.FormatInt(t.savepoints, 10)
	if _, err := t.conn.Exec(ctx, "SAVEPOINT "+name); err != nil {
		return nil, err
	}
	return &savepointTx{tx: t, name: name}, nil
}

func (t *workTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.g.enter(); err != nil {
		return pgconn.CommandTag{}, err
	}
	defer t.g.mu.Unlock()
	switch deferred, err := t.deferred(); {
	case err != nil:
		return pgconn.CommandTag{}, err
	case deferred && batchable(args):
		b := t.w.claimBatch()
		b.Queue(sql, args...)
		br, err := t.w.sendClaim(ctx, b)
		if err != nil {
			return pgconn.CommandTag{}, err
		}
		tag, err := br.Exec()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return tag, err
	case deferred:
		if err := t.w.claim(ctx); err != nil {
			return pgconn.CommandTag{}, err
		}
	}
	return t.conn.Exec(ctx, sql, args...)
}

// claimFirst sends the work's claim alone if it is still to be sent, for
// a statement that does not carry it.
func (t *workTx) claimFirst(ctx context.Context) error {
	deferred, err := t.deferred()
	if deferred {
		err = t.w.claim(ctx)
	}
	return err
}

// Query holds the guard until the rows close: close them (or read them to
// the end) before the next statement, as pgx requires.
func (t *workTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.g.enter(); err != nil {
		return errRows{err}, err
	}
	var rows pgx.Rows
	switch deferred, err := t.deferred(); {
	case err != nil:
		t.g.mu.Unlock()
		return errRows{err}, err
	case deferred && (len(args) == 0 || batchable(args)):
		// (A query without arguments goes in the extended protocol
		// alone too: a batch sends it as it would be.)
		b := t.w.claimBatch()
		b.Queue(sql, args...)
		br, err := t.w.sendClaim(ctx, b)
		if err != nil {
			t.g.mu.Unlock()
			return errRows{err}, err
		}
		rows, err = br.Query()
		if err != nil {
			rows.Close()
			_ = br.Close()
			t.g.mu.Unlock()
			return rows, err
		}
		rows = &claimedRows{Rows: rows, br: br}
	case deferred:
		if err := t.w.claim(ctx); err != nil {
			t.g.mu.Unlock()
			return errRows{err}, err
		}
	}
	if rows == nil {
		var err error
		rows, err = t.conn.Query(ctx, sql, args...)
		if err != nil { // pgx closed the rows
			t.g.mu.Unlock()
			return rows, err
		}
	}
	return newGuardedRows(&t.g, rows)
}

func (t *workTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := t.Query(ctx, sql, args...)
	return rowOf{rows}
}

// SendBatch holds the guard until the BatchResults close.
func (t *workTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.g.enter(); err != nil {
		return errBatch{err}
	}
	switch deferred, err := t.deferred(); {
	case err != nil:
		t.g.mu.Unlock()
		return errBatch{err}
	case deferred:
		cb := t.w.claimBatch()
		cb.QueuedQueries = append(cb.QueuedQueries, b.QueuedQueries...)
		br, err := t.w.sendClaim(ctx, cb)
		if err != nil {
			t.g.mu.Unlock()
			return errBatch{err}
		}
		return newGuardedBatch(&t.g, br)
	}
	return newGuardedBatch(&t.g, t.conn.SendBatch(ctx, b))
}

func (t *workTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.g.enter(); err != nil {
		return 0, err
	}
	defer t.g.mu.Unlock()
	if err := t.claimFirst(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, columns, src)
}

func (t *workTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.g.enter(); err != nil {
		return nil, err
	}
	defer t.g.mu.Unlock()
	return t.conn.Prepare(ctx, name, sql)
}

// LargeObjects returns the large objects of a savepoint opened through
// pgx on first use (one round trip, once; the savepoint stays open until
// the work ends, and commits or rolls back with it). pgx builds
// LargeObjects only for its own transactions, so their statements reach
// the connection past the guard: use them from the handler's goroutine
// only. If the savepoint cannot be opened the connection is broken (or
// busy, or the work ended): LargeObjects panics with the error, the
// middleware answers 500, and the work rolls back.
func (t *workTx) LargeObjects() pgx.LargeObjects {
	if t.lo == nil {
		if err := t.g.enter(); err != nil {
			panic(err)
		}
		if err := t.claimFirst(context.Background()); err != nil {
			t.g.mu.Unlock()
			panic(err)
		}
		lo, err := t.conn.BeginTx(context.Background(), pgx.TxOptions{BeginQuery: "SAVEPOINT idem_large_objects"})
		t.g.mu.Unlock()
		if err != nil {
			panic(err)
		}
		t.lo = lo
	}
	return t.lo.LargeObjects()
}

// savepointTx is a savepoint of the work's transaction. Commit releases it
// and Rollback rolls back to it, as pgx's pseudo nested transactions do;
// its statements go through the work's transaction and its guard.
type savepointTx struct {
	tx     *workTx
	name   string
	closed bool
}

func (sp *savepointTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.tx.Begin(ctx)
}

func (sp *savepointTx) Commit(ctx context.Context) error {
	if sp.closed {
		return pgx.ErrTxClosed
	}
	_, err := sp.tx.Exec(ctx, "RELEASE SAVEPOINT "+sp.name)
	sp.closed = true
	return err
}

func (sp *savepointTx) Rollback(ctx context.Context) error {
	if sp.closed {
		return pgx.ErrTxClosed
	}
	_, err := sp.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+sp.name)
	sp.closed = true
	return err
}

func (sp *savepointTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if sp.closed {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return sp.tx.Exec(ctx, sql, args...)
}

func (sp *savepointTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if sp.closed {
		return errRows{pgx.ErrTxClosed}, pgx.ErrTxClosed
	}
	return sp.tx.Query(ctx, sql, args...)
}

func (sp *savepointTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if sp.closed {
		return errRow{pgx.ErrTxClosed}
	}
	return sp.tx.QueryRow(ctx, sql, args...)
}

func (sp *savepointTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if sp.closed {
		return errBatch{pgx.ErrTxClosed}
	}
	return sp.tx.SendBatch(ctx, b)
}

func (sp *savepointTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if sp.closed {
		return 0, pgx.ErrTxClosed
	}
	return sp.tx.CopyFrom(ctx, table, columns, src)
}

func (sp *savepointTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.tx.Prepare(ctx, name, sql)
}

func (sp *savepointTx) LargeObjects() pgx.LargeObjects { return sp.tx.LargeObjects() }
func (sp *savepointTx) Conn() *pgx.Conn                { return sp.tx.conn }

// noTx is the transaction Tx returns when the context carries none: every
// statement fails with ErrNoTx.
type noTx struct{}

func (noTx) Begin(context.Context) (pgx.Tx, error) { return nil, ErrNoTx }
func (noTx) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, ErrNoTx
}
func (noTx) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return errRows{ErrNoTx}, ErrNoTx
}
func (noTx) QueryRow(context.Context, string, ...any) pgx.Row       { return errRow{ErrNoTx} }
func (noTx) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults { return errBatch{ErrNoTx} }
func (noTx) Prepare(context.Context, string, string) (*pgconn.StatementDescription, error) {
	return nil, ErrNoTx
}
func (noTx) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, ErrNoTx
}
func (noTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// errRow, errRows and errBatch answer every use with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type errRows struct{ err error }

func (errRows) Close()                                       {}
func (r errRows) Err() error                                 { return r.err }
func (errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (errRows) Next() bool                                   { return false }
func (r errRows) Scan(...any) error                          { return r.err }
func (r errRows) Values() ([]any, error)                     { return nil, r.err }
func (errRows) RawValues() [][]byte                          { return nil }
func (errRows) Conn() *pgx.Conn                              { return nil }

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return errRows(b), b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
