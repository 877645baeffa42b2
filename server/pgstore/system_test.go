package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestStoreSystem: observers name the store's calls "postgresql",
// OpenTelemetry's db.system.name for PostgreSQL.
func TestStoreSystem(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, pgstore.Options{Transactional: true})
	var (
		mu  sync.Mutex
		ops []server.StoreOpInfo
	)
	obs := &server.Observer{StoreOp: func(_ context.Context, info server.StoreOpInfo) {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, info)
	}}
	h := server.Middleware(s, server.Options{SingleTenant: true, Observer: obs})(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	r := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{}`))
	r.Header.Set(server.DefaultHeader, "system")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusCreated, w.Code)
	s.Settle()

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, ops)
	for _, op := range ops {
		assert.Equal(t, "postgresql", op.System, "%s", op.Op)
	}
	assert.Equal(t, "postgresql", s.StoreSystem())
}
