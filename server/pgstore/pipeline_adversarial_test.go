package pgstore_test

// Adversarial tests of the pipelined claim (Options.PipelineClaim): the
// claim must gate the handler's first statement in every exec mode, leave
// its connection clean when refused, exclude the other claim paths on one
// table, and survive cancellation, a terminated backend and timeouts.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// execModes are pgx's exec modes, each set as a pool's default.
var execModes = map[string]pgx.QueryExecMode{
	"CacheStatement": pgx.QueryExecModeCacheStatement,
	"CacheDescribe":  pgx.QueryExecModeCacheDescribe,
	"DescribeExec":   pgx.QueryExecModeDescribeExec,
	"Exec":           pgx.QueryExecModeExec,
	"SimpleProtocol": pgx.QueryExecModeSimpleProtocol,
}

// connState is what the pool's idle connection says of itself once a work
// has ended on it.
type connState struct {
	txStatus   byte
	busy       bool
	advisory   int    // advisory locks its backend holds
	dbTxStatus string // pg_stat_activity's state of its backend
}

// idleConn acquires a connection of pool (a pool of one: the connection
// the work ran on) and reports its state.
func idleConn(t *testing.T, pool *pgxpool.Pool) connState {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	st := connState{txStatus: conn.Conn().PgConn().TxStatus(), busy: conn.Conn().PgConn().IsBusy()}
	require.NoError(t, conn.QueryRow(ctx,
		"SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())::int, "+
			"(SELECT state FROM pg_stat_activity WHERE pid = pg_backend_pid())").Scan(&st.advisory, &st.dbTxStatus))
	return st
}

// TestPipelineAdversarialExecModes: in each of pgx's exec modes, set as
// the pool's default, a pipelined claim gates the handler's INSERT: while
// another work (pipelined, plain ClaimWork or a lease through
// Store.Claim) holds the key, and once its record is completed, the
// repeat's INSERT fails with ErrNotClaimed, never commits and never runs;
// the table created anew refuses the first claim with its INSERT unrun;
// and twenty refusals on a pool of one connection leave it out
// of any transaction, holding no advisory lock, its statement cache sound
// for a new key's work, which commits.
func TestPipelineAdversarialExecModes(t *testing.T) {
	t.Parallel()
	for name, mode := range execModes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := poolConfig(t, 1)
			cfg.ConnConfig.DefaultQueryExecMode = mode
			pool := newPool(t, cfg)
			other := newPool(t, poolConfig(t, 4)) // the holders', in the default mode
			s := newStore(t, pool, pgstore.Options{Transactional: true, PipelineClaim: true})
			plain, err := pgstore.New(other, pgstore.Options{Table: strings.Trim(s.Table(), `"`), Transactional: true})
			require.NoError(t, err)
			t.Cleanup(plain.Close)
			piped, err := pgstore.New(other, pgstore.Options{Table: strings.Trim(s.Table(), `"`), Transactional: true, PipelineClaim: true})
			require.NoError(t, err)
			t.Cleanup(piped.Close)
			charges := newCharges(t, other)
			insert := "INSERT INTO " + charges + " (key, amount) VALUES ($1, 1)"
			learn(t, s, server.Key{Key: "learn"})
			learn(t, piped, server.Key{Key: "learn"})
			count := func(key string) int {
				return countCharges(t, other, charges+" WHERE key = '"+key+"'")
			}
			resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte("done")}

			// A new key runs, in this mode, and commits.
			w, err := claimInsert(t, s, server.Key{Key: "new"}, insert)
			require.NoError(t, err)
			require.NoError(t, w.Commit(ctx, resp, retention))
			require.Equal(t, 1, count("new"))

			holders := map[string]func(k server.Key) func(){
				"pipelined": func(k server.Key) func() {
					w, err := claimInsert(t, piped, k, insert)
					require.NoError(t, err)
					return func() { require.NoError(t, w.Commit(ctx, resp, retention)) }
				},
				"ClaimWork": func(k server.Key) func() {
					c, wctx, w, err := plain.ClaimWork(ctx, k, "fp")
					require.NoError(t, err)
					require.True(t, c.Acquired)
					charge(t, wctx, charges, k.Key)
					return func() { require.NoError(t, w.Commit(ctx, resp, retention)) }
				},
				"lease": func(k server.Key) func() {
					c, err := plain.Claim(ctx, k, "fp", lease)
					require.NoError(t, err)
					require.True(t, c.Acquired)
					wctx, w, err := plain.BeginWork(ctx, k, c.Token)
					require.NoError(t, err)
					charge(t, wctx, charges, k.Key)
					return func() { require.NoError(t, w.Commit(ctx, resp, retention)) }
				},
			}
			refusals := 0
			for holder, hold := range holders {
				k := server.Key{Key: "held-" + holder}
				done := hold(k)
				for range 5 {
					w, err := claimInsert(t, s, k, insert)
					require.ErrorIs(t, err, pgstore.ErrNotClaimed, "held by %s", holder)
					assert.False(t, requireRefused(t, w).Record.Completed, "held by %s: in flight", holder)
					refusals++
				}
				done()
				for range 5 {
					w, err := claimInsert(t, s, k, insert)
					require.ErrorIs(t, err, pgstore.ErrNotClaimed, "recorded by %s", holder)
					c := requireRefused(t, w)
					assert.True(t, c.Record.Completed, "recorded by %s", holder)
					assert.Equal(t, "done", string(c.Record.Response.Body))
					refusals++
				}
				assert.Equal(t, 1, count(k.Key), "held by %s: the holder's charge, and none of the repeats'", holder)
				st := idleConn(t, pool)
				assert.Equal(t, connState{txStatus: 'I', dbTxStatus: "active"}, st, "after %d refusals", refusals)
			}

			// A new key's work on the connection that was refused 30 times.
			for i := range 3 {
				key := fmt.Sprint("after-", i)
				w, err := claimInsert(t, s, server.Key{Key: key}, insert)
				require.NoError(t, err)
				require.NoError(t, w.Commit(ctx, resp, retention))
				assert.Equal(t, 1, count(key))
			}

			// The table created anew: the first claim is refused, its
			// INSERT not run, and the next holds.
			_, err = other.Exec(ctx, "DROP TABLE "+s.Table())
			require.NoError(t, err)
			require.NoError(t, s.Migrate(ctx))
			w, err = claimInsert(t, s, server.Key{Key: "anew"}, insert)
			require.ErrorIs(t, err, pgstore.ErrNotClaimed)
			requireRefused(t, w)
			assert.Equal(t, 0, count("anew"))
			w, err = claimInsert(t, s, server.Key{Key: "anew"}, insert)
			require.NoError(t, err)
			require.NoError(t, w.Commit(ctx, resp, retention))
			assert.Equal(t, 1, count("anew"))
			assert.Equal(t, connState{txStatus: 'I', dbTxStatus: "active"}, idleConn(t, pool))
		})
	}
}

// TestPipelineAdversarialNonASCIIKeys: in a UTF-8 database a key or scope
// that is not ASCII takes the pipelined path, and its lock is the one the
// other paths take for it: while a pipelined work holds such a key, a
// plain ClaimWork and a lease claim (whose shared lock's key is computed in
// SQL) of it are refused; while either of those holds it, the pipelined
// claim is refused, its INSERT not run.
func TestPipelineAdversarialNonASCIIKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true, PipelineClaim: true})
	var enc string
	require.NoError(t, pool.QueryRow(ctx, "SHOW server_encoding").Scan(&enc))
	if enc != "UTF8" {
		t.Skipf("the database's encoding is %s, not UTF8", enc)
	}
	plain, err := pgstore.New(pool, pgstore.Options{Table: strings.Trim(s.Table(), `"`), Transactional: true})
	require.NoError(t, err)
	t.Cleanup(plain.Close)
	charges := newCharges(t, pool)
	insert := "INSERT INTO " + charges + " (key, amount) VALUES ($1, 1)"
	learn(t, s, server.Key{Key: "learn"})
	learn(t, plain, server.Key{Key: "learn"})
	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte("done")}

	for i, k := range []server.Key{
		{Key: "ключ-✓"},
		{Scope: "tenant-é", Key: "k"},
		{Scope: "é", Key: "\u00e9x"}, // scope and key that share bytes across the boundary
		{Scope: "日本", Key: "語-" + strings.Repeat("ü", 40)},
	} {
		// Pipelined first: the others are refused.
		w, err := claimInsert(t, s, k, insert)
		require.NoError(t, err, "key %d", i)
		c, _, pw, err := plain.ClaimWork(ctx, k, "fp")
		require.NoError(t, err)
		assert.False(t, c.Acquired, "key %d: ClaimWork got a key a pipelined work holds", i)
		if pw != nil {
			_ = pw.Rollback(ctx)
		}
		lc, err := plain.Claim(ctx, k, "fp", lease)
		require.NoError(t, err)
		assert.False(t, lc.Acquired, "key %d: Store.Claim got a key a pipelined work holds", i)
		require.NoError(t, w.Rollback(ctx))

		// ClaimWork first: the pipelined claim is refused.
		c, _, pw, err = plain.ClaimWork(ctx, k, "fp")
		require.NoError(t, err)
		require.True(t, c.Acquired, "key %d", i)
		w, err = claimInsert(t, s, k, insert)
		require.ErrorIs(t, err, pgstore.ErrNotClaimed, "key %d: held by ClaimWork", i)
		requireRefused(t, w)
		require.NoError(t, pw.Rollback(ctx))

		// A lease first: the pipelined claim is refused too.
		lc, err = plain.Claim(ctx, k, "fp", lease)
		require.NoError(t, err)
		require.True(t, lc.Acquired, "key %d", i)
		w, err = claimInsert(t, s, k, insert)
		require.ErrorIs(t, err, pgstore.ErrNotClaimed, "key %d: held under a lease", i)
		requireRefused(t, w)
		require.NoError(t, plain.Release(ctx, k, lc.Token))

		// And free again: the pipelined work runs.
		w, err = claimInsert(t, s, k, insert)
		require.NoError(t, err, "key %d", i)
		require.NoError(t, w.Commit(ctx, resp, retention))
	}
	assert.Equal(t, 4, countCharges(t, pool, charges))
}

// TestPipelineAdversarialLockKeyEquivalence: the lock the pipelined claim
// takes is the one the SQL of Store.Claim computes, key by key: holding
// it in SQL with that expression refuses the pipelined claim.
func TestPipelineAdversarialLockKeyEquivalence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true, PipelineClaim: true})
	charges := newCharges(t, pool)
	insert := "INSERT INTO " + charges + " (key, amount) VALUES ($1, 1)"
	learn(t, s, server.Key{Key: "learn"})
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for i, k := range []server.Key{{Key: "ascii"}, {Key: "ключ"}, {Scope: "ü", Key: "ß"}, {Scope: "a:b", Key: "3:c"}} {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		var got bool
		require.NoError(t, tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(('x' || encode(substr(sha256(convert_to(
    $3::regclass::oid::text || ':' || octet_length($1::text)::text || ':' || $1::text || $2::text,
    'UTF8')), 1, 8), 'hex'))::bit(64)::bigint)`, k.Scope, k.Key, s.Table()).Scan(&got))
		require.True(t, got)
		w, err := claimInsert(t, s, k, insert)
		require.ErrorIs(t, err, pgstore.ErrNotClaimed, "key %d: the SQL lock does not exclude the pipelined claim", i)
		requireRefused(t, w)
		require.NoError(t, tx.Rollback(ctx))
	}
	assert.Equal(t, 0, countCharges(t, pool, charges))
}

// TestPipelineAdversarialRefusalsLeaveConnClean: on a pool of one
// connection, refusals of every kind of first statement (firstStatements:
// a Query left for the end of the work to close, a SendBatch with
// callbacks, a savepoint, none among them) leave the connection out of any transaction, not busy,
// holding no advisory lock, and the refused SendBatch calls none of its
// callbacks; then new keys' works of each kind run and commit on it.
func TestPipelineAdversarialRefusalsLeaveConnClean(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t, poolConfig(t, 1))
	other := newPool(t, poolConfig(t, 2))
	s := newStore(t, pool, pgstore.Options{Transactional: true, PipelineClaim: true})
	plain, err := pgstore.New(other, pgstore.Options{Table: strings.Trim(s.Table(), `"`), Transactional: true})
	require.NoError(t, err)
	t.Cleanup(plain.Close)
	charges := newCharges(t, other)
	learn(t, s, server.Key{Key: "learn"})
	var callbacks atomic.Int64
	kinds := firstStatements(charges, &callbacks)
	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte("done")}
	run := func(key, kind string) (server.Work, error) {
		c, wctx, w, err := s.ClaimWork(ctx, server.Key{Key: key}, "fp")
		require.NoError(t, err)
		require.True(t, c.Acquired)
		t.Cleanup(func() { _ = w.Rollback(ctx) })
		if stmt := kinds[kind]; stmt != nil {
			tx, _ := pgstore.Tx(wctx)
			return w, stmt(wctx, tx, key)
		}
		return w, nil
	}
	clean := connState{txStatus: 'I', dbTxStatus: "active"}

	// A key another work holds, and a key recorded.
	c, _, holder, err := plain.ClaimWork(ctx, server.Key{Key: "held"}, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	t.Cleanup(func() { _ = holder.Rollback(ctx) })
	c, _, rec, err := plain.ClaimWork(ctx, server.Key{Key: "recorded"}, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	require.NoError(t, rec.Commit(ctx, resp, retention))
	for round := range 4 {
		for kind := range kinds {
			for _, key := range []string{"held", "recorded"} {
				w, err := run(key, kind)
				if kind != "none" {
					require.ErrorIs(t, err, pgstore.ErrNotClaimed, "%s, %s", kind, key)
				}
				var refused *server.ClaimRefused
				switch {
				case round%2 == 0:
					require.ErrorAs(t, w.Commit(ctx, resp, retention), &refused, "%s, %s", kind, key)
					assert.Equal(t, key == "recorded", refused.Claim.Record.Completed, "%s, %s", kind, key)
				default: // kind "none" too: Rollback sends the claim the handler did not
					require.ErrorAs(t, w.Rollback(ctx), &refused, "%s, %s", kind, key)
					assert.Equal(t, key == "recorded", refused.Claim.Record.Completed, "%s, %s", kind, key)
				}
				require.Equal(t, clean, idleConn(t, pool), "%s, %s, round %d", kind, key, round)
			}
		}
	}
	require.NoError(t, holder.Rollback(ctx))
	assert.Equal(t, int64(0), callbacks.Load(), "a refused batch's callbacks ran")
	assert.Equal(t, 0, countCharges(t, other, charges))

	for kind, stmt := range kinds {
		key := "new-" + kind
		w, err := run(key, kind)
		require.NoError(t, err, kind)
		require.NoError(t, w.Commit(ctx, resp, retention), kind)
		want := 1
		if stmt == nil {
			want = 0
		}
		assert.Equal(t, want, countCharges(t, other, charges+" WHERE key = '"+key+"'"), kind)
		require.Equal(t, clean, idleConn(t, pool), kind)
		exists, completed := (&service{pool: other, table: s.Table()}).stored(t, key)
		assert.True(t, exists && completed, kind)
	}
	assert.Equal(t, int64(2), callbacks.Load(), "the batch's callbacks, once each")
}

// TestPipelineAdversarialUnencodableFirstStatement: a first statement
// whose argument pgx cannot encode runs nothing, as a statement that fails
// to prepare: the handler gets the encoding error, not ErrNotClaimed, and
// its next statement carries the claim and runs, as it would without
// PipelineClaim (where pgx refuses the argument before sending anything,
// and the connection stays usable).
func TestPipelineAdversarialUnencodableFirstStatement(t *testing.T) {
	t.Parallel()
	for _, pipelined := range []bool{false, true} {
		t.Run(fmt.Sprint("pipelined=", pipelined), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, pool := newTestStore(t, pgstore.Options{Transactional: true, PipelineClaim: pipelined})
			charges := newCharges(t, pool)
			insert := "INSERT INTO " + charges + " (key, amount) VALUES ($1, $2)"
			learn(t, s, server.Key{Key: "learn"})
			k := server.Key{Key: "unencodable"}
			c, wctx, w, err := s.ClaimWork(ctx, k, "fp")
			require.NoError(t, err)
			require.True(t, c.Acquired)
			t.Cleanup(func() { _ = w.Rollback(ctx) })
			tx, _ := pgstore.Tx(wctx)
			_, err = tx.Exec(wctx, insert, k.Key, struct{ X chan int }{})
			require.Error(t, err)
			require.NotErrorIs(t, err, pgstore.ErrNotClaimed)
			_, err = tx.Exec(wctx, insert, k.Key, 1)
			require.NoError(t, err, "the next statement runs, the key claimed")
			require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusOK}, retention))
			assert.Equal(t, 1, countCharges(t, pool, charges))
		})
	}
}

// effects counts, per key, the outside effects a handler made after its
// first statement through Tx returned without error.
type effects struct {
	mu sync.Mutex
	m  map[string]int
}

func (e *effects) add(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = make(map[string]int)
	}
	e.m[key]++
}

func (e *effects) of(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m[key]
}

// postTo sends the payment request with key to url; noStatement asks the
// handler to answer without a statement.
func postTo(client *http.Client, url, key string, noStatement bool) (reply, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(payBody))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	if noStatement {
		req.Header.Set("X-No-Statement", "1")
	}
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, replayed: resp.Header.Get(server.ReplayedHeader) == "true", body: string(body)}, nil
}

// TestPipelineAdversarialMixedStampede: requests with one key hit three
// middlewares on one table at once: one pipelined, one claiming with
// ClaimWork, one claiming under a lease (Store.Claim and BeginWork); one
// request in six sends no statement. For a new key, a record past its
// retention and a lapsed lease of the same request, exactly one request
// runs each time, and every charge written through Tx is matched by one
// outside effect made after the first statement: none is made by a work
// that did not keep the key.
func TestPipelineAdversarialMixedStampede(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	var fx effects
	handler := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-No-Statement") == "" {
			if err := svc.chargeTx(r, 1000); err != nil {
				http.Error(w, "charge failed", http.StatusInternalServerError)
				return
			}
			fx.add(r.Header.Get("Idempotency-Key"))
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"status":"charged"}`)
	}
	var urls []string
	for _, store := range []server.Store{pipelinedStore(t, svc), svc.store, leasedStore(svc.store)} {
		srv := httptest.NewServer(server.Middleware(store, server.Options{SingleTenant: true})(http.HandlerFunc(handler)))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL+"/payments")
	}
	// The pipelined Store learns the table's OID; every later claim of
	// it is pipelined.
	_, err := postTo(svc.client, urls[0], "learn", false)
	require.NoError(t, err)

	const requests = 60
	stampede := func(key string) (fresh int) {
		var wg sync.WaitGroup
		start := make(chan struct{})
		replies := make([]reply, requests)
		errs := make([]error, requests)
		for i := range requests {
			wg.Go(func() {
				<-start
				replies[i], errs[i] = postTo(svc.client, urls[i%len(urls)], key, i%6 == 5)
			})
		}
		close(start)
		wg.Wait()
		for i, rep := range replies {
			require.NoError(t, errs[i])
			switch {
			case rep.status == http.StatusCreated && !rep.replayed:
				fresh++
			case rep.status == http.StatusCreated, rep.status == http.StatusConflict:
			default:
				t.Errorf("%s: request %d answered %d %s", key, i, rep.status, rep.body)
			}
		}
		return fresh
	}
	exec := func(sql, key string) {
		tag, err := svc.pool.Exec(context.Background(), sql, key)
		require.NoError(t, err)
		require.Equal(t, int64(1), tag.RowsAffected())
	}
	for round := range 4 {
		key := fmt.Sprint("mixed-", round)
		require.Equal(t, 1, stampede(key), "%s: new key, requests that ran", key)
		// The record past its retention: taken afresh.
		exec("UPDATE "+svc.table+" SET expires_at = statement_timestamp() - interval '1 second' WHERE key = $1", key)
		require.Equal(t, 1, stampede(key), "%s: record past its retention, requests that ran", key)
		// A lapsed lease of the same request: taken over.
		exec("UPDATE "+svc.table+" SET state = 'running', status = NULL, header = NULL, body = NULL, "+
			"expires_at = statement_timestamp() - interval '1 second' WHERE key = $1", key)
		require.Equal(t, 1, stampede(key), "%s: lapsed lease, requests that ran", key)
		n := svc.charged(t, key)
		assert.LessOrEqual(t, n, 3, key)
		assert.Equal(t, n, fx.of(key), "%s: outside effects after the first statement, against charges", key)
		exists, completed := svc.stored(t, key)
		assert.True(t, exists && completed, key)
	}
}

// TestPipelineAdversarialHandlerIgnoresRefusal: a repeat whose handler
// ignores ErrNotClaimed, goes on with statements of every kind (each
// refused), leaves a goroutine to use the transaction after it returned,
// and answers 201, is answered 409 while the first runs and a replay of
// the first's answer after: one charge, and the goroutine's statements
// fail with pgx.ErrTxClosed.
func TestPipelineAdversarialHandlerIgnoresRefusal(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	hold, held := make(chan struct{}), make(chan struct{})
	var (
		late     sync.WaitGroup
		lateErrs = make(chan error, 64)
		free     = make(chan struct{}) // the late goroutines go once it closes
		bad      atomic.Int64          // statements of a refused work that did not fail with ErrNotClaimed
	)
	svc.serveIdem(t, pipelinedStore(t, svc), server.Options{}, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == "learn" {
			w.WriteHeader(http.StatusOK)
			return
		}
		ctx := r.Context()
		err := svc.chargeTx(r, 1000)
		if err == nil {
			if r.Header.Get("X-No-Statement") == "" { // the holder
				close(held)
				<-hold
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, "first")
			return
		}
		if !errors.Is(err, pgstore.ErrNotClaimed) {
			bad.Add(1)
		}
		tx, _ := pgstore.Tx(ctx)
		check := func(err error) {
			if !errors.Is(err, pgstore.ErrNotClaimed) {
				bad.Add(1)
			}
		}
		for range 3 {
			check(svc.chargeTx(r, 1))
		}
		_, err = tx.Exec(ctx, "INSERT INTO "+svc.charges+" (key, amount) VALUES ('x', 1); SELECT 1")
		check(err)
		_, err = tx.Begin(ctx)
		check(err)
		rows, err := tx.Query(ctx, "SELECT 1")
		check(err)
		rows.Close()
		_, err = tx.CopyFrom(ctx, pgx.Identifier{svc.charges}, []string{"key", "amount"}, pgx.CopyFromRows([][]any{{"x", int32(1)}}))
		check(err)
		check(tx.SendBatch(ctx, &pgx.Batch{}).Close())
		late.Go(func() {
			<-free
			_, err := tx.Exec(context.Background(), "INSERT INTO "+svc.charges+" (key, amount) VALUES ($1, 1)", "late")
			lateErrs <- err
		})
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, "ignored")
	})
	_, err := postTo(svc.client, svc.url, "learn", false)
	require.NoError(t, err)

	done := make(chan reply, 1)
	go func() {
		rep, _ := postTo(svc.client, svc.url, "k", false)
		done <- rep
	}()
	select {
	case <-held:
	case rep := <-done:
		t.Fatalf("the first request ended without holding the key: %d %s", rep.status, rep.body)
	}
	for range 10 {
		rep, err := postTo(svc.client, svc.url, "k", true)
		require.NoError(t, err)
		assert.Equal(t, http.StatusConflict, rep.status)
		assert.NotContains(t, rep.body, "ignored")
	}
	close(hold)
	first := <-done
	require.Equal(t, http.StatusCreated, first.status)
	require.Equal(t, "first", first.body)
	for range 5 {
		rep, err := postTo(svc.client, svc.url, "k", true)
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, rep.status)
		assert.True(t, rep.replayed)
		assert.Equal(t, "first", rep.body)
	}
	close(free)
	late.Wait()
	close(lateErrs)
	n := 0
	for err := range lateErrs {
		assert.ErrorIs(t, err, pgx.ErrTxClosed)
		n++
	}
	assert.Equal(t, 15, n)
	assert.Equal(t, int64(0), bad.Load())
	assert.Equal(t, 1, svc.charged(t, "k"))
	assert.Equal(t, 0, svc.charged(t, "late")+svc.charged(t, "x"))
}

// backendWaiting returns the pid of the backend waiting for a lock on
// table, once there is one, and requires that it holds exactly one
// advisory lock: the key's, taken by the claim pipelined before the
// statement that waits.
func backendWaiting(t *testing.T, pool *pgxpool.Pool, table string) int32 {
	t.Helper()
	var pid int32
	require.Eventually(t, func() bool {
		err := pool.QueryRow(context.Background(),
			"SELECT pid FROM pg_locks WHERE locktype = 'relation' AND relation = $1::regclass AND NOT granted", table).Scan(&pid)
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
	var locks int
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1", pid).Scan(&locks))
	require.Equal(t, 1, locks, "the claim's lock, held while the statement waits")
	return pid
}

// waitGone returns once backend pid has left pg_stat_activity.
func waitGone(t *testing.T, pool *pgxpool.Pool, pid int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n))
		return n == 0
	}, 10*time.Second, 5*time.Millisecond)
}

// TestPipelineAdversarialInterrupted: a pipelined claim and its INSERT
// are in flight, the claim's lock taken and the INSERT waiting for a
// table lock, when the request's context is cancelled, or its backend is
// terminated, or the claim's read of the store's table (locked) waits
// past statement_timeout. The statement fails with an error that is not
// ErrNotClaimed; whether the handler then gives up or answers anyway, the
// Work's end records nothing; the INSERT never commits; the key is free
// again for the next claim, which runs and commits on the same (one
// connection) pool.
func TestPipelineAdversarialInterrupted(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"cancel", "terminate", "statement_timeout"} {
		for _, end := range []string{"Commit", "Rollback"} {
			t.Run(how+"/"+end, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				cfg := poolConfig(t, 1)
				if how == "statement_timeout" {
					cfg.ConnConfig.RuntimeParams["statement_timeout"] = "200"
				}
				pool := newPool(t, cfg)
				other := newPool(t, poolConfig(t, 3))
				s := newStore(t, pool, pgstore.Options{Transactional: true, PipelineClaim: true})
				charges := newCharges(t, other)
				insert := "INSERT INTO " + charges + " (key, amount) VALUES ($1, 1)"
				learn(t, s, server.Key{Key: "learn"})
				resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte("done")}
				// Prepares the claim's statements and the INSERT on the
				// connection, so that nothing waits before BEGIN.
				w, err := claimInsert(t, s, server.Key{Key: "warm"}, insert)
				require.NoError(t, err)
				require.NoError(t, w.Commit(ctx, resp, retention))

				locker, err := other.Begin(ctx)
				require.NoError(t, err)
				t.Cleanup(func() { _ = locker.Rollback(ctx) })
				locked := charges // the INSERT waits
				if how == "statement_timeout" {
					locked = s.Table() // the claim's reading of the record waits
				}
				_, err = locker.Exec(ctx, "LOCK TABLE "+locked+" IN ACCESS EXCLUSIVE MODE")
				require.NoError(t, err)

				k := server.Key{Key: "k"}
				rctx, cancel := context.WithCancel(ctx)
				defer cancel()
				c, wctx, work, err := s.ClaimWork(rctx, k, "fp")
				require.NoError(t, err)
				require.True(t, c.Acquired)
				t.Cleanup(func() { _ = work.Rollback(ctx) })
				tx, _ := pgstore.Tx(wctx)
				errc := make(chan error, 1)
				go func() {
					_, err := tx.Exec(wctx, insert, k.Key)
					errc <- err
				}()
				pid := backendWaiting(t, other, locked)
				switch how {
				case "cancel":
					cancel()
				case "terminate":
					var ok bool
					require.NoError(t, other.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok))
					require.True(t, ok)
				}
				err = <-errc
				require.Error(t, err)
				require.NotErrorIs(t, err, pgstore.ErrNotClaimed)
				require.NoError(t, locker.Rollback(ctx))
				var refused *server.ClaimRefused
				if end == "Commit" {
					// A handler that answers all the same.
					err := work.Commit(ctx, resp, retention)
					require.Error(t, err, "a work whose first statement failed recorded its outcome")
					require.False(t, errors.As(err, &refused))
				} else {
					err := work.Rollback(ctx)
					require.False(t, errors.As(err, &refused))
				}
				if how != "statement_timeout" {
					waitGone(t, other, pid)
				}
				assert.Equal(t, 0, countCharges(t, other, charges+" WHERE key = 'k'"))
				exists, _ := (&service{pool: other, table: s.Table()}).stored(t, "k")
				assert.False(t, exists)

				w, err = claimInsert(t, s, k, insert)
				require.NoError(t, err, "the key is free again")
				require.NoError(t, w.Commit(ctx, resp, retention))
				assert.Equal(t, 1, countCharges(t, other, charges+" WHERE key = 'k'"))
				assert.Equal(t, connState{txStatus: 'I', dbTxStatus: "active"}, idleConn(t, pool))
			})
		}
	}
}

// TestPipelineAdversarialWorkTimeout: through the middleware, the work's
// timeout fires while the pipelined claim's INSERT waits for a table
// lock: the request is not answered with the handler's 201, nothing is
// recorded or charged, and a retry runs once the table is free.
func TestPipelineAdversarialWorkTimeout(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	var ran atomic.Int64
	svc.serveIdem(t, pipelinedStore(t, svc), server.Options{WorkTimeout: 300 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		err := svc.chargeTx(r, 1000)
		if err == nil {
			ran.Add(1)
		}
		w.WriteHeader(http.StatusCreated) // answers whatever happened
		fmt.Fprint(w, "charged")
	})
	_, err := postTo(svc.client, svc.url, "learn", false)
	require.NoError(t, err)
	require.Equal(t, int64(1), ran.Load())
	ctx := context.Background()
	locker, err := svc.pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = locker.Rollback(ctx) })
	_, err = locker.Exec(ctx, "LOCK TABLE "+svc.charges+" IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	rep, err := postTo(svc.client, svc.url, "k", false)
	require.NoError(t, err)
	assert.NotEqual(t, http.StatusCreated, rep.status, "the work timed out: %s", rep.body)
	require.NoError(t, locker.Rollback(ctx))
	exists, _ := svc.stored(t, "k")
	assert.False(t, exists)
	assert.Equal(t, 0, svc.charged(t, "k"))
	require.Eventually(t, func() bool {
		rep, err := postTo(svc.client, svc.url, "k", false)
		require.NoError(t, err)
		return rep.status == http.StatusCreated
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, svc.charged(t, "k"))
	assert.Equal(t, int64(2), ran.Load())
}

// TestPipelineAdversarialRunOnce: RunOnce on a pipelined store runs a key
// once: a delivery while the first runs gets ErrInFlight, its work's
// INSERT refused and nothing of it committed; later deliveries replay
// the first's result, and one with another fingerprint gets ErrKeyReused,
// whether or not their work sends a statement.
func TestPipelineAdversarialRunOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true, PipelineClaim: true})
	charges := newCharges(t, pool)
	learn(t, s, server.Key{Key: "learn"})
	var after atomic.Int64
	k := server.Key{Key: "job"}
	work := func(statement bool, held, hold chan struct{}) func(context.Context) ([]byte, error) {
		return func(ctx context.Context) ([]byte, error) {
			if statement {
				tx, _ := pgstore.Tx(ctx)
				if _, err := tx.Exec(ctx, "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1)", k.Key); err != nil {
					return nil, err
				}
				after.Add(1)
			}
			if held != nil {
				close(held)
				<-hold
			}
			return []byte("result"), nil
		}
	}
	held, hold := make(chan struct{}), make(chan struct{})
	type answer struct {
		res      []byte
		replayed bool
		err      error
	}
	first := make(chan answer, 1)
	go func() {
		res, replayed, err := server.RunOnce(ctx, s, k, "fp", work(true, held, hold), server.RunOptions{})
		first <- answer{res, replayed, err}
	}()
	select {
	case <-held:
	case a := <-first:
		t.Fatalf("the first run ended without holding the key: %v", a.err)
	}
	for _, statement := range []bool{true, false} {
		_, _, err := server.RunOnce(ctx, s, k, "fp", work(statement, nil, nil), server.RunOptions{})
		assert.ErrorIs(t, err, server.ErrInFlight, "statement %v", statement)
	}
	close(hold)
	a := <-first
	require.NoError(t, a.err)
	require.Equal(t, "result", string(a.res))
	require.False(t, a.replayed)
	for _, statement := range []bool{true, false} {
		res, replayed, err := server.RunOnce(ctx, s, k, "fp", work(statement, nil, nil), server.RunOptions{})
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, "result", string(res))
		_, _, err = server.RunOnce(ctx, s, k, "another fp", work(statement, nil, nil), server.RunOptions{})
		assert.ErrorIs(t, err, server.ErrKeyReused)
	}
	assert.Equal(t, 1, countCharges(t, pool, charges))
	assert.Equal(t, int64(1), after.Load())
}

// TestPipelineAdversarialStartTimeout: with every connection of the pool
// held by a pipelined work, a request for another key waits for one no
// longer than the start timeout: it is answered 503 without running, and
// runs once the connection is free.
func TestPipelineAdversarialStartTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t, poolConfig(t, 1))
	s := newStore(t, pool, pgstore.Options{Transactional: true, PipelineClaim: true})
	charges := newCharges(t, newPool(t, poolConfig(t, 1)))
	learn(t, s, server.Key{Key: "learn"})
	svc := &service{pool: pool, table: s.Table(), charges: charges, client: &http.Client{Timeout: 30 * time.Second}}
	hold, held := make(chan struct{}), make(chan struct{})
	var ran atomic.Int64
	svc.serveIdem(t, s, server.Options{StartTimeout: 200 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		if err := svc.chargeTx(r, 1); err != nil {
			http.Error(w, "charge failed", http.StatusInternalServerError)
			return
		}
		ran.Add(1)
		if r.Header.Get("Idempotency-Key") == "holder" {
			close(held)
			<-hold
		}
		w.WriteHeader(http.StatusCreated)
	})
	done := make(chan reply, 1)
	go func() {
		rep, _ := postTo(svc.client, svc.url, "holder", false)
		done <- rep
	}()
	<-held
	rep, err := postTo(svc.client, svc.url, "other", false)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, rep.status, rep.body)
	close(hold)
	require.Equal(t, http.StatusCreated, (<-done).status)
	rep, err = postTo(svc.client, svc.url, "other", false)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, rep.status, rep.body)
	assert.Equal(t, int64(2), ran.Load())
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+charges).Scan(&n))
	assert.Equal(t, 2, n)
}
