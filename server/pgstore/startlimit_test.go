package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/idemhq/idem/server/pgstore"
)

// Start limits of the tests below: short, since the pool is exhausted
// for as long as the test holds it and nothing can begin meanwhile.
const (
	exhaustedPool  = 2
	exhaustedStart = 200 * time.Millisecond
	// exhaustedBound bounds the request that finds the pool exhausted, so
	// that without a start limit on ClaimWork the test fails rather than
	// hangs: the claim then waits for a connection until this ends.
	exhaustedBound = 5 * time.Second
)

// holdPool runs exhaustedPool calls of start with keys hold-0, hold-1...,
// whose work calls hold, and returns once every one of them is in hold,
// holding a connection of the pool in its transaction. hold returns once
// release is called (or after a minute, if the test fails); wait waits
// for the calls to return.
func holdPool(t *testing.T, start func(key string, hold func())) (release func(), wait func()) {
	t.Helper()
	started, proceed := make(chan struct{}, exhaustedPool), make(chan struct{})
	hold := func() {
		started <- struct{}{}
		select {
		case <-proceed:
		case <-time.After(time.Minute): // bounds the test if it fails
		}
	}
	var wg sync.WaitGroup
	for i := range exhaustedPool {
		key := fmt.Sprint("hold-", i)
		wg.Go(func() { start(key, hold) })
	}
	for range exhaustedPool {
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatal("the work holding the pool did not start")
		}
	}
	release = sync.OnceFunc(func() { close(proceed) })
	t.Cleanup(release)
	return release, wg.Wait
}

// TestExhaustedPoolRefused: in transactional mode (ClaimWork), with every
// connection of the pool held by running work, a request with a new key
// cannot begin its transaction. It is refused like work that cannot start
// in time (Options.StartTimeout): 503 with ProblemOverloaded and
// Retry-After, observed as overloaded, its handler not run and its key
// not held, so that it runs once the pool has room again. Without a
// limit on ClaimWork it waited for a connection for as long as the
// request lasted, and was answered as a store failure.
func TestExhaustedPoolRefused(t *testing.T) {
	t.Parallel()
	pool := newPool(t, poolConfig(t, exhaustedPool))
	s := newStore(t, pool, pgstore.Options{Transactional: true})
	var runs atomic.Int32
	var mu sync.Mutex
	var results []server.Outcome
	obs := &server.Observer{Request: func(_ context.Context, info server.RequestInfo) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, info.Outcome)
	}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold, ok := r.Context().Value(holdKey{}).(func()); ok {
			hold()
		} else {
			runs.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	})
	// The request under test has a short start limit; the others, on the
	// same store, the default, lest a slow connection on a loaded machine
	// refuse them.
	limited := server.Middleware(s, server.Options{SingleTenant: true, StartTimeout: exhaustedStart, Observer: obs})(handler)
	unlimited := server.Middleware(s, server.Options{SingleTenant: true})(handler)
	serve := func(ctx context.Context, h http.Handler, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/payments", strings.NewReader(payBody))
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	held := make(chan int, exhaustedPool)
	release, wait := holdPool(t, func(key string, hold func()) {
		held <- serve(context.WithValue(context.Background(), holdKey{}, hold), unlimited, key).Code
	})

	ctx, cancel := context.WithTimeout(context.Background(), exhaustedBound)
	defer cancel()
	rec := serve(ctx, limited, "new")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	var doc struct{ Type string }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	assert.Equal(t, server.ProblemOverloaded, doc.Type)
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	assert.Zero(t, runs.Load(), "handler runs")
	mu.Lock()
	assert.Equal(t, []server.Outcome{server.OutcomeOverloaded}, results)
	mu.Unlock()

	release()
	wait()
	for range exhaustedPool {
		assert.Equal(t, http.StatusCreated, <-held)
	}
	assert.Equal(t, http.StatusCreated, serve(context.Background(), unlimited, "new").Code, "the key is free")
	assert.Equal(t, int32(1), runs.Load(), "handler runs")
}

// holdKey carries holdPool's hold in the context of a request that holds
// the pool.
type holdKey struct{}

// TestExhaustedPoolRunOnce is TestExhaustedPoolRefused for RunOnce with
// RunOptions.StartTimeout: ErrOverloaded, the work not run, the key free.
func TestExhaustedPoolRunOnce(t *testing.T) {
	t.Parallel()
	pool := newPool(t, poolConfig(t, exhaustedPool))
	s := newStore(t, pool, pgstore.Options{Transactional: true})
	var runs atomic.Int32
	work := func(context.Context) ([]byte, error) {
		runs.Add(1)
		return []byte("done"), nil
	}
	held := make(chan error, exhaustedPool)
	release, wait := holdPool(t, func(key string, hold func()) {
		_, _, err := server.RunOnce(context.Background(), s, server.Key{Key: key}, "fp", func(context.Context) ([]byte, error) {
			hold()
			return nil, nil
		}, server.RunOptions{})
		held <- err
	})

	ctx, cancel := context.WithTimeout(context.Background(), exhaustedBound)
	defer cancel()
	k := server.Key{Key: "new"}
	_, _, err := server.RunOnce(ctx, s, k, "fp", work, server.RunOptions{StartTimeout: exhaustedStart})
	require.ErrorIs(t, err, server.ErrOverloaded)
	assert.Zero(t, runs.Load(), "work runs")

	release()
	wait()
	for range exhaustedPool {
		assert.NoError(t, <-held)
	}
	result, replayed, err := server.RunOnce(context.Background(), s, k, "fp", work, server.RunOptions{})
	require.NoError(t, err, "the key is free")
	assert.False(t, replayed)
	assert.Equal(t, "done", string(result))
	assert.Equal(t, int32(1), runs.Load(), "work runs")
}
