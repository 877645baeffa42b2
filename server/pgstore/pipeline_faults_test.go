package pgstore_test

// Fault tests of the pipelined claim (Options.PipelineClaim): the backend
// terminated and the context cancelled at chosen points of a work (before
// its first statement, while the claim's batch is in flight, between the
// claim and Commit, during Commit), a first statement pgx cannot encode,
// on a pool the work has exhausted, a table dropped under a deferred
// claim, and every kind of first statement interrupted mid-claim. Each
// asserts the promise from the database (a key's charge commits at most
// once, and only with its record), the type of the Work's end error, and
// that no connection stays acquired once the work ended and the Store
// settled. Steps are ordered by events: pg_locks and pg_stat_activity,
// polled in bounded loops, and the statements' own returns.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// faultBound bounds every wait of these tests: a context given to a work
// whose wait would otherwise be endless, and the polls of the database.
// No step waits for it to pass; a correct store answers in milliseconds.
const faultBound = 10 * time.Second

// faultEnv is a pipelined Store on a pool of its own (the pool under
// test), and a second pool for the test's own statements: the charges,
// the lockers, pg_terminate_backend.
type faultEnv struct {
	pool, other *pgxpool.Pool
	s           *pgstore.Store
	charges     string
	insert      string // a charge: $1 key, $2 amount
	conns       int
}

// newFaultEnv opens a pipelined Store on a pool of conns connections,
// learns the table's OID and prepares the claim's statements on each
// connection.
func newFaultEnv(t *testing.T, conns int32) *faultEnv {
	t.Helper()
	e := &faultEnv{pool: newPool(t, poolConfig(t, conns)), other: newPool(t, poolConfig(t, 3)), conns: int(conns)}
	e.s = newStore(t, e.pool, pgstore.Options{Transactional: true, PipelineClaim: true})
	e.charges = newCharges(t, e.other)
	e.insert = "INSERT INTO " + e.charges + " (key, amount) VALUES ($1, $2)"
	learn(t, e.s, server.Key{Key: "learn"})
	e.warm(t)
	return e
}

var warmRound atomic.Int64

// warm holds one pipelined work on every connection of the pool at once
// (ClaimWork takes a connection per work), each running a charge, and
// commits them: every connection, new ones included, has the claim's
// statements and the charge prepared, so that a claim sent later waits
// nowhere before its lock is taken.
func (e *faultEnv) warm(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	round := warmRound.Add(1)
	var works []server.Work
	for i := range e.conns {
		key := fmt.Sprintf("warm-%d-%d", round, i)
		c, wctx, w, err := e.s.ClaimWork(ctx, server.Key{Key: key}, "fp")
		require.NoError(t, err)
		require.True(t, c.Acquired)
		works = append(works, w)
		tx, _ := pgstore.Tx(wctx)
		_, err = tx.Exec(wctx, e.insert, key, 1)
		require.NoError(t, err)
	}
	for _, w := range works {
		require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusOK}, retention))
	}
}

// charged is the number of charges committed under key.
func (e *faultEnv) charged(t *testing.T, key string) int {
	t.Helper()
	return countCharges(t, e.other, e.charges+" WHERE key = '"+key+"'")
}

// recorded reports whether the store holds a record of key, and whether
// it is completed.
func (e *faultEnv) recorded(t *testing.T, key string) (exists, completed bool) {
	t.Helper()
	return (&service{pool: e.other, table: e.s.Table()}).stored(t, key)
}

// settled requires every connection of the pool under test back in it
// once the Store's background rollbacks are done.
func (e *faultEnv) settled(t *testing.T) {
	t.Helper()
	e.s.Settle()
	require.Eventually(t, func() bool { return e.pool.Stat().AcquiredConns() == 0 },
		faultBound, 5*time.Millisecond, "connections still acquired: %d", e.pool.Stat().AcquiredConns())
}

// lockTable takes table in ACCESS EXCLUSIVE mode in a transaction of the
// other pool, and returns its rollback (idempotent, also run at cleanup).
func (e *faultEnv) lockTable(t *testing.T, table string) func() {
	t.Helper()
	ctx := context.Background()
	locker, err := e.other.Begin(ctx)
	require.NoError(t, err)
	_, err = locker.Exec(ctx, "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	var once atomic.Bool
	unlock := func() {
		if once.CompareAndSwap(false, true) {
			require.NoError(t, locker.Rollback(ctx))
		}
	}
	t.Cleanup(unlock)
	return unlock
}

// waitingBackend returns the pid of the one backend waiting for a lock
// on table, once there is one.
func (e *faultEnv) waitingBackend(t *testing.T, table string) int32 {
	t.Helper()
	var pid int32
	require.Eventually(t, func() bool {
		err := e.other.QueryRow(context.Background(),
			"SELECT pid FROM pg_locks WHERE locktype = 'relation' AND relation = $1::regclass AND NOT granted", table).Scan(&pid)
		return err == nil
	}, faultBound, 2*time.Millisecond)
	return pid
}

// advisoryLocks is the number of advisory locks backend pid holds.
func (e *faultEnv) advisoryLocks(t *testing.T, pid int32) int {
	t.Helper()
	var n int
	require.NoError(t, e.other.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1", pid).Scan(&n))
	return n
}

// terminate ends backend pid, a backend of this test's pool, and returns
// once it has left pg_stat_activity: its transaction rolled back, its
// locks released.
func (e *faultEnv) terminate(t *testing.T, pid int32) {
	t.Helper()
	var ok bool
	require.NoError(t, e.other.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", pid).Scan(&ok))
	require.True(t, ok, "backend %d", pid)
	waitGone(t, e.other, pid)
}

// backendPid returns the pid of the backend the work's transaction runs
// on, asked through the transaction itself.
func backendPid(t *testing.T, wctx context.Context) int32 {
	t.Helper()
	tx, _ := pgstore.Tx(wctx)
	var pid int32
	require.NoError(t, tx.QueryRow(wctx, "SELECT pg_backend_pid()").Scan(&pid))
	return pid
}

// charge claims k with ClaimWork and runs its charge, the claim pipelined
// with it, and returns the work, not ended (rolled back at cleanup), and
// the pid of the backend its transaction runs on.
func (e *faultEnv) charge(t *testing.T, k server.Key) (server.Work, int32) {
	t.Helper()
	ctx := context.Background()
	c, wctx, w, err := e.s.ClaimWork(ctx, k, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	t.Cleanup(func() { _ = w.Rollback(ctx) })
	tx, _ := pgstore.Tx(wctx)
	_, err = tx.Exec(wctx, e.insert, k.Key, 1)
	require.NoError(t, err)
	return w, backendPid(t, wctx)
}

// requireNotRefused requires err, the end of a work whose claim was not
// refused, to be an error and not a ClaimRefused.
func requireNotRefused(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	var refused *server.ClaimRefused
	require.False(t, errors.As(err, &refused), "a work whose claim held ended as refused: %v", err)
}

// requireRunsOnce claims key afresh, runs its charge and commits, or, if
// its record is completed already, requires the claim refused with it;
// then requires exactly one charge and a completed record for key.
func (e *faultEnv) requireRunsOnce(t *testing.T, key string) {
	t.Helper()
	ctx := context.Background()
	_, completed := e.recorded(t, key)
	w, err := claimInsert(t, e.s, server.Key{Key: key}, strings.Replace(e.insert, "$2", "1", 1))
	if completed {
		require.ErrorIs(t, err, pgstore.ErrNotClaimed, "%s: recorded, yet its claim held", key)
		assert.True(t, requireRefused(t, w).Record.Completed)
	} else {
		require.NoError(t, err, "%s: the key is free again", key)
		require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}, retention))
	}
	assert.Equal(t, 1, e.charged(t, key), "%s: charges", key)
	exists, completed := e.recorded(t, key)
	assert.True(t, exists && completed, "%s: record", key)
	e.settled(t)
}

// TestPipelineFaultReconnectExhaustedPool: after pgx closes the work's
// connection partway through the claim's batch (a first statement whose
// argument it cannot encode; the backend terminated while the claim's
// lookup waits for a lock on the store's table, the key's lock taken),
// the claim is to be made again on another pooled connection. On a pool
// whose only connection is the work's own (closed, but still acquired
// until the work gives it back), that other connection must not be
// waited for: the statement returns its error at once, no acquire of the
// pool waits and is cancelled, and the work's next statement carries the
// claim and runs, as on a pool with room to spare. Each way, the charge
// commits once and the pool settles.
func TestPipelineFaultReconnectExhaustedPool(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"unencodable", "terminated"} {
		for _, conns := range []int32{1, 3} {
			t.Run(fmt.Sprintf("%s/conns=%d", fault, conns), func(t *testing.T) {
				t.Parallel()
				e := newFaultEnv(t, conns)
				k := server.Key{Key: "k"}
				// The work's context ends a wait that would otherwise be
				// endless; no step waits for it.
				bounded, cancel := context.WithTimeout(context.Background(), faultBound)
				defer cancel()
				c, wctx, w, err := e.s.ClaimWork(bounded, k, "fp")
				require.NoError(t, err)
				require.True(t, c.Acquired)
				t.Cleanup(func() { _ = w.Rollback(context.Background()) })
				tx, _ := pgstore.Tx(wctx)
				cancelled := e.pool.Stat().CanceledAcquireCount()

				switch fault {
				case "unencodable":
					_, err = tx.Exec(wctx, e.insert, k.Key, struct{ X chan int }{})
				case "terminated":
					unlock := e.lockTable(t, e.s.Table())
					errc := make(chan error, 1)
					go func() {
						_, err := tx.Exec(wctx, e.insert, k.Key, 1)
						errc <- err
					}()
					pid := e.waitingBackend(t, e.s.Table())
					require.Equal(t, 1, e.advisoryLocks(t, pid), "the claim's lock, held while its lookup waits")
					e.terminate(t, pid)
					err = <-errc
					unlock()
				}
				require.Error(t, err)
				require.NotErrorIs(t, err, pgstore.ErrNotClaimed)
				require.NotErrorIs(t, err, context.DeadlineExceeded)
				assert.Equal(t, cancelled, e.pool.Stat().CanceledAcquireCount(),
					"the statement waited, until its context ended, for a second connection of a pool whose every connection its work holds")

				next, cancelNext := context.WithTimeout(context.Background(), faultBound)
				defer cancelNext()
				_, err = tx.Exec(next, e.insert, k.Key, 1)
				require.NoError(t, err, "the claim goes with the next statement, on another connection")
				require.NoError(t, w.Commit(next, server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}, retention))
				assert.Equal(t, 1, e.charged(t, k.Key))
				e.settled(t)
				e.requireRunsOnce(t, k.Key)
			})
		}
	}
}

// TestPipelineFaultMidClaimEveryKind: for every kind of first statement
// (those that share the claim's batch and those the claim goes before
// alone), the backend is terminated while the claim's lookup waits for a
// lock on the store's table, the key's lock taken. The statement fails
// with an error that is not ErrNotClaimed, none of a batch's callbacks
// run, nothing of it commits; the work's next statement carries the
// claim again, on another connection, and commits once with the record.
func TestPipelineFaultMidClaimEveryKind(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, 3)
	var callbacks atomic.Int64
	for kind, stmt := range firstStatements(e.charges, &callbacks) {
		if stmt == nil {
			continue
		}
		e.warm(t) // the connections a terminated one was replaced by, too
		key := "kind-" + kind
		ctx := context.Background()
		c, wctx, w, err := e.s.ClaimWork(ctx, server.Key{Key: key}, "fp")
		require.NoError(t, err)
		require.True(t, c.Acquired)
		t.Cleanup(func() { _ = w.Rollback(ctx) })
		tx, _ := pgstore.Tx(wctx)
		unlock := e.lockTable(t, e.s.Table())
		errc := make(chan error, 1)
		go func() { errc <- stmt(wctx, tx, key) }()
		pid := e.waitingBackend(t, e.s.Table())
		require.Equal(t, 1, e.advisoryLocks(t, pid), "%s: the claim's lock, held while its lookup waits", kind)
		e.terminate(t, pid)
		err = <-errc
		unlock()
		require.Error(t, err, kind)
		require.NotErrorIs(t, err, pgstore.ErrNotClaimed, kind)
		assert.Equal(t, int64(0), callbacks.Load(), "%s: callbacks of a batch whose claim did not complete", kind)
		assert.Equal(t, 0, e.charged(t, key), kind)

		_, err = tx.Exec(wctx, e.insert, key, 1)
		require.NoError(t, err, "%s: the claim goes with the next statement", kind)
		require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}, retention), kind)
		assert.Equal(t, 1, e.charged(t, key), kind)
		e.settled(t)
		e.requireRunsOnce(t, key)
	}
}

// TestPipelineFaultBeforeCommit: the claim and the charge ran, in one
// batch; then, before the Work's Commit, the backend is terminated (and
// gone), or Commit is given a context already cancelled. Commit fails
// with an error that is not ClaimRefused, nothing commits, the pool
// settles, and the key, free again, runs once.
func TestPipelineFaultBeforeCommit(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"terminated", "cancelled"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			e := newFaultEnv(t, 2)
			ctx := context.Background()
			k := server.Key{Key: "k"}
			w, pid := e.charge(t, k)
			require.Equal(t, 1, e.advisoryLocks(t, pid), "the claim's lock")

			commitCtx := ctx
			switch fault {
			case "terminated":
				e.terminate(t, pid)
			case "cancelled":
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				commitCtx = cctx
			}
			err := w.Commit(commitCtx, server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}, retention)
			requireNotRefused(t, err)
			require.NotErrorIs(t, err, server.ErrLeaseLost)
			if fault == "cancelled" {
				require.ErrorIs(t, err, context.Canceled)
			}
			e.settled(t)
			waitGone(t, e.other, pid) // the pool closed the connection left in a transaction
			assert.Equal(t, 0, e.charged(t, k.Key))
			exists, _ := e.recorded(t, k.Key)
			assert.False(t, exists)
			e.requireRunsOnce(t, k.Key)
		})
	}
}

// TestPipelineFaultDuringCommit: the Work's Commit (record and COMMIT in
// one batch) is in flight, its record's insert waiting for another
// transaction that inserted a row of the key without its lock, when the
// backend is terminated or Commit's context is cancelled. Commit fails
// with an error that is not ClaimRefused (the cancelled one wraps
// context.Canceled); whatever the server did with the batch it had
// received, the charge committed exactly when the record did, the pool
// settles, and the key then holds one charge and one record.
func TestPipelineFaultDuringCommit(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"terminated", "cancelled"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			e := newFaultEnv(t, 2)
			ctx := context.Background()
			k := server.Key{Key: "k"}
			w, pid := e.charge(t, k)

			other, err := e.other.Begin(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = other.Rollback(ctx) })
			_, err = other.Exec(ctx, "INSERT INTO "+e.s.Table()+
				" (scope, key, fingerprint, token, state, expires_at) VALUES ('', $1, 'other', 'tok', 'running', statement_timestamp() + interval '1 hour')", k.Key)
			require.NoError(t, err)

			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				errc <- w.Commit(cctx, server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}, retention)
			}()
			require.Eventually(t, func() bool {
				var waits bool
				require.NoError(t, e.other.QueryRow(ctx,
					"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted)", pid).Scan(&waits))
				return waits
			}, faultBound, 2*time.Millisecond, "the record's insert waits for the other transaction")
			switch fault {
			case "terminated":
				e.terminate(t, pid)
			case "cancelled":
				cancel()
			}
			err = <-errc
			requireNotRefused(t, err)
			if fault == "cancelled" {
				require.ErrorIs(t, err, context.Canceled)
			}
			require.NoError(t, other.Rollback(ctx))
			waitGone(t, e.other, pid)
			e.settled(t)
			n := e.charged(t, k.Key)
			exists, completed := e.recorded(t, k.Key)
			assert.LessOrEqual(t, n, 1)
			assert.Equal(t, n == 1, exists && completed, "the charge committed without its record, or the record without its charge")
			if fault == "terminated" {
				assert.Equal(t, 0, n, "a terminated backend's transaction committed")
			}
			t.Logf("%s during Commit: charges %d, record %v (Commit said %v)", fault, n, exists, err)
			e.requireRunsOnce(t, k.Key)
		})
	}
}

// TestPipelineFaultCancelledBeforeFirstStatement: the request's context
// is cancelled after ClaimWork answered and before the handler's first
// statement. The statement fails with context.Canceled, not
// ErrNotClaimed: nothing was sent. A handler that gives up has its work
// rolled back with nothing held; one that ignores the error and answers
// has its claim sent at Commit, which, for a key another work holds,
// returns ClaimRefused (in flight) and records nothing. Either way
// nothing of the cancelled work commits, and the pool settles.
func TestPipelineFaultCancelledBeforeFirstStatement(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, 2)
	ctx := context.Background()
	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}
	cancelledWork := func(key string) (server.Work, pgstore.DBTX, context.Context) {
		rctx, cancel := context.WithCancel(ctx)
		c, wctx, w, err := e.s.ClaimWork(rctx, server.Key{Key: key}, "fp")
		require.NoError(t, err)
		require.True(t, c.Acquired)
		t.Cleanup(func() { _ = w.Rollback(ctx) })
		cancel()
		tx, _ := pgstore.Tx(wctx)
		_, err = tx.Exec(wctx, e.insert, key, 1)
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, pgstore.ErrNotClaimed)
		return w, tx, wctx
	}

	// A free key: the handler gives up.
	w, _, _ := cancelledWork("free")
	require.NoError(t, w.Rollback(ctx), "nothing was claimed, nothing to refuse")
	e.settled(t)
	assert.Equal(t, 0, e.charged(t, "free"))
	e.requireRunsOnce(t, "free")

	// A key another work holds: the handler answers all the same.
	holder, err := claimInsert(t, e.s, server.Key{Key: "held"}, strings.Replace(e.insert, "$2", "1", 1))
	require.NoError(t, err)
	w, _, _ = cancelledWork("held")
	var refused *server.ClaimRefused
	require.ErrorAs(t, w.Commit(ctx, resp, retention), &refused)
	assert.False(t, refused.Claim.Record.Completed, "in flight")
	require.NoError(t, holder.Commit(ctx, resp, retention))
	e.settled(t)
	assert.Equal(t, 1, e.charged(t, "held"))
	e.requireRunsOnce(t, "held")
}

// TestPipelineFaultTableDropped: the store's table is dropped under a
// deferred claim (after ClaimWork answered, before the first statement).
// The statement fails with an error that is neither ErrNotClaimed nor
// nil, the Work's Commit fails and is not ClaimRefused, nothing commits,
// the pool settles; once the table is migrated again, the first claim is
// refused as in flight (the table's OID changed) and the next runs once.
func TestPipelineFaultTableDropped(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, 2)
	ctx := context.Background()
	k := server.Key{Key: "k"}
	c, wctx, w, err := e.s.ClaimWork(ctx, k, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	t.Cleanup(func() { _ = w.Rollback(ctx) })
	_, err = e.other.Exec(ctx, "DROP TABLE "+e.s.Table())
	require.NoError(t, err)
	tx, _ := pgstore.Tx(wctx)
	_, err = tx.Exec(wctx, e.insert, k.Key, 1)
	require.Error(t, err)
	require.NotErrorIs(t, err, pgstore.ErrNotClaimed)
	requireNotRefused(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusCreated}, retention))
	e.settled(t)
	assert.Equal(t, 0, e.charged(t, k.Key))

	require.NoError(t, e.s.Migrate(ctx))
	w, err = claimInsert(t, e.s, k, strings.Replace(e.insert, "$2", "1", 1))
	require.ErrorIs(t, err, pgstore.ErrNotClaimed)
	assert.False(t, requireRefused(t, w).Record.Completed)
	assert.Equal(t, 0, e.charged(t, k.Key))
	e.settled(t)
	e.requireRunsOnce(t, k.Key)
}

// TestPipelineFaultReconnectEveryWork: every connection of the pool is
// held by a pipelined work whose claim's lookup waits for a lock on the
// store's table (the key's lock taken), when every backend is terminated
// at once, as a failover does. Each work's connection closes partway
// through its claim, and each is to make its claim again on another
// connection: none may wait for a connection another work holds (each
// holds its own closed one until it ends), which would leave them all
// waiting until their contexts end. Each statement returns its error, no
// acquire waits and is cancelled, and each work's next statement carries
// its claim and commits once.
func TestPipelineFaultReconnectEveryWork(t *testing.T) {
	t.Parallel()
	const works = 2
	e := newFaultEnv(t, works)
	bounded, cancel := context.WithTimeout(context.Background(), faultBound)
	defer cancel()
	unlock := e.lockTable(t, e.s.Table())
	type running struct {
		w    server.Work
		tx   pgstore.DBTX
		errc chan error
	}
	var rs []running
	for i := range works {
		key := fmt.Sprint("k-", i)
		c, wctx, w, err := e.s.ClaimWork(bounded, server.Key{Key: key}, "fp")
		require.NoError(t, err)
		require.True(t, c.Acquired)
		t.Cleanup(func() { _ = w.Rollback(context.Background()) })
		tx, _ := pgstore.Tx(wctx)
		r := running{w: w, tx: tx, errc: make(chan error, 1)}
		go func() {
			_, err := tx.Exec(wctx, e.insert, key, 1)
			r.errc <- err
		}()
		rs = append(rs, r)
	}
	var pids []int32
	require.Eventually(t, func() bool {
		pids = pids[:0]
		rows, err := e.other.Query(context.Background(),
			"SELECT pid FROM pg_locks WHERE locktype = 'relation' AND relation = $1::regclass AND NOT granted", e.s.Table())
		require.NoError(t, err)
		pids, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		require.NoError(t, err)
		return len(pids) == works
	}, faultBound, 2*time.Millisecond, "every work's claim waits")
	cancelled := e.pool.Stat().CanceledAcquireCount()
	for _, pid := range pids {
		require.Equal(t, 1, e.advisoryLocks(t, pid))
		e.terminate(t, pid)
	}
	for _, r := range rs {
		err := <-r.errc
		require.Error(t, err)
		require.NotErrorIs(t, err, pgstore.ErrNotClaimed)
	}
	unlock()
	assert.Equal(t, cancelled, e.pool.Stat().CanceledAcquireCount(),
		"the works waited, until their contexts ended, for connections the other works held")
	next, cancelNext := context.WithTimeout(context.Background(), faultBound)
	defer cancelNext()
	for i, r := range rs {
		key := fmt.Sprint("k-", i)
		_, err := r.tx.Exec(next, e.insert, key, 1)
		assert.NoError(t, err, "%s: the claim goes with the next statement", key)
		if err == nil {
			assert.NoError(t, r.w.Commit(next, server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}, retention))
		} else {
			requireNotRefused(t, r.w.Commit(next, server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}, retention))
		}
	}
	e.settled(t)
	for i := range works {
		key := fmt.Sprint("k-", i)
		assert.LessOrEqual(t, e.charged(t, key), 1, key)
		e.requireRunsOnce(t, key)
	}
}
