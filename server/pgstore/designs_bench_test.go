package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// clients is the concurrency of the throughput benchmarks.
const clients = 16

// BenchmarkTransactional sets the two ways of claiming a key in
// transactional mode side by side, with their floors, in one run: the lock
// of the work's own transaction (ClaimWork) and the lease (Claim, then
// BeginWork). Each new key writes one charge row through the work's
// transaction and commits it with the stored response, as a payment
// handler does; the floors are one round trip that does nothing (SELECT
// 1) and the bare handler's write (the same charge row, one durable
// autocommit INSERT). Run with
//
//	IDEM_TEST_DATABASE=postgres://... go test -run '^$' -bench Transactional -count 6 ./server/pgstore/ | tee new.txt
//	go run golang.org/x/perf/cmd/benchstat@latest new.txt
//
// Each case reports the median and 99th percentile latency (p50-µs,
// p99-µs); the "16 clients" cases also report throughput (ops/s). Where
// PostgreSQL runs on the same machine, each also reports the CPU time its
// backends spent per operation (db-cpu-µs/op): the database's work, which
// a loaded machine disturbs far less than latency.
func BenchmarkTransactional(b *testing.B) {
	ctx := context.Background()
	resp := server.StoredResponse{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(`{"id":"ch_1","amount":1000}`),
	}
	type env struct {
		pool    *pgxpool.Pool
		store   *pgstore.Store
		charges string
	}
	insert := func(e *env) string { return "INSERT INTO " + e.charges + " (key, amount) VALUES ($1, 1000)" }
	bare := func(b *testing.B, e *env, key string) {
		_, err := e.pool.Exec(ctx, insert(e), key)
		require.NoError(b, err)
	}
	lock := func(b *testing.B, e *env, key string) {
		k := server.Key{Scope: "tenant", Key: key}
		c, wctx, w, err := e.store.ClaimWork(ctx, k, "fp")
		require.NoError(b, err)
		require.True(b, c.Acquired)
		tx, _ := pgstore.Tx(wctx)
		_, err = tx.Exec(wctx, insert(e), key)
		require.NoError(b, err)
		require.NoError(b, w.Commit(ctx, resp, retention))
	}
	lease := func(b *testing.B, e *env, key string) {
		k := server.Key{Scope: "tenant", Key: key}
		c, err := e.store.Claim(ctx, k, "fp", 30*time.Second)
		require.NoError(b, err)
		require.True(b, c.Acquired)
		wctx, w, err := e.store.BeginWork(ctx, k, c.Token)
		require.NoError(b, err)
		tx, _ := pgstore.Tx(wctx)
		_, err = tx.Exec(wctx, insert(e), key)
		require.NoError(b, err)
		require.NoError(b, w.Commit(ctx, resp, retention))
	}
	cases := []struct {
		name     string
		parallel bool
		// prepare runs once; op runs operation i, timed.
		prepare func(b *testing.B, e *env)
		op      func(b *testing.B, e *env, i int)
	}{
		{name: "floor SELECT 1", op: func(b *testing.B, e *env, _ int) {
			var one int
			require.NoError(b, e.pool.QueryRow(ctx, "SELECT 1").Scan(&one))
		}},
		{name: "floor durable INSERT (bare handler)", op: func(b *testing.B, e *env, i int) { bare(b, e, fmt.Sprint("bare-", i)) }},
		{name: "new key lock", op: func(b *testing.B, e *env, i int) { lock(b, e, fmt.Sprint("lock-", i)) }},
		{name: "new key lease", op: func(b *testing.B, e *env, i int) { lease(b, e, fmt.Sprint("lease-", i)) }},
		{
			name:    "replay lock",
			prepare: func(b *testing.B, e *env) { lock(b, e, "done") },
			op: func(b *testing.B, e *env, _ int) {
				c, _, _, err := e.store.ClaimWork(ctx, server.Key{Scope: "tenant", Key: "done"}, "fp")
				require.NoError(b, err)
				require.True(b, c.Record.Completed)
			},
		},
		{
			name:    "replay lease",
			prepare: func(b *testing.B, e *env) { lease(b, e, "done") },
			op: func(b *testing.B, e *env, _ int) {
				c, err := e.store.Claim(ctx, server.Key{Scope: "tenant", Key: "done"}, "fp", 30*time.Second)
				require.NoError(b, err)
				require.True(b, c.Record.Completed)
			},
		},
		{name: "16 clients durable INSERT (bare handler)", parallel: true, op: func(b *testing.B, e *env, i int) { bare(b, e, fmt.Sprint("bare-", i)) }},
		{name: "16 clients new key lock", parallel: true, op: func(b *testing.B, e *env, i int) { lock(b, e, fmt.Sprint("lock-", i)) }},
		{name: "16 clients new key lease", parallel: true, op: func(b *testing.B, e *env, i int) { lease(b, e, fmt.Sprint("lease-", i)) }},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			pool, cpu := benchPool(b, clients+4)
			e := &env{pool: pool, store: newStore(b, pool, pgstore.Options{Transactional: true}), charges: newCharges(b, pool)}
			if bc.prepare != nil {
				bc.prepare(b, e)
			}
			// Open the connections and prepare the statements on them.
			warm(b, clients, func(i int) { bc.op(b, e, 1_000_000+i) })
			e.store.Settle()
			b.ReportAllocs()
			cpu.begin(b)
			if bc.parallel {
				concurrently(b, clients, func(i int) { bc.op(b, e, i) })
			} else {
				var lat latencies
				i := 0
				for b.Loop() {
					lat.time(func() { bc.op(b, e, i) })
					i++
				}
				lat.report(b)
			}
			b.StopTimer()
			e.store.Settle()
			cpu.report(b, b.N)
		})
	}
}

// warm runs op n times from n goroutines at once, so that a pool opens n
// connections and each prepares its statements.
func warm(b *testing.B, n int, op func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { op(i) })
	}
	wg.Wait()
}

// concurrently runs op b.N times in all from n goroutines, and reports
// the throughput (ops/s) and the latency of each operation.
func concurrently(b *testing.B, n int, op func(i int)) {
	var (
		next atomic.Int64
		mu   sync.Mutex
		all  latencies
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	for range n {
		wg.Go(func() {
			var lat latencies
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					break
				}
				lat.time(func() { op(int(i)) })
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	all.report(b)
}
