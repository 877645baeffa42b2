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

// BenchmarkHTTP measures requests through the middleware over loopback,
// keep-alive, against a pgstore, beside the bare handlers without the
// middleware: one that answers from memory, one that answers after one
// round trip that does nothing (SELECT 1: the floor of a replay), and one
// that writes the same row with one autocommit INSERT (the floor of a new
// key). Each case also reports the database's CPU time per request where
// PostgreSQL runs on this machine (db-cpu-µs/op). One client at a time (p50-µs, p99-µs),
// and 16 at once (ops/s). In transactional mode the middleware claims with
// ClaimWork; "lease" hides ClaimWork from it, so it claims under a lease
// (Claim, then BeginWork). Run with
//
//	IDEM_TEST_DATABASE=postgres://... go test -run '^$' -bench HTTP -count 6 ./server/pgstore/
func BenchmarkHTTP(b *testing.B) {
	cases := []struct {
		name          string
		bare          string // "memory" or "insert": no middleware
		transactional bool
		leased        bool
		durable       bool
		replay        bool
		parallel      bool
	}{
		{name: "bare memory", bare: "memory"},
		{name: "bare PostgreSQL SELECT 1", bare: "select"},
		{name: "bare PostgreSQL insert", bare: "insert"},
		{name: "replay", replay: true},
		{name: "replay transactional", transactional: true, replay: true},
		{name: "replay transactional lease", transactional: true, leased: true, replay: true},
		{name: "new key"},
		{name: "new key transactional", transactional: true},
		{name: "new key transactional lease", transactional: true, leased: true},
		{name: "new key transactional lease durable claims", transactional: true, leased: true, durable: true},
		{name: "16 clients bare PostgreSQL insert", bare: "insert", parallel: true},
		{name: "16 clients new key transactional", transactional: true, parallel: true},
		{name: "16 clients new key transactional lease", transactional: true, leased: true, parallel: true},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			pool, cpu := benchPool(b, clients+4)
			var (
				url    string
				client *http.Client
				s      *pgstore.Store
			)
			if bc.bare != "" {
				url, client = bareAPI(b, pool, bc.bare)
			} else {
				url, client, s = httpAPI(b, pool, pgstore.Options{Transactional: bc.transactional, DurableClaims: bc.durable}, bc.leased)
			}
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = clients
			sendKey := func(i int) {
				key := fmt.Sprintf("key-%d", i)
				if bc.replay {
					key = "warm-0"
				}
				send(b, client, url, key, bc.replay)
			}
			warm(b, clients, func(i int) { send(b, client, url, fmt.Sprintf("warm-%d", i), false) })
			if s != nil {
				s.Settle()
			}
			b.ReportAllocs()
			cpu.begin(b)
			if bc.parallel {
				concurrently(b, clients, sendKey)
			} else {
				var lat latencies
				i := 0
				for b.Loop() {
					lat.time(func() { sendKey(i) })
					i++
				}
				lat.report(b)
			}
			if s != nil {
				s.Settle()
			}
			cpu.report(b, b.N)
		})
	}
}

// bareAPI serves the handler of httpAPI without the middleware: it
// answers from memory ("memory"), after one round trip that does nothing
// ("select": the floor of any answer from PostgreSQL), or after writing
// the charge with one autocommit INSERT ("insert").
func bareAPI(t testing.TB, pool *pgxpool.Pool, mode string) (url string, client *http.Client) {
	charges := newCharges(t, pool)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || len(body) == 0 {
			http.Error(w, "no body", http.StatusBadRequest)
			return
		}
		switch mode {
		case "select":
			var one int
			if err := pool.QueryRow(r.Context(), "SELECT 1").Scan(&one); err != nil {
				http.Error(w, "select failed", http.StatusInternalServerError)
				return
			}
		case "insert":
			if _, err := pool.Exec(r.Context(), "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1)", r.Header.Get("Idempotency-Key")); err != nil {
				http.Error(w, "charge failed", http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1"}`)
	}))
	t.Cleanup(srv.Close)
	client = srv.Client()
	t.Cleanup(client.CloseIdleConnections)
	return srv.URL + "/charges", client
}
