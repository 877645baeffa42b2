package memstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// TestFullIsStoreFull: both of the store's refusals, the store's bound and
// a scope's share, wrap server.ErrStoreFull, so the middleware answers them
// as a full store (503, the store-full problem, Retry-After: 30), not as a
// failing one, and its observer sees store_full from a store named
// "memory".
func TestFullIsStoreFull(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  memstore.Options
		scope bool // the requests carry a scope, whose share is one key
	}{
		{"store full", memstore.Options{MaxKeys: 1}, false},
		{"scope full", memstore.Options{MaxKeys: 100, ScopeMaxKeys: 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu      sync.Mutex
				results []server.Outcome
				ops     []server.StoreOpInfo
			)
			obs := &server.Observer{
				Request: func(_ context.Context, info server.RequestInfo) {
					mu.Lock()
					defer mu.Unlock()
					results = append(results, info.Outcome)
				},
				StoreOp: func(_ context.Context, info server.StoreOpInfo) {
					mu.Lock()
					defer mu.Unlock()
					ops = append(ops, info)
				},
			}
			opts := server.Options{SingleTenant: !tt.scope, Observer: obs}
			if tt.scope {
				opts.Scope = func(*http.Request) (string, error) { return "acme", nil }
			}
			h := server.Middleware(memstore.New(tt.opts), opts)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusCreated)
			}))
			post := func(key string) *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{}`))
				r.Header.Set(server.DefaultHeader, key)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			require.Equal(t, http.StatusCreated, post("first").Code)
			w := post("second")
			require.Equal(t, http.StatusServiceUnavailable, w.Code)
			assert.Equal(t, "30", w.Header().Get("Retry-After"))
			assert.Contains(t, w.Body.String(), server.ProblemStoreFull)
			assert.Equal(t, http.StatusCreated, post("first").Code, "a key the store holds is answered")

			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []server.Outcome{server.OutcomeExecuted, server.OutcomeStoreFull, server.OutcomeReplayed}, results)
			require.NotEmpty(t, ops)
			var full int
			for _, op := range ops {
				assert.Equal(t, "memory", op.System, "%s", op.Op)
				if op.ErrorType == "store_full" {
					full++
				}
			}
			assert.Equal(t, 1, full, "one claim was refused as full: %+v", ops)
		})
	}
}

// TestFullErrors: the refusals keep their own identities and the
// server's.
func TestFullErrors(t *testing.T) {
	t.Parallel()
	for _, err := range []error{memstore.ErrFull, memstore.ErrScopeFull} {
		assert.True(t, errors.Is(err, server.ErrStoreFull), "%v", err)
		assert.True(t, errors.Is(err, memstore.ErrFull), "%v", err)
	}
	assert.False(t, errors.Is(memstore.ErrFull, memstore.ErrScopeFull))
	assert.Equal(t, "memory", memstore.New(memstore.Options{}).StoreSystem())
}
