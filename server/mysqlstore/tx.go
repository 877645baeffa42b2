package mysqlstore

// This file holds the work's transaction as the handler sees it: Tx, the
// narrow DBTX it returns, the guard that closes it when the work ends, and
// the stand-in returned when there is no transaction.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
)

// DBTX is what a handler runs its statements with in the work's
// transaction: the methods sqlc's generated code for database/sql asks of
// its DBTX, which *sql.DB, *sql.Conn and *sql.Tx also have. It has no
// Commit or Rollback: the transaction belongs to idem, which commits it
// with the stored response, or rolls it back.
type DBTX interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// txKey is the context key under which ClaimWork and BeginWork store the
// work's transaction.
type txKey struct{}

// ErrNoTx is returned by every statement of the DBTX [Tx] returns when the
// context carries no transaction.
var ErrNoTx = errors.New("mysqlstore: no transaction in this context: the Store is not in transactional mode (Options.Transactional), or the context does not come from the request the middleware ran")

// ErrTxControl is returned, without running it, by a statement of the
// work's transaction that would end it or leave it (COMMIT, ROLLBACK but
// ROLLBACK TO SAVEPOINT, BEGIN, START TRANSACTION, XA, LOCK TABLES,
// UNLOCK TABLES): idem commits the work with its stored response, or
// rolls it back.
var ErrTxControl = errors.New("mysqlstore: the work's transaction is committed or rolled back by idem, not by the handler")

// Tx returns the transaction of the work running under ctx, and true, when
// the Store is in transactional mode and ctx descends from the context
// ClaimWork or BeginWork returned (in the middleware: the request's
// context). Statements run through it commit together with the stored
// response, or not at all.
//
// Without one, Tx returns false and a DBTX whose every statement fails
// with [ErrNoTx] (a Row's Scan too), so that a handler that ignores the
// boolean gets a clear error rather than a nil pointer. A handler that may
// run without a key (Optional routes) tests the boolean and uses its
// *sql.DB instead.
//
// The transaction belongs to idem: statements that would commit, roll
// back or leave it fail with [ErrTxControl]; SAVEPOINT and ROLLBACK TO
// SAVEPOINT are fine. A statement that commits implicitly (DDL such as
// CREATE TABLE or ALTER TABLE) is not caught: it would commit the work's
// writes before the response is stored, so do not run one. Once the work
// has ended, statements fail with [sql.ErrTxDone], and any Rows or Stmts
// the handler left open are closed. Use it from one goroutine at a time, and
// read or close each Rows, and Scan each Row, before the next statement,
// as on any MySQL connection: a statement sent while another's results
// are unread fails, and breaks the connection, which rolls the work back.
func Tx(ctx context.Context) (DBTX, bool) {
	if tx, ok := ctx.Value(txKey{}).(*workTx); ok {
		return tx, true
	}
	return noTx{}, false
}

// workTx is the work's transaction as the handler sees it: its statements
// on the work's connection, until the work ends.
type workTx struct {
	conn *sql.Conn

	// mu is held for reading by each statement while it is sent, and for
	// writing by end, which sets ended under it: a statement that began
	// before end has been sent before end returns, and none is sent after.
	mu    sync.RWMutex
	ended bool

	// open are the Rows and Stmts handed out, which end closes; under
	// openMu.
	openMu sync.Mutex
	open   []interface{ Close() error }
}

var _ DBTX = (*workTx)(nil)

// enter takes the guard for a statement, or fails once the work ended.
func (t *workTx) enter() error {
	t.mu.RLock()
	if t.ended {
		t.mu.RUnlock()
		return sql.ErrTxDone
	}
	return nil
}

// end closes the transaction to the handler: it waits for a statement
// being sent, closes the Rows left open (database/sql lets Close run
// beside a Next in another goroutine), and from then on every statement
// fails. It is called before idem ends the transaction.
func (t *workTx) end() {
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
	t.openMu.Lock()
	open := t.open
	t.open = nil
	t.openMu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

// keep records c for end to close.
func (t *workTx) keep(c interface{ Close() error }) {
	t.openMu.Lock()
	t.open = append(t.open, c)
	t.openMu.Unlock()
}

func (t *workTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if txControl(query) {
		return nil, ErrTxControl
	}
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.mu.RUnlock()
	return t.conn.ExecContext(ctx, query, args...)
}

func (t *workTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if txControl(query) {
		return nil, ErrTxControl
	}
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.mu.RUnlock()
	stmt, err := t.conn.PrepareContext(ctx, query)
	if err == nil {
		t.keep(stmt)
	}
	return stmt, err
}

func (t *workTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if txControl(query) {
		return nil, ErrTxControl
	}
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.mu.RUnlock()
	rows, err := t.conn.QueryContext(ctx, query, args...)
	if err == nil {
		t.keep(rows)
	}
	return rows, err
}

// QueryRowContext's Row holds the connection until Scan.
func (t *workTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if txControl(query) {
		return errRow(ErrTxControl)
	}
	if err := t.enter(); err != nil {
		return errRow(err)
	}
	defer t.mu.RUnlock()
	return t.conn.QueryRowContext(ctx, query, args...)
}

// noTx is the DBTX Tx returns when the context carries none.
type noTx struct{}

func (noTx) ExecContext(context.Context, string, ...any) (sql.Result, error) { return nil, ErrNoTx }
func (noTx) PrepareContext(context.Context, string) (*sql.Stmt, error)       { return nil, ErrNoTx }
func (noTx) QueryContext(context.Context, string, ...any) (*sql.Rows, error) {
	return nil, ErrNoTx
}
func (noTx) QueryRowContext(context.Context, string, ...any) *sql.Row { return errRow(ErrNoTx) }

// errRow returns a *sql.Row whose Scan returns err. database/sql has no
// constructor for one, so it comes from a *sql.DB whose connector always
// fails with err: it never dials, and holds no connection.
func errRow(err error) *sql.Row {
	return failing(err).QueryRowContext(context.Background(), "")
}

var (
	failingMu  sync.Mutex
	failingDBs = map[error]*sql.DB{}
)

// failing returns the *sql.DB whose connections fail with err, one per
// error, made on first use.
func failing(err error) *sql.DB {
	failingMu.Lock()
	defer failingMu.Unlock()
	db, ok := failingDBs[err]
	if !ok {
		db = sql.OpenDB(failConnector{err})
		failingDBs[err] = db
	}
	return db
}

// failConnector is a driver.Connector whose Connect fails with err.
type failConnector struct{ err error }

func (c failConnector) Connect(context.Context) (driver.Conn, error) { return nil, c.err }
func (c failConnector) Driver() driver.Driver                        { return failDriver(c) }

type failDriver failConnector

func (d failDriver) Open(string) (driver.Conn, error) { return nil, d.err }

// txControl reports whether query's first keyword ends or leaves the
// transaction: COMMIT, ROLLBACK (but not ROLLBACK [WORK] TO), BEGIN,
// START, XA, LOCK, UNLOCK. Comments and white space before it are passed
// over.
func txControl(query string) bool {
	words := leadingWords(query, 3)
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "COMMIT", "BEGIN", "START", "XA", "LOCK", "UNLOCK":
		return true
	case "ROLLBACK":
		rest := words[1:]
		if len(rest) > 0 && rest[0] == "WORK" {
			rest = rest[1:]
		}
		return len(rest) == 0 || rest[0] != "TO"
	}
	return false
}

// leadingWords returns up to n leading words of query, upper-cased, past
// white space and comments (/* */, -- and #).
func leadingWords(query string, n int) []string {
	var words []string
	s := query
	for len(words) < n {
		s = strings.TrimLeft(s, " \t\r\n\f\v")
		switch {
		case s == "":
			return words
		case strings.HasPrefix(s, "/*"):
			end := strings.Index(s[2:], "*/")
			if end < 0 {
				return words
			}
			s = s[2+end+2:]
			continue
		case strings.HasPrefix(s, "#"), strings.HasPrefix(s, "--"):
			end := strings.IndexByte(s, '\n')
			if end < 0 {
				return words
			}
			s = s[end+1:]
			continue
		}
		i := 0
		for i < len(s) && isWordByte(s[i]) {
			i++
		}
		if i == 0 {
			return words
		}
		words = append(words, strings.ToUpper(s[:i]))
		s = s[i:]
	}
	return words
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
