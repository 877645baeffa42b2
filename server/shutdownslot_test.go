package server_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemhq/idem/server"
)

// TestShutdownWhileWaitingForASlot: a request whose key is held but whose
// work waits for a slot (Options.MaxConcurrent) when Shutdown closes is
// refused 503 ProblemOverloaded, its key released and nothing run, as a
// start that came too late is; the store did not fail, so nothing is
// logged as its failure, and a retry (to this or another instance) runs
// the work once.
func TestShutdownWhileWaitingForASlot(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			mu   sync.Mutex
			logs bytes.Buffer
		)
		logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), &slog.HandlerOptions{Level: slog.LevelDebug}))
		shutdown := make(chan struct{})
		release := make(chan struct{})
		var runs atomic.Int32
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Idempotency-Key") == "holder" {
				<-release
			} else {
				runs.Add(1)
			}
			w.WriteHeader(http.StatusCreated)
		})
		opts := server.Options{SingleTenant: true, MaxConcurrent: 1, StartTimeout: time.Minute, Shutdown: shutdown, Logger: logger}
		store := newMemstore()
		h := server.Middleware(store, opts)(handler)
		go serveDirect(h, "holder", "x") // holds the one slot
		synctest.Wait()
		var waiting *httptest.ResponseRecorder
		done := make(chan struct{})
		go func() { waiting = serveDirect(h, "waiter", "y"); close(done) }()
		synctest.Wait()
		close(shutdown)
		<-done
		assert.Equal(t, http.StatusServiceUnavailable, waiting.Code)
		assert.Contains(t, waiting.Body.String(), server.ProblemOverloaded)
		assert.Zero(t, runs.Load(), "the waiting work never ran")
		close(release)
		synctest.Wait()

		// Another instance, not shutting down, on the same store.
		other := server.Middleware(store, server.Options{SingleTenant: true})(handler)
		assert.Equal(t, http.StatusCreated, serveDirect(other, "waiter", "y").Code, "the key was released")
		assert.EqualValues(t, 1, runs.Load())
		idle()
		mu.Lock()
		defer mu.Unlock()
		assert.NotContains(t, logs.String(), "store", "no store failure is logged:\n%s", logs.String())
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
