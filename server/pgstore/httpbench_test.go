package pgstore_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// httpAPI serves a handler answering 201 behind the middleware over a
// pgstore on pool; in transactional mode the handler writes one row
// through pgstore.Tx. With leased, the middleware sees the store without
// ClaimWork, and claims under a lease.
func httpAPI(t testing.TB, pool *pgxpool.Pool, opts pgstore.Options, leased bool) (url string, client *http.Client, store *pgstore.Store) {
	s := newStore(t, pool, opts)
	charges := ""
	if opts.Transactional {
		charges = newCharges(t, pool)
	}
	var ms server.Store = s
	if leased {
		ms = leasedStore(s)
	}
	h := server.Middleware(ms, server.Options{SingleTenant: true})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tx, ok := pgstore.Tx(r.Context()); ok {
			if _, err := tx.Exec(r.Context(), "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1)", r.Header.Get("Idempotency-Key")); err != nil {
				http.Error(w, "charge failed", http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1"}`)
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client = srv.Client()
	t.Cleanup(client.CloseIdleConnections)
	return srv.URL + "/charges", client, s
}

// send posts one charge with key and checks the answer.
func send(t testing.TB, client *http.Client, url, key string, replayed bool) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(payBody))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, replayed, resp.Header.Get(server.ReplayedHeader) == "true")
}

// TestHTTPRoundTrips counts the database round trips one request costs
// through the middleware. Without transactions: a replay one, a new key two
// (claim, complete). In transactional mode, claimed by the work's
// transaction (ClaimWork): a new key two (BEGIN, the lock and the lookup
// pipelined; the record pipelined with COMMIT) plus the handler's own
// statement, and a replay one before the answer and a ROLLBACK after it.
// Claimed under a lease (Claim, BeginWork): a new key three (claim, BEGIN,
// the fenced update pipelined with COMMIT) plus the handler's statement.
func TestHTTPRoundTrips(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		transactional  bool
		leased         bool
		newKey, replay int64
	}{
		{"without transactions", false, false, 2, 1},
		{"transactional", true, false, 2 + 1, 1 + 1},
		{"transactional under a lease", true, true, 3 + 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool, w := countingPool(t)
			url, client, s := httpAPI(t, pool, pgstore.Options{Transactional: tc.transactional}, tc.leased)
			send(t, client, url, "warm-up", false) // prepares the statements
			send(t, client, url, "warm-up", true)
			s.Settle()

			newKey, _ := w.measure(func() { send(t, client, url, "k", false) })
			replay, _ := w.measure(func() { send(t, client, url, "k", true); s.Settle() })
			require.Equal(t, tc.newKey, newKey, "new key")
			require.Equal(t, tc.replay, replay, "replay")
		})
	}
}

// BenchmarkHTTP measures requests through the middleware one at a time
// over loopback, keep-alive, against a pgstore. Run with
//
//	IDEM_TEST_DATABASE=postgres://... go test -run '^$' -bench HTTP ./server/pgstore/
func BenchmarkHTTP(b *testing.B) {
	cases := []struct {
		name          string
		transactional bool
		durable       bool
		replay        bool
	}{
		{"replay", false, false, true},
		{"new key", false, false, false},
		{"new key transactional", true, false, false},
		{"new key transactional durable claims", true, true, false},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			url, client, _ := httpAPI(b, newPool(b, poolConfig(b, 4)), pgstore.Options{Transactional: bc.transactional, DurableClaims: bc.durable}, false)
			for i := range 8 {
				send(b, client, url, fmt.Sprintf("warm-%d", i), false)
			}
			b.ReportAllocs()
			var lat latencies
			i := 0
			for b.Loop() {
				key := fmt.Sprintf("key-%d", i)
				if bc.replay {
					key = "warm-0"
				}
				lat.time(func() { send(b, client, url, key, bc.replay) })
				i++
			}
			lat.report(b)
		})
	}
}
