package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// The three servers idem check is judged against, started in the test
// process on loopback: the example charges service (honours keys), a
// naive server on memstore that looks a key up and records the outcome
// only after the handler ran (concurrent copies all run), and one that
// ignores keys (every request runs).

// testClient is the X-Client-Id the tests send to the charges service.
const testClient = "acme"

// ledger counts charges by ID.
type ledger struct {
	mu  sync.Mutex
	ids []string
}

func (l *ledger) charge() string {
	var b [8]byte
	rand.Read(b[:])
	id := "ch_" + hex.EncodeToString(b[:])
	l.mu.Lock()
	l.ids = append(l.ids, id)
	l.mu.Unlock()
	return id
}

func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

func writeCharge(w http.ResponseWriter, id string) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "amount": 1000})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(b)
	return b
}

// ignoringServer charges on every POST, key or not.
type ignoringServer struct{ ledger }

func (s *ignoringServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	writeCharge(w, s.charge())
}

// naiveServer does idempotency on memstore the naive way: it looks the key
// up (a claim it releases at once), runs the handler, and records the
// outcome only when the handler is done. Repeats that arrive in between
// find nothing and run too. The first two requests with a key are made to
// overlap on any machine, by events, not time: the second looks the key up
// only once the first has released it, and the first runs only once the
// second has looked.
type naiveServer struct {
	ledger
	store    *memstore.Store
	mu       sync.Mutex
	arrivals map[string]int
	steps    map[string]*naiveSteps
}

// naiveSteps are the events the first two requests with a key wait for.
type naiveSteps struct {
	released chan struct{} // the first request has looked the key up and released it
	looked   chan struct{} // the second request has looked the key up
}

func newNaiveServer() *naiveServer {
	return &naiveServer{store: memstore.New(memstore.Options{}), arrivals: map[string]int{}, steps: map[string]*naiveSteps{}}
}

// naiveHold bounds each wait for the other copy; it only ends a test that
// sends no second copy.
const naiveHold = 10 * time.Second

// await waits for ch to close, up to naiveHold.
func await(ch <-chan struct{}) {
	select {
	case <-ch:
	case <-time.After(naiveHold):
	}
}

func (s *naiveServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key, err := server.ParseKey(r.Header.Get("Idempotency-Key"))
	if err != nil {
		http.Error(w, "Idempotency-Key required", http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(r.Body)
	k, fp := server.Key{Key: key}, server.Fingerprint(r, body)

	s.mu.Lock()
	s.arrivals[key]++
	n := s.arrivals[key]
	st := s.steps[key]
	if st == nil {
		st = &naiveSteps{released: make(chan struct{}), looked: make(chan struct{})}
		s.steps[key] = st
	}
	s.mu.Unlock()

	released := func() {}
	switch n {
	case 1:
		released = sync.OnceFunc(func() { close(st.released) })
		defer released() // on every path, so the second never waits in vain
	case 2:
		await(st.released)
	}
	c, err := s.store.Claim(ctx, k, fp, time.Minute) // the lookup
	if n == 2 {
		close(st.looked)
	}
	switch {
	case err != nil:
		http.Error(w, "store", http.StatusServiceUnavailable)
		return
	case !c.Acquired && c.Record.Fingerprint != fp:
		http.Error(w, "key reused", http.StatusUnprocessableEntity)
		return
	case !c.Acquired && c.Record.Completed:
		w.Header().Set(server.ReplayedHeader, "true")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(c.Record.Response.Status)
		w.Write(c.Record.Response.Body)
		return
	case !c.Acquired:
		http.Error(w, "in flight", http.StatusConflict)
		return
	}
	s.store.Release(ctx, k, c.Token) // naive: the key is not held while the work runs

	if n == 1 {
		released()
		await(st.looked)
	}
	out := writeCharge(w, s.charge())
	if c, err := s.store.Claim(ctx, k, fp, time.Minute); err == nil && c.Acquired {
		s.store.Complete(ctx, k, c.Token, server.StoredResponse{Status: http.StatusCreated, Body: out}, time.Hour)
	}
}

// switchServer answers 503 while off, and passes requests to next while
// on: a service that is down, then back.
type switchServer struct {
	on   atomic.Bool
	next http.Handler
}

func (s *switchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.on.Load() {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	s.next.ServeHTTP(w, r)
}

// testServers are the servers the tests run against, each on loopback.
type testServers struct {
	charges    *httptest.Server
	chargesSvc *charges.Service
	naive      *httptest.Server
	naiveSrv   *naiveServer
	ignoring   *httptest.Server
	ignoringSv *ignoringServer
	// flaky is the charges service behind a switch, off at first.
	flaky   *httptest.Server
	flakySw *switchServer
	// square and stripe imitate those APIs (see fakeAPI).
	square, stripe       *httptest.Server
	squareAPI, stripeAPI *fakeAPI
}

// startServers starts the servers; cleanup registers their closing.
func startServers(cleanup func(func())) (*testServers, error) {
	svc, err := charges.New(context.Background(), charges.Config{})
	if err != nil {
		return nil, err
	}
	s := &testServers{chargesSvc: svc, naiveSrv: newNaiveServer(), ignoringSv: &ignoringServer{},
		squareAPI: squareLike(45), stripeAPI: stripeLike()}
	s.flakySw = &switchServer{next: svc.Handler()}
	for _, p := range []struct {
		srv **httptest.Server
		h   http.Handler
	}{{&s.charges, svc.Handler()}, {&s.naive, s.naiveSrv}, {&s.ignoring, s.ignoringSv}, {&s.flaky, s.flakySw}, {&s.square, s.squareAPI}, {&s.stripe, s.stripeAPI}} {
		*p.srv = httptest.NewServer(p.h)
		cleanup((*p.srv).Close)
	}
	return s, nil
}

// chargeCount is how many charges the charges service took for client.
func (s *testServers) chargeCount(client string) (int, error) {
	cs, err := s.chargesSvc.Charges(context.Background(), client)
	return len(cs), err
}

func mustStartServers(t testing.TB) *testServers {
	s, err := startServers(t.Cleanup)
	require.NoError(t, err)
	return s
}
