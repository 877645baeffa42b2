package otelidem_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

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
//   - replays counted equal the replays the proxy passed on, delivered
//     (the ones the client saw) or dropped: the same answers, counted at
//     both ends of one hop;
//   - replays counted are at most the answers the proxy dropped: a
//     replay is sent only to an operation whose final answer (an
//     execution's or a replay's) was dropped, and a dropped answer that
//     was not final (a 409 or 503 of the server's) is followed by none;
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
	cobs, jobs := tel.clientObservers(t)
	j, err := idem.OpenJournal(filepath.Join(t.TempDir(), "client.journal"), idem.JournalOptions{Observer: jobs})
	require.NoError(t, err)
	defer j.Close()
	var tries atomic.Int64 // attempts idem made, each net/http resend within its attempt
	c, err := idem.New(idem.Options{Journal: j, Observer: cobs, OnAttempt: func(idem.Attempt) { tries.Add(1) }, MaxAttempts: 30, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetryAfter: 50 * time.Millisecond})
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

	require.NoError(t, j.Close()) // the last answers are committed
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
	// The proxy reads every answer whole before it delivers or drops it
	// (one it fails to read it resets uncounted: none here, on loopback,
	// from a server that finishes every answer it starts).
	assert.Equal(t, st.Replayed+st.DroppedReplayed, results["replayed"],
		"every replay counted went through the proxy, delivered or dropped")
	assert.LessOrEqual(t, results["replayed"], st.Dropped, "a replay follows a dropped final answer")
	assert.Equal(t, attempts.Load(), st.Requests, "every attempt reached the proxy once")

	// Whether or not the store names its system (db.system.name).
	ops2 := got[otelidem.StoreOperationDuration]
	assert.Equal(t, answered, ops2.with("db.operation.name=claim"), "one claim per request")
	assert.Equal(t, int64(ops), ops2.with("db.operation.name=commit"), "one commit per execution")
	assert.Equal(t, points{"": 0}, got[otelidem.ServerClaimsActive], "no claim left running")
	assert.NotContains(t, got, otelidem.ServerTakeovers, "transactional claims have no lease to take over")

	// The client half, its observers recording to tel too: every
	// operation completed and made attempts; the attempts are the ones
	// the proxy received (net/http's resends of a request on a dead
	// keep-alive connection included), and the retries by reason add up
	// to them less the operations, exactly: each attempt but an
	// operation's first is a retry, idem's own (tries) or net/http's
	// resend (a transport_error without error.type). The replays the
	// client was answered with are the ones the proxy delivered; none
	// came from the journal; nothing is left pending.
	sent, made := sum(got[otelidem.ClientAttempts]), sum(tel.counts(t, otelidem.ClientAttempts))
	retries := got[otelidem.ClientRetries]
	reasons := map[string]int64{}
	var resends int64
	for attrs, n := range retries {
		set := strings.Split(attrs, ",")
		assert.Contains(t, set, "http.request.method=POST")
		reasons[attrs[strings.LastIndex(attrs, "idem.retry.reason=")+len("idem.retry.reason="):]] += n
		if slices.Equal(set, []string{"http.request.method=POST", "idem.retry.reason=transport_error"}) {
			resends += n
		}
	}
	t.Logf("client: %d operations, %d attempts, retries by reason %v (%d of them net/http's resends)", made, sent, reasons, resends)
	assert.Equal(t, int64(ops), made, "one attempts record per operation")
	assert.Equal(t, attempts.Load(), sent, "the client counted the attempts its calls report")
	assert.Equal(t, st.Requests, sent, "and the proxy received them")
	assert.Equal(t, sent-made, sum(retries), "retries by reason add up to attempts less operations")
	assert.Equal(t, tries.Load()-ops, sum(retries)-resends, "idem's own retries: each attempt it made but an operation's first")
	for r := range reasons {
		assert.Contains(t, []string{otelidem.ReasonStatus, otelidem.ReasonTimeout, otelidem.ReasonTransportError}, r)
	}
	const end = "http.request.method=POST,idem.from_journal=false,idem.outcome=completed,idem.replayed=%t,idem.resumed=false,server.address=127.0.0.1"
	durations := got[otelidem.ClientOperationDuration]
	assert.Equal(t, int64(ops), durations[fmt.Sprintf(end, false)]+durations[fmt.Sprintf(end, true)], "every operation completed: %v", durations)
	assert.Equal(t, replays.Load(), durations[fmt.Sprintf(end, true)], "the operations answered with a replay")
	assert.Equal(t, st.Replayed, durations[fmt.Sprintf(end, true)], "are the replays the proxy delivered")
	assert.NotContains(t, got, otelidem.ClientBudgetExhausted)
	assert.Equal(t, points{"": 0}, got[otelidem.ClientOperationsPending], "nothing left pending")
	var replayedSpans int64
	for _, s := range tel.spans.Ended() {
		if s.Name() != otelidem.ClientOperationSpan {
			continue
		}
		attrs := attribute.NewSet(s.Attributes()...)
		if v, ok := attrs.Value(otelidem.ReplayedKey); ok && v.AsBool() {
			replayedSpans++
		}
	}
	assert.Equal(t, replays.Load(), replayedSpans, "the spans mark the same replays")
}
