package pgstore

// This file holds the pipelined claim (Options.PipelineClaim): ClaimWork
// answers at once, and the key's claim is sent in one round trip with the
// handler's first statement, which runs only if the claim holds.

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
)

// ErrNotClaimed is returned by the statements of a work whose claim, sent
// with its first statement (Options.PipelineClaim), was refused: another
// request holds the key, or its outcome is recorded. None of the work's
// statements ran, and none will: each fails with ErrNotClaimed. The
// handler should return at once; whatever it answers, the middleware
// answers the request as its claim (409, or a replay of the recorded
// outcome, or 422 for another body).
var ErrNotClaimed = errors.New("pgstore: the key was not claimed: another request holds it, or its outcome is recorded; the middleware answers this request as its claim")

// deferClaim returns the Work of a claim of k for a request with
// fingerprint fp that is sent with the work's first statement, on conn,
// or nil if this claim cannot be deferred: the table's OID is not known
// yet (the Store's first claim learns it), or the lock's key must be
// computed in SQL (see lockAndLookup).
func (s *Store) deferClaim(conn *pgxpool.Conn, k server.Key, fp string) *txWork {
	oid := s.tableOID.Load()
	if oid == 0 {
		return nil
	}
	if (!isASCII(k.Scope) || !isASCII(k.Key)) && conn.Conn().PgConn().ParameterStatus("server_encoding") != "UTF8" {
		return nil
	}
	w := &txWork{s: s, k: k, lock: &lockedWork{fingerprint: fp}, conn: conn, pending: oid}
	w.tx = &workTx{conn: conn.Conn(), w: w}
	return w
}

// claimBatch returns a batch that begins the work's transaction and
// claims its key: BEGIN; the lock statement, which raises unless it takes
// the key's lock; the guard, which raises unless the key's record is
// absent or may be replaced; and seen, which returns the token of one
// that may. The caller queues its statements after them: PostgreSQL runs
// a pipeline's statements in order and, after an error, skips every
// statement up to the batch's end (and the failed transaction would
// refuse them anyway), so that they run only if the claim holds, and
// inside its transaction.
func (w *txWork) claimBatch() *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(w.s.q.begin)
	b.Queue(w.s.q.lockOrRefuse, lockKeyOf(w.pending, w.k), w.pending)
	b.Queue(w.s.q.guard, w.k.Scope, w.k.Key, w.lock.fingerprint)
	b.Queue(w.s.q.seen, w.k.Scope, w.k.Key)
	return b
}

// sendClaim sends b, made by claimBatch with the caller's statements
// queued after the claim's, and reads the claim's results: the caller
// reads its own from the returned results, and closes them. If the claim
// is refused, it learns what the key holds (see refuse), closes the
// results and returns ErrNotClaimed. Any other error is returned as it
// is, the results closed; if nothing of b ran (pgx prepares a batch's
// statements before it runs any, and one failed to prepare), the claim
// stays to be sent.
func (w *txWork) sendClaim(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	br := w.conn.Conn().SendBatch(ctx, b)
	err := w.readClaim(br)
	if err == nil {
		w.pending = 0
		return br, nil
	}
	var pgErr *pgconn.PgError
	refused := errors.As(err, &pgErr) && pgErr.Code == claimRefused
	if refused {
		// pgx drops from its statement cache every statement of a batch
		// that failed, in case one was stale, and prepares them again on
		// their next use: two round trips more, each time a repeat is
		// refused. This failure is the claim's own, and the statements
		// are sound: the batch, whose statements pgx reads through its
		// results, lists none by the time they close.
		b.QueuedQueries = nil
	}
	_ = br.Close()
	switch c := w.conn.Conn(); {
	case refused:
		w.refuse(ctx)
		return nil, ErrNotClaimed
	case !c.IsClosed() && c.PgConn().TxStatus() == 'I':
		// Nothing ran: the claim is still to be made.
	default:
		w.pending = 0 // the transaction began: Commit finds it failed, or gone
	}
	return nil, err
}

// readClaim reads the results of the claim's statements from br. The
// lock and the guard are read as Exec reads: pgx drops a statement whose
// rows failed from its cache, which the batch's cleanup does not undo.
func (w *txWork) readClaim(br pgx.BatchResults) error {
	for range 3 { // BEGIN, lock, guard
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	var token string
	switch err := br.QueryRow().Scan(&token); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return err
	default:
		w.lock.seen = &token
	}
	return nil
}

// claim sends the claim alone, for a statement that cannot share its
// round trip (see batchable), or for a work that ends without one.
func (w *txWork) claim(ctx context.Context) error {
	br, err := w.sendClaim(ctx, w.claimBatch())
	if err != nil {
		return err
	}
	return br.Close()
}

// refuse ends the transaction of a refused claim and reads what the key
// holds, in one round trip: ROLLBACK, the key's record (in autocommit)
// and the table's OID, which the lock statement refuses a claim for when
// the table was created anew. The answer is kept for the Work's end: the
// record if it is completed within its retention, or a running record
// under a live lease; otherwise the key is in flight, its holder unknown
// (another transaction's lock). A record that cannot be read, or a
// failure, is also answered as in flight: nothing ran, and a retry asks
// again.
//
// The statements go through pgconn's pipeline, unnamed: a pgx batch
// first prepares the statements its connection has not, in a round trip
// of its own, and PostgreSQL refuses to prepare them in the failed
// transaction, before the ROLLBACK has run.
func (w *txWork) refuse(ctx context.Context) {
	w.pending, w.refused = 0, &server.Claim{}
	c := w.conn.Conn()
	p := c.PgConn().StartPipeline(ctx)
	defer p.Close()
	binary := []int16{pgtype.BinaryFormatCode}
	p.SendQueryParams("ROLLBACK", nil, nil, nil, nil)
	p.SendQueryParams(w.s.q.lookup, [][]byte{[]byte(w.k.Scope), []byte(w.k.Key)},
		[]uint32{pgtype.TextOID, pgtype.TextOID}, nil, binary)
	p.SendQueryParams(w.s.q.tableOID, nil, nil, nil, binary)
	if p.Sync() != nil {
		return
	}
	var (
		row   lookupRow
		found bool
		oid   uint32
	)
	for i := range 3 {
		res, err := p.GetResults()
		rr, ok := res.(*pgconn.ResultReader)
		if err != nil || !ok {
			return
		}
		switch i {
		case 1:
			if rr.NextRow() {
				found = scanRow(c.TypeMap(), rr, &row.fingerprint, &row.token, &row.completed, &row.status,
					&row.header, &row.body, &row.expiresAt, &row.expired) == nil
			}
		case 2:
			if rr.NextRow() {
				_ = scanRow(c.TypeMap(), rr, &oid)
			}
		}
		if _, err := rr.Close(); err != nil {
			return
		}
	}
	if oid != 0 {
		w.s.tableOID.Store(oid)
	}
	if found && !row.expired {
		if rec, err := row.record(); err == nil {
			w.refused.Record = rec
		}
	}
}

// scanRow scans the current row of rr into dst, one column each; the
// bytes it scans are copies, not rr's buffer.
func scanRow(m *pgtype.Map, rr *pgconn.ResultReader, dst ...any) error {
	fds, vals := rr.FieldDescriptions(), rr.Values()
	if len(fds) != len(dst) {
		return fmt.Errorf("pgstore: %d columns, want %d", len(fds), len(dst))
	}
	for i, fd := range fds {
		if err := m.Scan(fd.DataTypeOID, fd.Format, vals[i], dst[i]); err != nil {
			return err
		}
		if b, ok := dst[i].(*[]byte); ok && *b != nil {
			*b = bytes.Clone(*b)
		}
	}
	return nil
}

// deferred reports whether the claim of the work behind t is still to be
// sent with its next statement, or, if it was refused, ErrNotClaimed.
func (t *workTx) deferred() (bool, error) {
	switch w := t.w; {
	case w == nil:
		return false, nil
	case w.refused != nil:
		return false, ErrNotClaimed
	}
	return t.w.pending != 0, nil
}

// batchable reports whether a statement with args can be sent in a batch
// as it would be alone: pgx's batches take no query options but a
// QueryRewriter (named arguments), and a statement without arguments,
// which pgx sends alone in the simple protocol, may hold several
// statements, which a batch's extended protocol refuses.
func batchable(args []any) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0].(type) {
	case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
		return false
	}
	return true
}

// claimedRows are the rows of the handler's statement sent in one batch
// after the claim's: closing them closes the batch's results.
type claimedRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error // the batch's close error
}

func (r *claimedRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err, r.br = r.br.Close(), nil
	}
}

func (r *claimedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *claimedRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}
