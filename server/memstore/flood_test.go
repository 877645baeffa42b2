package memstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// The tests in this file drive the store through server.Middleware, as a
// service does, with a handler that counts its charges. Each scenario runs
// against memstore and against evictingStore, the naive bounded store that
// makes room by forgetting the oldest outcome: the scenario must catch it
// executing a retry twice, which shows the test can fail.

// charges is a handler that counts its executions per client and key.
type charges struct {
	mu sync.Mutex
	n  map[string]int
}

func newCharges() *charges { return &charges{n: make(map[string]int)} }

func (c *charges) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.n[r.Header.Get("X-Client")+" "+r.Header.Get(server.DefaultHeader)]++
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write([]byte(`{"status":"succeeded"}`))
}

func (c *charges) of(client, key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[client+" "+key]
}

func (c *charges) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

// service is a store behind the middleware, scoped by X-Client, in front
// of charges. Its post reuses one request and one response writer, so a
// flood of requests is quick; it is not safe for concurrent use.
type service struct {
	h       http.Handler
	charges *charges
	req     *http.Request
	body    *strings.Reader
	w       answer
}

func newService(store server.Store, opts server.Options) *service {
	if !opts.SingleTenant {
		opts.Scope = func(r *http.Request) (string, error) {
			if c := r.Header.Get("X-Client"); c != "" {
				return c, nil
			}
			return "", errors.New("no client")
		}
	}
	s := &service{charges: newCharges(), body: strings.NewReader(chargeBody)}
	s.h = server.Middleware(store, opts)(s.charges)
	s.req = httptest.NewRequest(http.MethodPost, "/charges", io.NopCloser(s.body))
	s.req.Header.Set("Content-Type", "application/json")
	s.req.ContentLength = int64(len(chargeBody))
	s.w.header = make(http.Header)
	return s
}

const chargeBody = `{"amount":1000,"currency":"EUR"}`

// post sends a charge for client with key and classifies the answer:
// "ran" (201, first execution), "replayed" (201 replayed), "refused" (503
// with Retry-After: 30 and the store-full problem)
// or, for anything else, a description starting with "unexpected".
func (s *service) post(client, key string) string {
	s.body.Reset(chargeBody)
	s.req.Header["X-Client"] = []string{client}
	s.req.Header[server.DefaultHeader] = []string{key}
	clear(s.w.header)
	s.w.code = 0
	s.w.body.Reset()
	s.h.ServeHTTP(&s.w, s.req)
	switch {
	case s.w.code == http.StatusCreated && s.w.header.Get(server.ReplayedHeader) == "true":
		return "replayed"
	case s.w.code == http.StatusCreated:
		return "ran"
	case s.w.code == http.StatusServiceUnavailable && s.w.header.Get("Retry-After") == "30" &&
		bytes.Contains(s.w.body.Bytes(), []byte(server.ProblemStoreFull)):
		return "refused"
	}
	return fmt.Sprintf("unexpected: %d %v %s", s.w.code, s.w.header, s.w.body.Bytes())
}

// answer is a reusable http.ResponseWriter.
type answer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }

func (a *answer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

func (a *answer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(p)
}

// store is a store a scenario runs on: memstore must pass it, the naive
// evicting store must fail it.
type store struct {
	name  string
	naive bool
	new   func(maxKeys int, clk *clock) server.Store
}

var scenarioStores = []store{
	{"memstore", false, func(maxKeys int, clk *clock) server.Store {
		return memstore.New(memstore.Options{MaxKeys: maxKeys, Now: clk.Now})
	}},
	{"naive evicting store", true, func(maxKeys int, _ *clock) server.Store {
		return newEvictingStore(maxKeys)
	}},
}

// TestFloodKeepsOtherClientsKeys: client A completes a key; client B sends
// 200,000 distinct keys (20,000 with -short); A's retry is replayed, not
// executed again, and A can still add keys. B is refused once it holds its
// share.
func TestFloodKeepsOtherClientsKeys(t *testing.T) {
	t.Parallel()
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	for _, st := range scenarioStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(st.new(1000, newClock()), server.Options{})
			require.Equal(t, "ran", svc.post("A", "a-1"))
			tally := map[string]int{}
			flood := n
			if st.naive {
				flood = 10 * 1000 // ten times its size: enough to show it forgets
			}
			for i := range flood {
				tally[svc.post("B", "b-"+strconv.Itoa(i))]++
			}
			retry := svc.post("A", "a-1")
			if st.naive {
				assert.Equal(t, 2, svc.charges.of("A", "a-1"), "the naive store forgot A's key and charged it again")
				return
			}
			assert.Equal(t, "replayed", retry)
			assert.Equal(t, 1, svc.charges.of("A", "a-1"), "A's retry must not charge again")
			assert.Equal(t, map[string]int{"ran": 250, "refused": n - 250}, tally, "B gets its share, a quarter of the store")
			assert.Equal(t, "ran", svc.post("A", "a-2"), "A still has room")
		})
	}
}

// TestSameScopeFloodKeepsEarlierKeys: one client (a single-tenant store,
// where the scope has the whole store) sends three times MaxKeys distinct
// keys: those past MaxKeys are refused with 503 and Retry-After, never
// run, and every earlier key is replayed, not run again.
func TestSameScopeFloodKeepsEarlierKeys(t *testing.T) {
	t.Parallel()
	const maxKeys = 100
	for _, st := range scenarioStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(st.new(maxKeys, newClock()), server.Options{SingleTenant: true})
			tally := map[string]int{}
			for i := range 3 * maxKeys {
				tally[svc.post("", strconv.Itoa(i))]++
			}
			ranTwice := 0
			for i := range maxKeys {
				svc.post("", strconv.Itoa(i))
				if svc.charges.of("", strconv.Itoa(i)) > 1 {
					ranTwice++
				}
			}
			if st.naive {
				assert.Positive(t, ranTwice, "the naive store forgot earlier keys and ran them again")
				return
			}
			assert.Equal(t, map[string]int{"ran": maxKeys, "refused": 2 * maxKeys}, tally)
			assert.Zero(t, ranTwice)
			for i := range 3 * maxKeys {
				want := "replayed"
				if i >= maxKeys {
					want = "refused"
				}
				require.Equal(t, want, svc.post("", strconv.Itoa(i)), "key %d", i)
			}
			assert.Equal(t, maxKeys, svc.charges.total())
		})
	}
}

// TestLoadWithRetries: 20,000 requests from four clients (counted, not
// timed: the injected clock moves one second per request), a tenth of them
// retries of an earlier key inside its retention, against a store that
// holds fewer keys than the retention needs. Every refusal is a 503 with
// Retry-After, expired records make room as the clock moves, and the
// charges equal the distinct keys that were accepted: no retry runs
// twice.
func TestLoadWithRetries(t *testing.T) {
	t.Parallel()
	const (
		requests  = 20_000
		retention = 1000 * time.Second
		maxKeys   = 400 // a quarter per client; a client sends about 225 new keys per retention
	)
	for _, st := range scenarioStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			svc := newService(st.new(maxKeys, clk), server.Options{Retention: retention})
			rnd := rand.New(rand.NewPCG(1, 2))
			type sent struct {
				client, key string
				at          time.Time
			}
			var keys []sent
			first := 0 // the first of keys sent inside the retry window
			accepted := map[string]bool{}
			tally := map[string]int{}
			n := requests
			if st.naive {
				n = requests / 4 // enough to show it forgets
			}
			for i := range n {
				clk.Advance(time.Second)
				var k sent
				if i > 0 && rnd.IntN(10) == 0 {
					// A retry of a key sent inside the retention, a tenth
					// of it ago at least.
					window := clk.Now().Add(-retention * 9 / 10)
					for first < len(keys) && keys[first].at.Before(window) {
						first++
					}
					if first < len(keys) {
						k = keys[first+rnd.IntN(len(keys)-first)]
					}
				}
				if k.key == "" {
					k = sent{client: fmt.Sprint("client-", i%4), key: strconv.Itoa(i), at: clk.Now()}
					keys = append(keys, k)
				}
				got := svc.post(k.client, k.key)
				require.False(t, strings.HasPrefix(got, "unexpected"), got)
				tally[got]++
				id := k.client + " " + k.key
				if got == "ran" {
					accepted[id] = true
				}
				if !st.naive && accepted[id] && got != "ran" {
					require.Equal(t, "replayed", got, "an accepted key inside its retention is replayed")
				}
			}
			if st.naive {
				assert.Greater(t, svc.charges.total(), len(accepted), "the naive store ran retries again")
				return
			}
			t.Logf("outcomes: %v; %d distinct keys accepted", tally, len(accepted))
			assert.Equal(t, len(accepted), svc.charges.total(), "charges equal the distinct keys accepted")
			assert.Positive(t, tally["refused"], "the store was too small for the load")
			assert.Positive(t, tally["replayed"])
			assert.Greater(t, len(accepted), 2*maxKeys, "expired records made room")
		})
	}
}

// evictingStore is the naive bounded store the scenarios must catch: when
// full it makes room by forgetting the oldest completed record, whatever
// its scope and however recent (memstore's behaviour before it refused new
// keys instead). Leases and retention are ignored.
type evictingStore struct {
	mu      sync.Mutex
	max     int
	records map[server.Key]*evicted
	done    []server.Key // completed keys, oldest first
	seq     int
}

type evicted struct {
	fingerprint, token string
	completed          bool
	response           server.StoredResponse
}

func newEvictingStore(max int) *evictingStore {
	return &evictingStore{max: max, records: make(map[server.Key]*evicted)}
}

func (s *evictingStore) Claim(_ context.Context, k server.Key, fp string, _ time.Duration) (server.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.records[k]; r != nil {
		return server.Claim{Record: server.Record{Fingerprint: r.fingerprint, Completed: r.completed, Response: r.response}}, nil
	}
	for len(s.records) >= s.max && len(s.done) > 0 {
		delete(s.records, s.done[0])
		s.done = s.done[1:]
	}
	if len(s.records) >= s.max {
		return server.Claim{}, memstore.ErrFull
	}
	s.seq++
	r := &evicted{fingerprint: fp, token: strconv.Itoa(s.seq)}
	s.records[k] = r
	return server.Claim{Acquired: true, Token: r.token}, nil
}

func (s *evictingStore) held(k server.Key, token string) *evicted {
	if r := s.records[k]; r != nil && !r.completed && r.token == token {
		return r
	}
	return nil
}

func (s *evictingStore) Renew(_ context.Context, k server.Key, token string, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held(k, token) == nil {
		return server.ErrLeaseLost
	}
	return nil
}

func (s *evictingStore) Complete(_ context.Context, k server.Key, token string, resp server.StoredResponse, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.held(k, token)
	if r == nil {
		return server.ErrLeaseLost
	}
	r.completed, r.response = true, resp
	s.done = append(s.done, k)
	return nil
}

func (s *evictingStore) Release(_ context.Context, k server.Key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held(k, token) == nil {
		return server.ErrLeaseLost
	}
	delete(s.records, k)
	return nil
}
