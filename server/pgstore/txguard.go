package pgstore

// This file holds the guard of the work's transaction: one statement at a
// time on its connection, none once the work has ended, and the results
// (Rows, BatchResults) that hold it until they are read.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// errTxBusy is returned by a statement of the work's transaction while
// another statement, or results not yet read, hold its connection: it was
// used from two goroutines at once, or a statement was sent while the rows
// of another were still open. (pgx reports the second case as "conn
// busy"; two goroutines on one connection can crash the process.)
var errTxBusy = errors.New("pgstore: the work's transaction is busy: a statement's results are still being read (close its Rows or BatchResults first), or it is used from two goroutines at once")

// guard serialises the statements on the work's connection with each
// other and with the end of the work. A statement holds mu from its start
// until its results are read: Exec, CopyFrom and Prepare until they
// return, Query until its Rows close, SendBatch until its BatchResults
// close. The handler's statements only try mu, and fail at once if it is
// held (errTxBusy, or pgx.ErrTxClosed once the work ends): a handler that
// sends a statement while the rows of another are open gets an error, as
// with pgx, never a deadlock. The end of the work waits for mu, and then
// keeps it for good, so that no statement of the handler's (from a
// goroutine it left running) reaches the connection after, or while,
// idem commits or rolls back on it.
type guard struct {
	mu    sync.Mutex
	ended atomic.Bool // set by end before it waits for mu

	// open is the Rows or BatchResults holding mu, which end closes if
	// the handler left them open; ending tells a statement that gets its
	// results after end looked to close them itself. Both under omu.
	omu    sync.Mutex
	open   abandoner
	ending bool
}

// abandoner is results holding the guard, which end may close.
type abandoner interface{ abandon() }

// enter takes the guard for a statement.
func (g *guard) enter() error {
	if !g.mu.TryLock() {
		if g.ended.Load() {
			return pgx.ErrTxClosed
		}
		return errTxBusy
	}
	if g.ended.Load() {
		g.mu.Unlock()
		return pgx.ErrTxClosed
	}
	return nil
}

// hold records r as the results holding the guard, or reports false if
// the work is ending: the caller then closes r and leaves.
func (g *guard) hold(r abandoner) bool {
	g.omu.Lock()
	defer g.omu.Unlock()
	if g.ending {
		return false
	}
	g.open = r
	return true
}

// leave gives the guard back once a statement's results are read.
func (g *guard) leave() {
	g.omu.Lock()
	g.open = nil
	g.omu.Unlock()
	g.mu.Unlock()
}

// end closes the transaction to the handler: statements fail with
// pgx.ErrTxClosed from now on. It closes the results the handler left
// open, waits for a statement under way to finish, and keeps the guard:
// the caller has the connection to itself.
func (g *guard) end() {
	g.ended.Store(true)
	g.omu.Lock()
	g.ending = true
	open := g.open
	g.omu.Unlock()
	if open != nil {
		open.abandon()
	}
	g.mu.Lock()
}

// guardedRows are the Rows of a statement of the work's transaction.
// They hold the guard until they close (Close, or Next returning false),
// and their methods are serialised with end, which closes them if the
// handler leaves them open; after that Next returns false and Err
// pgx.ErrTxClosed.
type guardedRows struct {
	mu   sync.Mutex
	rows pgx.Rows
	g    *guard // nil once the guard is given back
	cut  bool   // closed by the end of the work
}

// newGuardedRows wraps rows, whose statement holds g. If the work is
// ending, it closes them and fails with pgx.ErrTxClosed.
func newGuardedRows(g *guard, rows pgx.Rows) (pgx.Rows, error) {
	r := &guardedRows{rows: rows, g: g}
	if !g.hold(r) {
		rows.Close()
		g.mu.Unlock()
		return errRows{pgx.ErrTxClosed}, pgx.ErrTxClosed
	}
	return r, nil
}

// closeLocked closes the rows and gives the guard back; r.mu is held.
func (r *guardedRows) closeLocked() {
	r.rows.Close()
	if r.g != nil {
		r.g.leave()
		r.g = nil
	}
}

func (r *guardedRows) abandon() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.g != nil {
		r.cut = true
		r.closeLocked()
	}
}

func (r *guardedRows) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked()
}

func (r *guardedRows) Next() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut {
		return false
	}
	if r.rows.Next() {
		return true
	}
	r.closeLocked() // pgx closed them; give the guard back
	return false
}

func (r *guardedRows) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.rows.Err(); err != nil || !r.cut {
		return err
	}
	return pgx.ErrTxClosed
}

func (r *guardedRows) Scan(dest ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut {
		return pgx.ErrTxClosed
	}
	return r.rows.Scan(dest...)
}

func (r *guardedRows) Values() ([]any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut {
		return nil, pgx.ErrTxClosed
	}
	return r.rows.Values()
}

func (r *guardedRows) RawValues() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut {
		return nil
	}
	return r.rows.RawValues()
}

func (r *guardedRows) CommandTag() pgconn.CommandTag {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rows.CommandTag()
}

func (r *guardedRows) FieldDescriptions() []pgconn.FieldDescription {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rows.FieldDescriptions()
}

func (r *guardedRows) Conn() *pgx.Conn { return r.rows.Conn() }

// guardedBatch is the BatchResults of SendBatch on the work's
// transaction: it holds the guard until it closes, and end closes it if
// the handler leaves it open. The Rows its Query returns are read under
// its lock.
type guardedBatch struct {
	mu  sync.Mutex
	br  pgx.BatchResults
	g   *guard // nil once the guard is given back
	cut bool
}

// newGuardedBatch wraps br, whose statements hold g.
func newGuardedBatch(g *guard, br pgx.BatchResults) pgx.BatchResults {
	b := &guardedBatch{br: br, g: g}
	if !g.hold(b) {
		_ = br.Close()
		g.mu.Unlock()
		return errBatch{pgx.ErrTxClosed}
	}
	return b
}

func (b *guardedBatch) closeLocked() error {
	err := b.br.Close()
	if b.g != nil {
		b.g.leave()
		b.g = nil
	}
	return err
}

func (b *guardedBatch) abandon() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.g != nil {
		b.cut = true
		_ = b.closeLocked()
	}
}

func (b *guardedBatch) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut {
		return pgx.ErrTxClosed
	}
	return b.closeLocked()
}

func (b *guardedBatch) Exec() (pgconn.CommandTag, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return b.br.Exec()
}

func (b *guardedBatch) Query() (pgx.Rows, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut {
		return errRows{pgx.ErrTxClosed}, pgx.ErrTxClosed
	}
	rows, err := b.br.Query()
	return &batchRows{b: b, rows: rows}, err
}

func (b *guardedBatch) QueryRow() pgx.Row {
	rows, _ := b.Query()
	return rowOf{rows}
}

// batchRows are the Rows of one statement of a guardedBatch, read under
// the batch's lock.
type batchRows struct {
	b    *guardedBatch
	rows pgx.Rows
}

func (r *batchRows) Close() {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	r.rows.Close()
}

func (r *batchRows) Next() bool {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return !r.b.cut && r.rows.Next()
}

func (r *batchRows) Err() error {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if err := r.rows.Err(); err != nil || !r.b.cut {
		return err
	}
	return pgx.ErrTxClosed
}

func (r *batchRows) Scan(dest ...any) error {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.b.cut {
		return pgx.ErrTxClosed
	}
	return r.rows.Scan(dest...)
}

func (r *batchRows) Values() ([]any, error) {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.b.cut {
		return nil, pgx.ErrTxClosed
	}
	return r.rows.Values()
}

func (r *batchRows) RawValues() [][]byte {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.b.cut {
		return nil
	}
	return r.rows.RawValues()
}

func (r *batchRows) CommandTag() pgconn.CommandTag {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.rows.CommandTag()
}

func (r *batchRows) FieldDescriptions() []pgconn.FieldDescription {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.rows.FieldDescriptions()
}

func (r *batchRows) Conn() *pgx.Conn { return r.rows.Conn() }

// rowOf is the Row of QueryRow: the first row of rows, scanned as pgx's
// own QueryRow scans it.
type rowOf struct{ rows pgx.Rows }

func (r rowOf) Scan(dest ...any) error {
	rows := r.rows
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	for _, d := range dest {
		if _, ok := d.(*pgtype.DriverBytes); ok {
			rows.Close()
			return fmt.Errorf("cannot scan into *pgtype.DriverBytes from QueryRow")
		}
	}
	if !rows.Next() {
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	_ = rows.Scan(dest...) // its error, if any, is rows.Err()
	rows.Close()
	return rows.Err()
}
