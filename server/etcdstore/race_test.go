package etcdstore_test

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
)

const (
	raceRequests = 100
	raceRounds   = 10
)

// executions is a handler's side effect: it counts how often each key's
// work ran.
type executions struct {
	mu    sync.Mutex
	byKey map[string]int
	total atomic.Int64
}

func newExecutions() *executions { return &executions{byKey: map[string]int{}} }

func (e *executions) ran(key string) {
	e.mu.Lock()
	e.byKey[key]++
	e.mu.Unlock()
	e.total.Add(1)
}

func (e *executions) of(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byKey[key]
}

// post sends a POST with key and body to url and returns the status, or 0
// after a failure it reports (it may run on any goroutine).
func post(t *testing.T, client *http.Client, url, key, body string) int {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if !assert.NoError(t, err) {
		return 0
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if !assert.NoError(t, err) {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// serve serves h on a loopback test server and returns its URL and a
// client with room for raceRequests connections.
func serve(t *testing.T, h http.Handler) (string, *http.Client) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: raceRequests}, Timeout: 30 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	return srv.URL, client
}

// stampede sends raceRequests identical POSTs with one fresh key at once
// and returns the key and the statuses.
func stampede(t *testing.T, url string, client *http.Client) (string, []int) {
	key := rand.Text()
	statuses := make([]int, raceRequests)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range statuses {
		wg.Go(func() {
			<-start
			statuses[i] = post(t, client, url, key, `{"amount":100}`)
		})
	}
	close(start)
	wg.Wait()
	return key, statuses
}

// TestRaceOneExecution sends 100 identical requests with one fresh key at
// once, round after round, through server.Middleware on an etcdstore on
// the three-member cluster, and counts the handler's executions: exactly
// one per key. The same stampede against a naive handler that reads the
// key from etcd, does the work and then puts the key executes some key
// more than once, which shows the test can fail.
func TestRaceOneExecution(t *testing.T) {
	cli := connect(t)
	t.Run("middleware", func(t *testing.T) {
		effects := newExecutions()
		store := newStore(t, cli, etcdstore.Options{})
		mw := server.Middleware(store, server.Options{SingleTenant: true})
		url, client := serve(t, mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Millisecond) // the work
			effects.ran(r.Header.Get("Idempotency-Key"))
			w.WriteHeader(http.StatusCreated)
		})))
		for round := range raceRounds {
			key, statuses := stampede(t, url, client)
			assert.Equal(t, 1, effects.of(key), "executions in round %d", round)
			for _, s := range statuses {
				assert.Contains(t, []int{http.StatusCreated, http.StatusConflict}, s)
			}
		}
	})
	t.Run("naive check-then-put", func(t *testing.T) {
		effects := newExecutions()
		prefix := testPrefix(t, cli)
		url, client := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := context.Background()
			key := r.Header.Get("Idempotency-Key")
			got, err := cli.Get(ctx, prefix+key, clientv3.WithCountOnly())
			if err != nil {
				http.Error(w, "etcd", http.StatusServiceUnavailable)
				return
			}
			if got.Count == 1 {
				w.WriteHeader(http.StatusOK)
				return
			}
			time.Sleep(time.Millisecond) // the work between the check and the put
			effects.ran(key)
			if _, err := cli.Put(ctx, prefix+key, "done"); err != nil {
				http.Error(w, "etcd", http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		for range raceRounds {
			stampede(t, url, client)
		}
		t.Logf("naive: %d executions for %d keys", effects.total.Load(), raceRounds)
		assert.Greater(t, effects.total.Load(), int64(raceRounds),
			"the naive handler must execute some key more than once")
	})
}
