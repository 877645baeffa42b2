package redisstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// Bounds of the polls that wait for Redis's clock: never an assertion on
// elapsed time, only on what eventually happens within a generous bound.
const (
	pollFor   = 10 * time.Second
	pollEvery = 20 * time.Millisecond
)

// fingerprint is the fingerprint the middleware computes for a POST of body
// to path.
func fingerprint(path, body string) string {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return server.Fingerprint(r, []byte(body))
}

// TestTakeoverAfterCrash: a worker claims a key and dies (it never renews
// or completes). Retries are told the key is in flight until its lease
// lapses on Redis's clock, then one of them takes the key over and runs the
// work, once; the dead worker's token is fenced off, and later retries are
// replayed.
func TestTakeoverAfterCrash(t *testing.T) {
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		store := newStore(t, rdb, redisstore.Options{})
		effects := newExecutions()
		mw := server.Middleware(store, server.Options{SingleTenant: true})
		url, client := serve(t, mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			effects.ran(r.Header.Get("Idempotency-Key"))
			w.WriteHeader(http.StatusCreated)
		})))
		const body = `{"amount":100}`
		key := rand.Text()
		k := server.Key{Scope: "", Key: key}
		dead, err := store.Claim(ctx, k, fingerprint("/", body), 300*time.Millisecond)
		require.NoError(t, err)
		require.True(t, dead.Acquired)

		statuses := map[int]int{}
		require.Eventually(t, func() bool {
			s := post(t, client, url, key, body)
			statuses[s]++
			return s == http.StatusCreated
		}, pollFor, pollEvery, "no retry took the key over: %v", statuses)
		assert.Equal(t, 1, effects.of(key), "executions")
		assert.Equal(t, http.StatusUnprocessableEntity, post(t, client, url, key, `{"amount":200}`),
			"another body is refused")
		require.ErrorIs(t, store.Complete(ctx, k, dead.Token, server.StoredResponse{Status: http.StatusOK}, time.Hour),
			server.ErrLeaseLost, "the dead worker's token is fenced off")
		assert.Equal(t, http.StatusCreated, post(t, client, url, key, body), "a later retry is replayed")
		assert.Equal(t, 1, effects.of(key), "executions")
	})
}

// TestResponseOverMaxResponse: an outcome over Options.MaxResponse is not
// stored, and costs no round trip; the key stays held. Through the
// middleware the first request gets the handler's answer, and every retry a
// final replay with the same status that says the answer was not kept: the
// work never runs again and the key is never "in flight" for the retention
// (the middleware's lease is short here, so a key merely left running would
// be taken over and run again).
func TestResponseOverMaxResponse(t *testing.T) {
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		store := newStore(t, rdb, redisstore.Options{MaxResponse: 1024})

		k := server.Key{Scope: "s", Key: rand.Text()}
		c, err := store.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		big := server.StoredResponse{Status: http.StatusOK, Body: bytes.Repeat([]byte("x"), 1025)}
		err = store.Complete(ctx, k, c.Token, big, time.Hour)
		require.ErrorIs(t, err, redisstore.ErrResponseTooLarge)
		require.ErrorIs(t, err, server.ErrResponseTooLarge)
		require.NoError(t, store.Complete(ctx, k, c.Token, server.StoredResponse{Status: http.StatusOK}, time.Hour), "still held under the token")

		effects := newExecutions()
		mw := server.Middleware(store, server.Options{SingleTenant: true, Lease: 100 * time.Millisecond, Retention: time.Hour})
		url, client := serve(t, mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			effects.ran(r.Header.Get("Idempotency-Key"))
			w.WriteHeader(http.StatusCreated)
			w.Write(bytes.Repeat([]byte("y"), 2048))
		})))
		key := rand.Text()
		assert.Equal(t, http.StatusCreated, post(t, client, url, key, `{}`), "the first request gets the handler's answer")
		for range 2 {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
			req.Header.Set("Idempotency-Key", key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusCreated, resp.StatusCode, "the first answer's status")
			assert.Equal(t, "true", resp.Header.Get(server.ReplayedHeader))
			assert.Equal(t, server.ProblemContentType, resp.Header.Get("Content-Type"))
			assert.Contains(t, string(body), server.ProblemResponseNotKept)
		}
		assert.Equal(t, 1, effects.of(key), "executions")
	})
}

// TestNotReplicated: with WaitReplicas above the replicas a server has, a
// claim is refused and released (nothing runs; the key is free), and a
// completion is stored but reported unconfirmed.
func TestNotReplicated(t *testing.T) {
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		prefix := testPrefix(t, rdb)
		waiting := newStore(t, rdb, redisstore.Options{Prefix: prefix, WaitReplicas: 5, WaitTimeout: 50 * time.Millisecond})
		plain := newStore(t, rdb, redisstore.Options{Prefix: prefix})

		k := server.Key{Scope: "s", Key: rand.Text()}
		_, err := waiting.Claim(ctx, k, "fp", time.Minute)
		require.ErrorIs(t, err, redisstore.ErrNotReplicated)
		c, err := plain.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		require.True(t, c.Acquired, "the unconfirmed claim was released")
		require.False(t, c.TakenOver)

		resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte("ok")}
		require.ErrorIs(t, waiting.Complete(ctx, k, c.Token, resp, time.Hour), redisstore.ErrNotReplicated)
		replay, err := plain.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		require.True(t, replay.Record.Completed, "the unconfirmed outcome is stored on the master")
		assert.Equal(t, resp.Body, replay.Record.Response.Body)
	})
}

// TestObserverNamesRedis: an observer of the middleware gets every store
// call on a redisstore with the system "redis" (OpenTelemetry's
// db.system.name), through server.SystemNamer.
func TestObserverNamesRedis(t *testing.T) {
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		var mu sync.Mutex
		systems := map[string]string{} // by operation
		obs := &server.Observer{StoreOp: func(_ context.Context, info server.StoreOpInfo) {
			mu.Lock()
			defer mu.Unlock()
			systems[info.Op] = info.System
		}}
		store := newStore(t, rdb, redisstore.Options{})
		mw := server.Middleware(store, server.Options{SingleTenant: true, Observer: obs})
		url, client := serve(t, mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusCreated)
		})))
		key := rand.Text()
		require.Equal(t, http.StatusCreated, post(t, client, url, key, `{}`))
		require.Equal(t, http.StatusCreated, post(t, client, url, key, `{}`))
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, map[string]string{server.OpClaim: "redis", server.OpComplete: "redis"}, systems)
	})
}
