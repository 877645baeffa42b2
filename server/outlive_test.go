package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// TestHandlerSeesItsKey: the handler's context names the (scope, key) its
// request holds, and the client's own context, which the work's is not.
func TestHandlerSeesItsKey(t *testing.T) {
	t.Parallel()
	var got server.Key
	var ok, clientDone, workDone bool
	h := server.Middleware(newMemstore(), server.Options{Scope: func(*http.Request) (string, error) { return "acct_1", nil }})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, ok = server.KeyFrom(r.Context())
			cancelOf(r)()
			clientDone = server.ClientContext(r.Context()).Err() != nil
			workDone = r.Context().Err() != nil
			w.WriteHeader(http.StatusCreated)
		}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(withCancel(ctx, cancel), http.MethodPost, "/orders", strings.NewReader("x"))
	req.Header.Set("Idempotency-Key", `"order-17"`)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusCreated, rec.Code)
	require.True(t, ok)
	assert.Equal(t, server.Key{Scope: "acct_1", Key: "order-17"}, got)
	assert.True(t, clientDone, "ClientContext is the client's")
	assert.False(t, workDone, "the work's context outlives the client")

	_, ok = server.KeyFrom(context.Background())
	assert.False(t, ok)
	bg := context.Background()
	assert.Equal(t, bg, server.ClientContext(bg), "no work: the context itself")
}

// TestRunOnceWorkOutlivesItsCaller: RunOnce's work has its key, and the
// caller's cancellation does not cancel it; its result is recorded, and
// the redelivery replays it.
func TestRunOnceWorkOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	store := newMemstore()
	k := server.Key{Scope: "queue", Key: newKey()}
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	work := func(wctx context.Context) ([]byte, error) {
		runs++
		got, ok := server.KeyFrom(wctx)
		assert.True(t, ok)
		assert.Equal(t, k, got)
		cancel() // the consumer gives up mid-work
		if err := wctx.Err(); err != nil {
			return nil, err
		}
		return []byte("done"), nil
	}
	res, replayed, err := server.RunOnce(ctx, store, k, "fp", work, server.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, "done", string(res))
	assert.False(t, replayed)
	res, replayed, err = server.RunOnce(context.Background(), store, k, "fp", work, server.RunOptions{})
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.Equal(t, "done", string(res))
	assert.Equal(t, 1, runs)
}

// TestWorkIsBoundedOnTheServersSide: the work's context ends with cause
// ErrWorkTimeout after WorkTimeout, or ErrShutdown when Shutdown closes;
// the key is released, so a retry runs it. On a fake clock.
func TestWorkIsBoundedOnTheServersSide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  func(shutdown chan struct{}) server.Options
		stop  func(shutdown chan struct{})
		cause error
		after time.Duration
	}{
		{"work timeout", func(chan struct{}) server.Options {
			return server.Options{SingleTenant: true, WorkTimeout: 5 * time.Second}
		}, func(chan struct{}) {}, server.ErrWorkTimeout, 5 * time.Second},
		{"default work timeout", func(chan struct{}) server.Options {
			return server.Options{SingleTenant: true}
		}, func(chan struct{}) {}, server.ErrWorkTimeout, server.DefaultWorkTimeout},
		{"shutdown", func(sd chan struct{}) server.Options {
			return server.Options{SingleTenant: true, Shutdown: sd}
		}, func(sd chan struct{}) { time.Sleep(3 * time.Second); close(sd) }, server.ErrShutdown, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				sd := make(chan struct{})
				var cause error
				var took time.Duration
				runs := 0
				h := server.Middleware(newMemstore(), tc.opts(sd))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					runs++
					if runs > 1 {
						w.WriteHeader(http.StatusCreated)
						return
					}
					start := time.Now()
					go tc.stop(sd)
					<-r.Context().Done()
					cause, took = context.Cause(r.Context()), time.Since(start)
					http.Error(w, "aborted", http.StatusServiceUnavailable)
				}))
				rec := serveDirect(h, "bounded-work", "x")
				assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
				assert.ErrorIs(t, cause, tc.cause)
				assert.Equal(t, tc.after, took)
				rec = serveDirect(h, "bounded-work", "x")
				assert.Equal(t, http.StatusCreated, rec.Code, "released: the retry runs")
				assert.Equal(t, 2, runs)
				idle()
			})
		})
	}
}
