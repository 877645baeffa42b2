package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// pipelinedStore is a Store with Options.PipelineClaim on svc's table and
// pool, beside svc.store: both take the same locks.
func pipelinedStore(t testing.TB, svc *service) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(svc.pool, pgstore.Options{Table: svc.table, Transactional: true, PipelineClaim: true})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// TestPipelinedClaim: with the claim pipelined with the handler's first
// statement, a new key runs once and commits its charge with its record;
// a repeat's statement fails with ErrNotClaimed and the request is
// answered as its claim (a replay, 422 for another body), never with the
// handler's own answer to the failure. While the first runs, each of 15
// repeats is answered 409, their statements refused: one charge, and one
// effect made after the statement. The same handler making its outside
// effect before its first statement makes it once per request, which is
// why the mode is only for handlers that do not (Options.PipelineClaim).
func TestPipelinedClaim(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	var before, after, refused atomic.Int64
	hold := make(chan struct{})
	var holding atomic.Bool
	held := make(chan struct{})
	svc.serveIdem(t, pipelinedStore(t, svc), server.Options{}, func(w http.ResponseWriter, r *http.Request) {
		before.Add(1) // an outside effect made before the first statement: unsafe
		if err := svc.chargeTx(r, 1000); err != nil {
			if errors.Is(err, pgstore.ErrNotClaimed) {
				refused.Add(1)
			}
			http.Error(w, "charge failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		after.Add(1) // an outside effect made after it: made once
		if r.Header.Get("Idempotency-Key") == "held" && holding.CompareAndSwap(false, true) {
			close(held) // the first run holds the key until the repeats are answered
			<-hold
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"status":"charged"}`)
	})

	first := svc.post(t, "p-1")
	require.Equal(t, http.StatusCreated, first.status)
	require.False(t, first.replayed)
	again := svc.post(t, "p-1")
	assert.Equal(t, http.StatusCreated, again.status)
	assert.True(t, again.replayed)
	assert.Equal(t, first.body, again.body)
	assert.Equal(t, 1, svc.charged(t, "p-1"))
	exists, completed := svc.stored(t, "p-1")
	assert.True(t, exists && completed)
	assert.Equal(t, int64(1), refused.Load())

	// 15 repeats while the first holds the key.
	done := make(chan reply, 1)
	go func() { done <- svc.post(t, "held") }()
	select {
	case <-held:
	case rep := <-done:
		t.Fatalf("the first request ended without holding the key: %d %s", rep.status, rep.body)
	}
	for range 15 {
		rep := svc.post(t, "held")
		assert.Equal(t, http.StatusConflict, rep.status)
		assert.NotContains(t, rep.body, "charge failed")
	}
	close(hold)
	require.Equal(t, http.StatusCreated, (<-done).status)
	for range 3 {
		rep := svc.post(t, "held")
		assert.Equal(t, http.StatusCreated, rep.status)
		assert.True(t, rep.replayed)
	}
	assert.Equal(t, 1, svc.charged(t, "held"))
	assert.Equal(t, int64(2), after.Load(), "outside effects after the first statement: one per key")
	assert.Equal(t, int64(2+1+15+3), before.Load(), "outside effects before it: one per request")
	assert.Equal(t, int64(1+15+3), refused.Load())
}

// TestPipelinedClaimWaitMode: in the middleware's wait mode, a repeat of
// a key whose first request holds it is answered 409 at once, as the
// Options.PipelineClaim doc says: its handler ran up to its refused
// statement, and it is answered while the first still holds the key.
func TestPipelinedClaimWaitMode(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	hold, held := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	svc.serveIdem(t, pipelinedStore(t, svc), server.Options{Wait: time.Hour}, func(w http.ResponseWriter, r *http.Request) {
		if err := svc.chargeTx(r, 1000); err != nil {
			http.Error(w, "charge failed", http.StatusInternalServerError)
			return
		}
		if first.CompareAndSwap(false, true) {
			close(held)
			<-hold
		}
		w.WriteHeader(http.StatusCreated)
	})
	done := make(chan reply, 1)
	go func() { done <- svc.post(t, "wait") }()
	select {
	case <-held:
	case rep := <-done:
		t.Fatalf("the first request ended without holding the key: %d %s", rep.status, rep.body)
	}
	assert.Equal(t, http.StatusConflict, svc.post(t, "wait").status, "answered while the first holds the key")
	close(hold)
	assert.Equal(t, http.StatusCreated, (<-done).status)
	assert.Equal(t, 1, svc.charged(t, "wait"))
}

// TestPipelinedClaimStatements: the claim is pipelined with, or sent just
// before, every kind of first statement the handler's transaction offers:
// on a new key the statement runs in the work's transaction and commits
// with its record; on a key another work holds, and on a recorded key,
// it fails with ErrNotClaimed, and the Work's end returns ClaimRefused
// with the claim's answer (in flight; the record).
func TestPipelinedClaimStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true, PipelineClaim: true})
	charges := newCharges(t, pool)
	// The Store's first claim learns the table's OID without deferring.
	learn(t, s, server.Key{Key: "learn"})

	var callbacks atomic.Int64
	statements := firstStatements(charges, &callbacks)
	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}
	for name, stmt := range statements {
		t.Run(name, func(t *testing.T) {
			key := "stmt-" + name
			k := server.Key{Key: key}
			run := func() (server.Work, error) {
				c, wctx, work, err := s.ClaimWork(ctx, k, "fp")
				require.NoError(t, err)
				t.Cleanup(func() { work.Rollback(ctx) }) // a failed check leaves no lock behind
				require.True(t, c.Acquired, "a pipelined claim answers at once")
				tx, ok := pgstore.Tx(wctx)
				require.True(t, ok)
				if stmt == nil {
					return work, nil
				}
				return work, stmt(wctx, tx, key)
			}
			holder, err := run()
			require.NoError(t, err)
			if stmt != nil {
				// Another work's claim, while this one holds the key.
				other, err := run()
				require.ErrorIs(t, err, pgstore.ErrNotClaimed)
				var refused *server.ClaimRefused
				require.ErrorAs(t, other.Rollback(ctx), &refused)
				assert.False(t, refused.Claim.Acquired)
				assert.False(t, refused.Claim.Record.Completed, "in flight")
			}
			require.NoError(t, holder.Commit(ctx, resp, retention))
			want := 1
			if stmt == nil {
				want = 0
			}
			assert.Equal(t, want, countCharges(t, pool, charges+" WHERE key = '"+key+"'"))

			// A repeat once the key is recorded: refused, the record in
			// the answer, and nothing of its statement committed.
			repeat, err := run()
			if stmt != nil {
				require.ErrorIs(t, err, pgstore.ErrNotClaimed)
			}
			var refused *server.ClaimRefused
			require.ErrorAs(t, repeat.Commit(ctx, resp, retention), &refused)
			assert.True(t, refused.Claim.Record.Completed)
			assert.Equal(t, "ok", string(refused.Claim.Record.Response.Body))
			assert.Equal(t, want, countCharges(t, pool, charges+" WHERE key = '"+key+"'"))
		})
	}
	assert.Equal(t, int64(2), callbacks.Load(), "the batch's callbacks ran once each, for the work that held its key only")
}

// firstStatement is a first statement of a handler's work, writing one
// charge for key through tx; nil is a handler that sends none.
type firstStatement func(ctx context.Context, tx pgstore.DBTX, key string) error

// firstStatements returns, by name, a first statement of every kind the
// work's transaction offers, each writing one charge in the table charges
// (key, amount): those a pipelined claim shares its round trip with and
// those it is sent before alone. Each callback of the batch that has
// them adds 1 to callbacks.
func firstStatements(charges string, callbacks *atomic.Int64) map[string]firstStatement {
	insert := "INSERT INTO " + charges + " (key, amount) VALUES ($1, 1)"
	return map[string]firstStatement{
		"Exec": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			_, err := tx.Exec(ctx, insert, key)
			return err
		},
		"Exec without arguments": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			_, err := tx.Exec(ctx, "INSERT INTO "+charges+" (key, amount) VALUES ('"+key+"', 1); SELECT 1")
			return err
		},
		"Exec with a query option": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			_, err := tx.Exec(ctx, insert, pgx.QueryExecModeSimpleProtocol, key)
			return err
		},
		"Query": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			rows, err := tx.Query(ctx, insert+" RETURNING amount", key)
			if err != nil {
				return err
			}
			n, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err == nil && len(n) != 1 {
				err = fmt.Errorf("%d rows", len(n))
			}
			return err
		},
		"Query left open": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			rows, err := tx.Query(ctx, insert+" RETURNING amount", key)
			_ = rows // left for the end of the work to close
			return err
		},
		"QueryRow": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			var n int32
			return tx.QueryRow(ctx, insert+" RETURNING amount", key).Scan(&n)
		},
		"SendBatch": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			b := &pgx.Batch{}
			b.Queue(insert, key)
			b.Queue("SELECT 1")
			br := tx.SendBatch(ctx, b)
			if _, err := br.Exec(); err != nil {
				br.Close()
				return err
			}
			return br.Close()
		},
		"SendBatch with callbacks": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			b := &pgx.Batch{}
			b.Queue(insert, key).Exec(func(pgconn.CommandTag) error { callbacks.Add(1); return nil })
			b.Queue("SELECT $1::int", 1).QueryRow(func(row pgx.Row) error {
				callbacks.Add(1)
				var n int
				return row.Scan(&n)
			})
			return tx.SendBatch(ctx, b).Close()
		},
		"CopyFrom": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{charges}, []string{"key", "amount"}, pgx.CopyFromRows([][]any{{key, int32(1)}}))
			return err
		},
		"Begin (a savepoint)": func(ctx context.Context, tx pgstore.DBTX, key string) error {
			sp, err := tx.Begin(ctx)
			if err != nil {
				return err
			}
			if _, err := sp.Exec(ctx, insert, key); err != nil {
				return err
			}
			return sp.Commit(ctx)
		},
		"none": nil,
	}
}

// claimInsert claims k through s and runs insert (a charge of k) as the
// work's first statement, returning the Work and the statement's error.
// The Work is rolled back when the test ends.
func claimInsert(t *testing.T, s *pgstore.Store, k server.Key, insert string) (server.Work, error) {
	t.Helper()
	ctx := context.Background()
	c, wctx, w, err := s.ClaimWork(ctx, k, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	t.Cleanup(func() { _ = w.Rollback(ctx) })
	tx, ok := pgstore.Tx(wctx)
	require.True(t, ok)
	_, err = tx.Exec(wctx, insert, k.Key)
	return w, err
}

// requireRefused requires the end of w to report its claim refused, and
// returns the claim's answer.
func requireRefused(t *testing.T, w server.Work) server.Claim {
	t.Helper()
	var refused *server.ClaimRefused
	require.ErrorAs(t, w.Rollback(context.Background()), &refused)
	require.False(t, refused.Claim.Acquired)
	return refused.Claim
}

// learn makes the Store's first claim, which learns the table's OID.
func learn(t *testing.T, s *pgstore.Store, k server.Key) {
	t.Helper()
	c, _, work, err := s.ClaimWork(context.Background(), k, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	require.NoError(t, work.Rollback(context.Background()))
}

// TestPipelinedClaimReplaces: a pipelined claim takes a key whose record
// is past its retention, or whose lease lapsed under the same
// fingerprint, and its Commit replaces the row; a lapsed lease under
// another fingerprint, and a live one, are refused as in flight.
func TestPipelinedClaimReplaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true, PipelineClaim: true})
	learn(t, s, server.Key{Key: "learn"})
	resp := server.StoredResponse{Status: http.StatusOK, Body: []byte("second")}
	expire := func(k server.Key) {
		_, err := pool.Exec(ctx, "UPDATE "+s.Table()+" SET expires_at = statement_timestamp() - interval '1 second' WHERE key = $1", k.Key)
		require.NoError(t, err)
	}
	claim := func(k server.Key, fp string) (server.Work, error) {
		c, wctx, work, err := s.ClaimWork(ctx, k, fp)
		require.NoError(t, err)
		t.Cleanup(func() { work.Rollback(ctx) })
		require.True(t, c.Acquired)
		tx, _ := pgstore.Tx(wctx)
		_, err = tx.Exec(ctx, "SELECT $1::text", "first statement")
		return work, err
	}

	// A completed record past its retention.
	old := server.Key{Key: "retention-over"}
	w, err := claim(old, "fp")
	require.NoError(t, err)
	require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusOK, Body: []byte("first")}, retention))
	expire(old)
	w, err = claim(old, "another fp")
	require.NoError(t, err, "a record past its retention is claimed afresh")
	require.NoError(t, w.Commit(ctx, resp, retention))
	rec, err := s.Claim(ctx, old, "another fp", lease)
	require.NoError(t, err)
	assert.Equal(t, "second", string(rec.Record.Response.Body))

	// A running record under a lease (Store.Claim), live then lapsed.
	for _, tc := range []struct {
		fp    string
		taken bool
	}{{"fp", true}, {"another fp", false}} {
		k := server.Key{Key: "lapsed-" + tc.fp}
		c, err := s.Claim(ctx, k, "fp", lease)
		require.NoError(t, err)
		require.True(t, c.Acquired)
		w, err := claim(k, tc.fp)
		require.ErrorIs(t, err, pgstore.ErrNotClaimed, "a live lease is not taken")
		var refused *server.ClaimRefused
		require.ErrorAs(t, w.Rollback(ctx), &refused)
		assert.Equal(t, "fp", refused.Claim.Record.Fingerprint, "the running record is reported")
		expire(k)
		w, err = claim(k, tc.fp)
		if !tc.taken {
			require.ErrorIs(t, err, pgstore.ErrNotClaimed, "a lapsed lease under another fingerprint is never taken")
			require.ErrorAs(t, w.Rollback(ctx), &refused)
			assert.False(t, refused.Claim.Record.Completed)
			continue
		}
		require.NoError(t, err)
		require.NoError(t, w.Commit(ctx, resp, retention))
		rec, err := s.Claim(ctx, k, tc.fp, lease)
		require.NoError(t, err)
		assert.True(t, rec.Record.Completed)
		assert.Equal(t, "second", string(rec.Record.Response.Body))
		assert.ErrorIs(t, s.Complete(ctx, k, c.Token, resp, retention), server.ErrLeaseLost, "the lapsed lease's token is fenced out")
	}
}

// TestPipelinedClaimTableCreatedAgain: when the table is created anew (a
// new OID), the first pipelined claim locks nothing of use and is refused
// as in flight, its statement not run; it learns the new OID, and the
// next claim holds.
func TestPipelinedClaimTableCreatedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true, PipelineClaim: true})
	charges := newCharges(t, pool)
	learn(t, s, server.Key{Key: "learn"})
	_, err := pool.Exec(ctx, "DROP TABLE "+s.Table())
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	k := server.Key{Key: "k"}
	insert := "INSERT INTO " + charges + " (key, amount) VALUES ($1, 1)"
	run := func() (server.Work, error) { return claimInsert(t, s, k, insert) }
	w, err := run()
	require.ErrorIs(t, err, pgstore.ErrNotClaimed)
	assert.False(t, requireRefused(t, w).Record.Completed)
	assert.Equal(t, 0, countCharges(t, pool, charges))
	w, err = run()
	require.NoError(t, err)
	require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusOK}, retention))
	assert.Equal(t, 1, countCharges(t, pool, charges))
}

// TestPipelinedClaimStatementFails: a first statement that PostgreSQL
// refuses to prepare runs nothing, the claim with it: the handler gets
// the statement's error, not ErrNotClaimed, and its next statement
// carries the claim. A first statement that fails once run fails the
// work's transaction, the claim taken: the Work's Commit rolls it back,
// and the key is free again.
func TestPipelinedClaimStatementFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true, PipelineClaim: true})
	charges := newCharges(t, pool)
	learn(t, s, server.Key{Key: "learn"})
	k := server.Key{Key: "bad"}
	_, wctx, w, err := s.ClaimWork(ctx, k, "fp")
	require.NoError(t, err)
	t.Cleanup(func() { w.Rollback(ctx) })
	tx, _ := pgstore.Tx(wctx)
	_, err = tx.Exec(ctx, "INSERT INTO no_such_table VALUES ($1)", 1)
	require.Error(t, err)
	require.NotErrorIs(t, err, pgstore.ErrNotClaimed)
	_, err = tx.Exec(ctx, "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1)", k.Key)
	require.NoError(t, err, "the claim goes with the next statement")
	require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusOK}, retention))
	assert.Equal(t, 1, countCharges(t, pool, charges))

	k = server.Key{Key: "fails-once-run"}
	_, wctx, w2, err := s.ClaimWork(ctx, k, "fp")
	require.NoError(t, err)
	t.Cleanup(func() { w2.Rollback(ctx) })
	tx, _ = pgstore.Tx(wctx)
	_, err = tx.Exec(ctx, "INSERT INTO "+charges+" (key, amount) VALUES ($1, $2)", k.Key, "not a number")
	require.Error(t, err)
	require.NotErrorIs(t, err, pgstore.ErrNotClaimed)
	err = w2.Commit(ctx, server.StoredResponse{Status: http.StatusOK}, retention)
	require.Error(t, err)
	var refused *server.ClaimRefused
	require.False(t, errors.As(err, &refused))
	c, _, w3, err := s.ClaimWork(ctx, k, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	require.NoError(t, w3.Rollback(ctx))
	exists, _ := (&service{pool: pool, table: s.Table()}).stored(t, k.Key)
	assert.False(t, exists)
}

// TestPipelinedClaimRoundTrips: once the connection has prepared its
// statements, a new key costs two round trips (the claim with the
// handler's statement; the record with COMMIT), one less than ClaimWork
// without pipelining; a refused repeat one before its answer (the claim
// with the statement, which reports what the key holds) and the ROLLBACK
// after it, as ClaimWork's; a handler without a statement two.
func TestPipelinedClaimRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, wire := countingPool(t)
	s := newStore(t, pool, pgstore.Options{Transactional: true, PipelineClaim: true})
	learn(t, s, server.Key{Key: "learn"})
	n := 0
	request := func(key string, statement bool) (server.Work, error) {
		_, wctx, w, err := s.ClaimWork(ctx, server.Key{Key: key}, "fp")
		require.NoError(t, err)
		t.Cleanup(func() { w.Rollback(ctx) })
		if statement {
			tx, _ := pgstore.Tx(wctx)
			_, err = tx.Exec(ctx, "SELECT $1::int", 1)
		}
		return w, err
	}
	cycle := func() (newKey, repeat, rollback, none int64) {
		n++
		key := fmt.Sprint("rt-", n)
		newKey, _ = wire.measure(func() {
			w, err := request(key, true)
			require.NoError(t, err)
			require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusOK}, retention))
		})
		var w server.Work
		repeat, _ = wire.measure(func() {
			var err error
			w, err = request(key, true)
			require.ErrorIs(t, err, pgstore.ErrNotClaimed)
		})
		rollback, _ = wire.measure(func() {
			var refused *server.ClaimRefused
			require.ErrorAs(t, w.Rollback(ctx), &refused)
			require.True(t, refused.Claim.Record.Completed)
			s.Settle() // the ROLLBACK, in the background
		})
		none, _ = wire.measure(func() {
			w, err := request(key+"-none", false)
			require.NoError(t, err)
			require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusOK}, retention))
		})
		return
	}
	cycle() // prepares the statements
	newKey, repeat, rollback, none := cycle()
	assert.Equal(t, int64(2), newKey, "new key")
	assert.Equal(t, int64(1), repeat, "refused repeat, to its answer")
	assert.Equal(t, int64(1), rollback, "refused repeat, after its answer")
	assert.Equal(t, int64(2), none, "new key, no statement")
}

// BenchmarkPipelinedClaim times, without HTTP, a new key and a repeat of a
// recorded one through ClaimWork, the handler's one INSERT and the Work's
// end, with the claim pipelined with the INSERT and without, side by
// side on one pool:
//
//	go test -run '^$' -bench PipelinedClaim -benchtime=2000x ./server/pgstore/
func BenchmarkPipelinedClaim(b *testing.B) {
	ctx := context.Background()
	pool := newPool(b, poolConfig(b, 4))
	charges := newCharges(b, pool)
	insert := "INSERT INTO " + charges + " (key, amount) VALUES ($1, 1)"
	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte(`{"id":"ch_1"}`)}
	for _, pipelined := range []bool{false, true} {
		s := newStore(b, pool, pgstore.Options{Transactional: true, PipelineClaim: pipelined})
		name := "claim-first"
		if pipelined {
			name = "pipelined"
		}
		run := func(key string) (bool, error) {
			c, wctx, w, err := s.ClaimWork(ctx, server.Key{Key: key}, "fp")
			if err != nil || !c.Acquired {
				return false, err
			}
			tx, _ := pgstore.Tx(wctx)
			if _, err := tx.Exec(wctx, insert, key); err != nil {
				var refused *server.ClaimRefused
				if errors.As(w.Rollback(ctx), &refused) {
					return false, nil
				}
				return false, err
			}
			return true, w.Commit(ctx, resp, retention)
		}
		n := 0
		b.Run(name+"/new-key", func(b *testing.B) {
			for b.Loop() {
				n++
				if ran, err := run(fmt.Sprint("new-", n)); err != nil || !ran {
					b.Fatal(ran, err)
				}
			}
		})
		_, _ = run("repeat")
		b.Run(name+"/repeat", func(b *testing.B) {
			for b.Loop() {
				if ran, err := run("repeat"); err != nil || ran {
					b.Fatal(ran, err)
				}
			}
		})
		s.Settle()
	}
}
