package otelidem_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/faultproxy"
	"github.com/idemhq/idem/otelidem"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// testPool returns a pool on IDEM_TEST_DATABASE, or skips the test when
// it is unset (fails it under CI=true).
func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	dsn := os.Getenv("IDEM_TEST_DATABASE")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("IDEM_TEST_DATABASE is not set; CI needs the PostgreSQL tests")
		}
		t.Skip("IDEM_TEST_DATABASE not set, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// TestEndToEndCounts sends charges from the idem client through a proxy
// that drops answers after the service committed them, resets
// connections and injects 503s, to a charges handler behind the
// middleware on PostgreSQL in transactional mode, and checks the server's
// metrics against what the proxy, the client and the database saw:
//
//   - executions counted equal the distinct operations, and the charges
//     in the table;
//   - every request the proxy forwarded is counted once, with some result;
//   - replays counted equal the answers the proxy dropped (each dropped
//     answer's operation is sent again, and the proxy drops an answer
//     only once the service has finished, so the next attempt that gets
//     through is a replay), and are at least the replays the proxy
//     delivered, which are the ones the client saw;
//   - each request asked the store for one claim, and each execution
//     committed once; no claim is left running.
func TestEndToEndCounts(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	ctx := context.Background()
	table := "otelidem_e2e_" + strings.ToLower(rand.Text()[:10])
	_, err := pool.Exec(ctx, "CREATE TABLE "+table+" (ref text NOT NULL, amount bigint NOT NULL)")
	require.NoError(t, err)
	t.Cleanup(func() { pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+table+", "+table+"_keys") })
	store, err := pgstore.New(pool, pgstore.Options{Table: table + "_keys", Transactional: true})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))

	tel := newTelemetry()
	mux := http.NewServeMux()
	mux.Handle("POST /charges", server.Middleware(store, server.Options{SingleTenant: true, Observer: tel.observer(t, false)})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tx, ok := pgstore.Tx(r.Context())
			if !assert.True(t, ok, "the charge is written in the request's transaction") {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			ref := r.URL.Query().Get("ref")
			if _, err := tx.Exec(r.Context(), "INSERT INTO "+table+" (ref, amount) VALUES ($1, 1000)", ref); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"ref":%q}`, ref)
		})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	proxy, err := faultproxy.Start(faultproxy.Config{
		Upstream: srv.URL, Drop: 0.3, Reset: 0.1, Unavailable: 0.1,
		MaxDelay: time.Millisecond, Seed: uint64(time.Now().UnixNano()),
	})
	require.NoError(t, err)
	defer proxy.Close()
	j, err := idem.OpenJournal(filepath.Join(t.TempDir(), "client.journal"), idem.JournalOptions{})
	require.NoError(t, err)
	defer j.Close()
	c, err := idem.New(idem.Options{Journal: j, MaxAttempts: 30, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetryAfter: 50 * time.Millisecond})
	require.NoError(t, err)

	const ops = 120
	var replays, attempts atomic.Int64
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/charges?ref=op-%d", proxy.URL(), i), strings.NewReader(`{"amount":1000}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				if !assert.NoError(t, err, "op %d", i) {
					continue
				}
				assert.Equal(t, http.StatusCreated, resp.StatusCode, "op %d: %s", i, resp.Body)
				attempts.Add(int64(resp.Attempts))
				if resp.Replayed {
					replays.Add(1)
				}
			}
		})
	}
	for i := range ops {
		work <- i
	}
	close(work)
	wg.Wait()

	var charged, refs int64
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT ref) FROM "+table).Scan(&charged, &refs))
	require.Equal(t, int64(ops), charged, "every operation charged once")
	require.Equal(t, int64(ops), refs)

	st := proxy.Stats()
	got := tel.collect(t)
	results := map[string]int64{}
	var answered int64
	for attrs, n := range got[otelidem.ServerRequests] {
		assert.True(t, strings.HasPrefix(attrs, "http.request.method=POST,http.route=/charges,idem.result="), attrs)
		results[attrs[strings.LastIndexByte(attrs, '=')+1:]] += n
		answered += n
	}
	t.Logf("%d operations, %d attempts: the proxy forwarded %d (dropped %d answers, reset %d, injected %d 503s); server results %v; the client saw %d replays",
		ops, attempts.Load(), st.Forwarded, st.Dropped, st.Resets, st.Unavailable, results, replays.Load())
	require.Positive(t, st.Dropped, "the proxy lost answers")

	assert.Equal(t, int64(ops), results["executed"], "executions counted equal the distinct operations")
	assert.Equal(t, st.Forwarded, answered, "every forwarded request is counted once")
	assert.Equal(t, replays.Load(), st.Replayed, "the replays the proxy delivered are the ones the client saw")
	assert.Equal(t, st.Dropped, results["replayed"], "each answer dropped is followed by one replay")
	assert.GreaterOrEqual(t, results["replayed"], st.Replayed, "every replay delivered was counted")
	assert.Equal(t, attempts.Load(), st.Requests, "every attempt reached the proxy once")

	ops2 := got[otelidem.StoreOperationDuration]
	assert.Equal(t, answered, ops2["db.operation.name=claim"], "one claim per request")
	assert.Equal(t, int64(ops), ops2["db.operation.name=commit"], "one commit per execution")
	assert.Equal(t, points{"": 0}, got[otelidem.ServerClaimsActive], "no claim left running")
	assert.NotContains(t, got, otelidem.ServerTakeovers, "transactional claims have no lease to take over")

	// The client half: with the client's observer recording to tel too,
	// add here
	//   - idem.client.retries summed over idem.retry.reason equals
	//     attempts.Load() minus ops;
	//   - idem.client.attempts' sum equals attempts.Load();
	//   - idem.client.operation.duration's count with idem.outcome=replayed
	//     equals replays.Load() and the server's replays delivered
	//     (st.Replayed);
	//   - idem.client.operations.pending is back to 0.
}
