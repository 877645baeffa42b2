package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// routeApp is the service behind the routes tests: every route counts its
// calls; /slow blocks until release is closed.
type routeApp struct {
	calls   sync.Map // pattern -> *atomic.Int64
	release chan struct{}
}

func (a *routeApp) handler(pattern string) http.Handler {
	n, _ := a.calls.LoadOrStore(pattern, new(atomic.Int64))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		c := n.(*atomic.Int64).Add(1)
		if strings.HasSuffix(pattern, "/slow") {
			<-a.release
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"route":%q,"call":%d}`, pattern, c)
	})
}

func (a *routeApp) count(pattern string) int64 {
	n, _ := a.calls.Load(pattern)
	return n.(*atomic.Int64).Load()
}

var routePatterns = []string{"POST /payments", "POST /notes", "PUT /orders/{id}", "PUT /other", "POST /slow", "POST /fast/slow"}

// routeOptions: payments are keyed by amount and kept 10 minutes; orders
// are PUT with keys; repeats of /slow wait for the first.
func routeOptions(claims chan<- struct{}) server.Options {
	return server.Options{
		SingleTenant: true,
		Observer: &server.Observer{StoreOp: func(_ context.Context, info server.StoreOpInfo) {
			if info.Op == server.OpClaim && claims != nil {
				claims <- struct{}{}
			}
		}},
		Routes: map[string]server.RouteOptions{
			"POST /payments":   {Fingerprint: server.FingerprintRule{Select: []string{"/amount"}}, Retention: 10 * time.Minute},
			"PUT /orders/{id}": {Methods: []string{http.MethodPut}},
			"POST /slow":       {Wait: time.Minute},
		},
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	for _, wiring := range []string{"around the mux", "around each route"} {
		t.Run(wiring, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			store := memstore.New(memstore.Options{Now: func() time.Time { return now }})
			claims := make(chan struct{}, 64)
			mw := server.Middleware(store, routeOptions(claims))
			app := &routeApp{release: make(chan struct{})}
			mux := http.NewServeMux()
			var handler http.Handler = mux
			for _, p := range routePatterns {
				if wiring == "around the mux" {
					mux.Handle(p, app.handler(p))
				} else {
					mux.Handle(p, mw(app.handler(p)))
				}
			}
			if wiring == "around the mux" {
				handler = mw(mux)
			}
			srv := newServer(t, handler)
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			send := func(method, path, key, body string) reply {
				req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Idempotency-Key", key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return reply{err: err}
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
			}
			drain := func() {
				for len(claims) > 0 {
					<-claims
				}
			}

			// The payments route's rule lets a timestamp differ; the notes
			// route takes the default.
			pay, note := newKey(), newKey()
			send("POST", "/payments", pay, `{"amount":5,"ts":1}`)
			assert.True(t, send("POST", "/payments", pay, `{"amount":5,"ts":2}`).replayed())
			send("POST", "/notes", note, `{"text":"x","ts":1}`)
			requireProblem(t, send("POST", "/notes", note, `{"text":"x","ts":2}`), http.StatusUnprocessableEntity, server.ProblemKeyReused)
			assert.EqualValues(t, 1, app.count("POST /payments"))
			assert.EqualValues(t, 1, app.count("POST /notes"))

			// Retention by route.
			assert.Equal(t, now.Add(10*time.Minute), expiry(t, store, pay))
			assert.Equal(t, now.Add(server.DefaultRetention), expiry(t, store, note))

			// Methods by route: PUT is handled on /orders/{id} only.
			order, other := newKey(), newKey()
			send("PUT", "/orders/7", order, `{}`)
			assert.True(t, send("PUT", "/orders/7", order, `{}`).replayed())
			send("PUT", "/other", other, `{}`)
			assert.False(t, send("PUT", "/other", other, `{}`).replayed(), "PUT passes through elsewhere")
			assert.EqualValues(t, 1, app.count("PUT /orders/{id}"))
			assert.EqualValues(t, 2, app.count("PUT /other"))

			// Wait by route: a repeat on /slow waits for the first and
			// replays it; on /fast/slow (no Wait) it is answered 409.
			drain()
			slow, fast := newKey(), newKey()
			first := make(chan reply, 1)
			go func() { first <- send("POST", "/slow", slow, `{}`) }()
			<-claims // the first holds the key
			second := make(chan reply, 1)
			go func() { second <- send("POST", "/slow", slow, `{}`) }()
			<-claims // the repeat found it running, and waits
			go func() { send("POST", "/fast/slow", fast, `{}`) }()
			<-claims
			requireProblem(t, send("POST", "/fast/slow", fast, `{}`), http.StatusConflict, server.ProblemInFlight)
			close(app.release)
			a, b := <-first, <-second
			require.Equal(t, http.StatusCreated, a.status)
			require.Equal(t, http.StatusCreated, b.status, b.body)
			assert.True(t, b.replayed())
			assert.Equal(t, a.body, b.body)
			assert.EqualValues(t, 1, app.count("POST /slow"))
		})
	}
}

// expiry returns when the record of key expires.
func expiry(t *testing.T, store server.Store, key string) time.Time {
	t.Helper()
	c, err := store.Claim(t.Context(), server.Key{Key: key}, "probe", time.Second)
	require.NoError(t, err)
	require.True(t, c.Record.Completed)
	return c.Record.ExpiresAt
}

func TestRoutesOptions(t *testing.T) {
	t.Parallel()
	for name, routes := range map[string]map[string]server.RouteOptions{
		"a pattern ServeMux refuses":     {"POST /a/{": {}},
		"an empty pattern":               {"": {}},
		"patterns in conflict":           {"POST /a/{x}": {}, "POST /a/{y}": {}},
		"a route's negative duration":    {"POST /a": {Wait: -time.Second}},
		"a route's bad fingerprint rule": {"POST /a": {Fingerprint: server.FingerprintRule{Select: []string{"a"}}}},
		"a route's bad replay header":    {"POST /a": {ReplayHeaders: []string{"Connection"}}},
	} {
		assert.Panics(t, func() {
			server.Middleware(newMemstore(), server.Options{SingleTenant: true, Routes: routes})
		}, name)
	}
}
