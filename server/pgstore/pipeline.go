package pgstore

// This file holds the pipelined claim (Options.PipelineClaim): ClaimWork
// answers at once, and the key's claim is sent in one round trip with the
// handler's first statement, which runs only if the claim holds.

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
// claims its key: BEGIN; the lock statement (ClaimWork's, keeping its
// outcome for the guard) and the lookup, which report what the key holds;
// and the guard, which raises unless the lock was taken and the key's
// record is absent or may be replaced. The caller queues its statements
// after them: PostgreSQL runs a pipeline's statements in order and, after
// an error, skips every statement up to the batch's end (and the failed
// transaction would refuse them anyway), so that they run only if the
// claim holds, and inside its transaction.
func (w *txWork) claimBatch() *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(w.s.q.begin)
	b.Queue(w.s.q.lockClaim, lockKeyOf(w.pending, w.k), w.pending)
	b.Queue(w.s.q.lookup, w.k.Scope, w.k.Key)
	b.Queue(w.s.q.guard, w.k.Scope, w.k.Key, w.lock.fingerprint)
	return b
}

// sendClaim sends b, made by claimBatch with the caller's statements
// queued after the claim's, and reads the claim's results: the caller
// reads its own from the returned results, and closes them. If the claim
// is refused, it keeps the answer for the Work's end (see refusal),
// closes the results and returns ErrNotClaimed; the failed transaction is
// rolled back when the Work ends, in the background. Any other error is
// returned as it is, the results closed; if nothing of b ran (pgx
// prepares a batch's statements before it runs any, and one failed to
// prepare), the claim stays to be sent.
func (w *txWork) sendClaim(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	br := w.tx.conn.SendBatch(ctx, b)
	var (
		locked, settings string
		oid              uint32
		row              lookupRow
		found            bool
		err              error
	)
	if _, err = br.Exec(); err == nil { // BEGIN
		err = br.QueryRow().Scan(&locked, &oid, &settings)
	}
	if err == nil {
		found, err = scanLookup(br.QueryRow(), &row)
	}
	if err == nil {
		if _, err = br.Exec(); err == nil { // the guard
			w.pending = 0
			if found {
				w.lock.seen = &row.token
			}
			return br, nil
		}
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
	switch c := w.tx.conn; {
	case refused:
		if oid != 0 && oid != w.pending {
			w.s.tableOID.Store(oid) // the table was created anew
		}
		w.pending, w.refused = 0, refusal(row, found)
		return nil, ErrNotClaimed
	case !c.IsClosed() && c.PgConn().TxStatus() == 'I':
		// Nothing ran: the claim is still to be made.
	case c.IsClosed() && w.reconnect(ctx):
		// The connection closed before the claim was known (pgx closes
		// it when it cannot encode a statement's arguments after it began
		// to send the batch): whatever of the claim ran is rolled back
		// with it, and the claim is still to be made, on another.
	default:
		w.pending = 0 // the transaction began: Commit finds it failed, or gone
	}
	return nil, err
}

// reconnect replaces the work's closed connection with another from the
// pool, for a claim still to be made, and reports whether it did. It gives
// the closed connection back first: when every connection of the pool is
// held by a work, the one it takes can only be the one it gave back. The
// closed connection's backend may have taken the key's lock before it
// read the close, and holds it until it ends: reconnect waits for it to
// end (see awaitEnded), so that the claim made again does not find the
// work's own lock and refuse the work. If it cannot, the work is left
// with no pooled connection (w.conn nil) and the closed one as its
// transaction's, whose statements fail.
func (w *txWork) reconnect(ctx context.Context) bool {
	pool, err := w.s.conns(ctx)
	if err != nil {
		return false
	}
	closed := w.tx.conn
	w.conn.Release() // closed: the pool drops it, and may open another
	w.conn = nil
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return false
	}
	if awaitEnded(ctx, conn.Conn(), closed.PgConn().PID()) != nil {
		conn.Release()
		return false
	}
	w.conn, w.tx.conn = conn, conn.Conn()
	return true
}

// backendEndPolls bounds awaitEnded's questions: a backend that read its
// client's close ends within milliseconds.
const backendEndPolls = 1000

// awaitEnded returns once the backend with pid no longer runs, asking
// conn; an error if it cannot ask, or the backend still runs after
// backendEndPolls questions a millisecond apart. A backend leaves
// pg_stat_activity after its transaction is rolled back and its locks
// released. Behind a pooler, pid names no backend of the server and
// awaitEnded returns at once; the claim made again may then find the
// lock still held, and be refused: the request is answered 409, and its
// retry claims the key.
func awaitEnded(ctx context.Context, conn *pgx.Conn, pid uint32) error {
	for range backendEndPolls {
		var runs bool
		err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND pid <> pg_backend_pid())", int32(pid)).Scan(&runs)
		if err != nil || !runs {
			return err
		}
		t := time.NewTimer(time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return errBackendRuns
}

var errBackendRuns = errors.New("pgstore: the backend of a closed connection still runs")

// refusal is the answer to a refused claim whose lookup found row (if
// found), as ClaimWork answers a claim that acquired nothing: the record
// if it is completed within its retention, or running under a live lease;
// otherwise the key is in flight, its holder unknown (another
// transaction's lock). A record that cannot be read is also answered as
// in flight: nothing ran, and a retry asks again.
func refusal(row lookupRow, found bool) *server.Claim {
	c := &server.Claim{}
	if found && !row.expired {
		if rec, err := row.record(); err == nil {
			c.Record = rec
		}
	}
	return c
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
