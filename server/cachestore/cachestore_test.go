package cachestore_test

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/cachestore"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) server.Store {
		return newCache(t, memstore.New(memstore.Options{}), cachestore.Options{})
	})
}

func newCache(t *testing.T, next server.Store, opts cachestore.Options) *cachestore.Store {
	t.Helper()
	s, err := cachestore.New(next, opts)
	require.NoError(t, err)
	return s
}

// counting counts the claims that reach a store. Swap replaces the store
// behind it, as a purge that deleted every record would.
type counting struct {
	mu     sync.Mutex
	next   server.Store
	claims atomic.Int64
}

func (c *counting) store() server.Store { c.mu.Lock(); defer c.mu.Unlock(); return c.next }
func (c *counting) swap(s server.Store) { c.mu.Lock(); c.next = s; c.mu.Unlock() }

func (c *counting) Claim(ctx context.Context, k server.Key, fp string, lease time.Duration) (server.Claim, error) {
	c.claims.Add(1)
	return c.store().Claim(ctx, k, fp, lease)
}
func (c *counting) Renew(ctx context.Context, k server.Key, token string, lease time.Duration) error {
	return c.store().Renew(ctx, k, token, lease)
}
func (c *counting) Complete(ctx context.Context, k server.Key, token string, resp server.StoredResponse, retention time.Duration) error {
	return c.store().Complete(ctx, k, token, resp, retention)
}
func (c *counting) Release(ctx context.Context, k server.Key, token string) error {
	return c.store().Release(ctx, k, token)
}

// naiveCache caches whatever a claim reports that did not acquire, and
// serves it forever: what the cache must not be.
type naiveCache struct {
	server.Store
	mu   sync.Mutex
	recs map[server.Key]server.Record
}

func (n *naiveCache) Claim(ctx context.Context, k server.Key, fp string, lease time.Duration) (server.Claim, error) {
	n.mu.Lock()
	rec, ok := n.recs[k]
	n.mu.Unlock()
	if ok {
		return server.Claim{Record: rec}, nil
	}
	c, err := n.Store.Claim(ctx, k, fp, lease)
	if err == nil && !c.Acquired {
		n.mu.Lock()
		n.recs[k] = c.Record
		n.mu.Unlock()
	}
	return c, err
}

// clock is a settable clock shared by a memstore and the cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// service serves a handler counting its calls behind the middleware over
// store; block, if set, holds every call until it is closed.
type service struct {
	calls atomic.Int64
	srv   *httptest.Server
}

func newService(t *testing.T, store server.Store, opts server.Options, entered chan<- struct{}, block <-chan struct{}) *service {
	t.Helper()
	svc := &service{}
	opts.SingleTenant = true
	svc.srv = httptest.NewServer(server.Middleware(store, opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := svc.calls.Add(1)
		if block != nil {
			entered <- struct{}{}
			<-block
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"call":%d}`, n)
	})))
	t.Cleanup(svc.srv.Close)
	return svc
}

func (svc *service) post(t *testing.T, key string) (int, bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, svc.srv.URL, strings.NewReader(`{"a":1}`))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", key)
	resp, err := svc.srv.Client().Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(server.ReplayedHeader) == "true"
}

func TestRepeatsSkipTheStore(t *testing.T) {
	t.Parallel()
	for _, cached := range []bool{false, true} {
		shared := &counting{next: memstore.New(memstore.Options{})}
		var store server.Store = shared
		if cached {
			store = newCache(t, shared, cachestore.Options{})
		}
		svc := newService(t, store, server.Options{}, nil, nil)
		status, _ := svc.post(t, "k")
		require.Equal(t, http.StatusCreated, status)
		for range 10 {
			_, replayed := svc.post(t, "k")
			require.True(t, replayed)
		}
		want := int64(11) // every request asks the store
		if cached {
			want = 2 // the first, and the first repeat, which the cache keeps
		}
		assert.Equal(t, want, shared.claims.Load(), "cached %v", cached)
		assert.EqualValues(t, 1, svc.calls.Load())
	}
}

// TestRunningKeysAreNotCached: a repeat that found its key running must not
// make the cache answer 409 once the outcome is stored.
func TestRunningKeysAreNotCached(t *testing.T) {
	t.Parallel()
	for _, naive := range []bool{false, true} {
		var store server.Store = newCache(t, memstore.New(memstore.Options{}), cachestore.Options{})
		if naive {
			store = &naiveCache{Store: memstore.New(memstore.Options{}), recs: map[server.Key]server.Record{}}
		}
		entered, block := make(chan struct{}, 1), make(chan struct{})
		svc := newService(t, store, server.Options{}, entered, block)
		first := make(chan int, 1)
		go func() { s, _ := svc.post(t, "k"); first <- s }()
		<-entered
		status, _ := svc.post(t, "k")
		require.Equal(t, http.StatusConflict, status, "the first still runs")
		close(block)
		require.Equal(t, http.StatusCreated, <-first)
		status, replayed := svc.post(t, "k")
		if naive {
			assert.Equal(t, http.StatusConflict, status, "a naive cache answers 'in flight' for good")
		} else {
			assert.Equal(t, http.StatusCreated, status)
			assert.True(t, replayed)
		}
	}
}

// TestExpiredRecordsAreNotServed: past its retention a key runs again, as
// the store would have it.
func TestExpiredRecordsAreNotServed(t *testing.T) {
	t.Parallel()
	for _, naive := range []bool{false, true} {
		clk := newClock()
		mem := memstore.New(memstore.Options{Now: clk.Now})
		var store server.Store = newCache(t, mem, cachestore.Options{Now: clk.Now})
		if naive {
			store = &naiveCache{Store: mem, recs: map[server.Key]server.Record{}}
		}
		svc := newService(t, store, server.Options{Retention: time.Minute}, nil, nil)
		svc.post(t, "k")
		_, replayed := svc.post(t, "k") // cached now
		require.True(t, replayed)
		clk.advance(time.Minute)
		status, replayed := svc.post(t, "k")
		require.Equal(t, http.StatusCreated, status)
		if naive {
			assert.True(t, replayed, "a naive cache replays past the retention")
			assert.EqualValues(t, 1, svc.calls.Load())
		} else {
			assert.False(t, replayed, "the key ran afresh")
			assert.EqualValues(t, 2, svc.calls.Load())
		}
	}
}

// TestStalenessAfterAPurge: a record deleted from the store is replayed
// from the cache until MaxAge, or until Forget, and no longer.
func TestStalenessAfterAPurge(t *testing.T) {
	t.Parallel()
	clk := newClock()
	shared := &counting{next: memstore.New(memstore.Options{Now: clk.Now})}
	cache := newCache(t, shared, cachestore.Options{Now: clk.Now, MaxAge: 10 * time.Second})
	svc := newService(t, cache, server.Options{}, nil, nil)
	svc.post(t, "a")
	svc.post(t, "b")
	svc.post(t, "a") // cached
	svc.post(t, "b")
	shared.swap(memstore.New(memstore.Options{Now: clk.Now})) // the records are gone

	clk.advance(9 * time.Second)
	_, replayed := svc.post(t, "a")
	assert.True(t, replayed, "stale inside MaxAge")
	cache.Forget(server.Key{Key: "b"})
	_, replayed = svc.post(t, "b")
	assert.False(t, replayed, "forgotten, b runs again")

	clk.advance(time.Second)
	_, replayed = svc.post(t, "a")
	assert.False(t, replayed, "past MaxAge the store is asked, and a runs again")
	assert.EqualValues(t, 4, svc.calls.Load())
}

func TestBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	complete := func(key string, body int) server.Key {
		k := server.Key{Key: key}
		c, err := mem.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		require.NoError(t, mem.Complete(ctx, k, c.Token, server.StoredResponse{Status: 201, Body: make([]byte, body)}, time.Hour))
		return k
	}
	claim := func(s *cachestore.Store, k server.Key) {
		c, err := s.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		require.True(t, c.Record.Completed)
	}

	t.Run("entries", func(t *testing.T) {
		s := newCache(t, mem, cachestore.Options{MaxEntries: 3})
		ks := []server.Key{complete("e1", 10), complete("e2", 10), complete("e3", 10), complete("e4", 10)}
		for _, k := range ks[:3] {
			claim(s, k)
		}
		claim(s, ks[0]) // a hit: e1 is the most recently used now
		claim(s, ks[3]) // e2, the least recently used, makes room
		st := s.Stats()
		assert.Equal(t, 3, st.Entries)
		assert.EqualValues(t, 1, st.Evicted)
		before := s.Stats().Misses
		claim(s, ks[0])
		claim(s, ks[2])
		assert.Equal(t, before, s.Stats().Misses, "e1 and e3 are still cached")
		claim(s, ks[1])
		assert.Equal(t, before+1, s.Stats().Misses, "e2 was dropped")
	})
	t.Run("bytes", func(t *testing.T) {
		s := newCache(t, mem, cachestore.Options{MaxBytes: 8 << 10})
		big := complete("big", 1100) // over an eighth of 8 KiB: never kept
		claim(s, big)
		assert.Zero(t, s.Stats().Entries)
		for i := range 20 {
			claim(s, complete(fmt.Sprintf("b%d", i), 700))
		}
		st := s.Stats()
		assert.LessOrEqual(t, st.Bytes, int64(8<<10))
		assert.Greater(t, st.Entries, 5)
		assert.Less(t, st.Entries, 20)
		assert.EqualValues(t, 20-st.Entries, st.Evicted)
	})
}

func TestWrappedStore(t *testing.T) {
	t.Parallel()
	s := newCache(t, memstore.New(memstore.Options{}), cachestore.Options{})
	_, _, _, err := s.ClaimWork(context.Background(), server.Key{Key: "k"}, "fp")
	assert.ErrorIs(t, err, errors.ErrUnsupported, "memstore claims no units of work")
	ctx, work, err := s.BeginWork(context.Background(), server.Key{Key: "k"}, "t")
	assert.NoError(t, err)
	assert.Nil(t, work)
	assert.NotNil(t, ctx)
	assert.Equal(t, "memory", s.StoreSystem())

	for _, o := range []cachestore.Options{{MaxEntries: -1}, {MaxBytes: -1}, {MaxAge: -1}} {
		_, err := cachestore.New(memstore.New(memstore.Options{}), o)
		assert.Error(t, err, "%+v", o)
	}
	assert.Panics(t, func() { cachestore.New(nil, cachestore.Options{}) })
}
