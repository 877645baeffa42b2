package etcdstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/etcdstore/internal/cluster"
)

// Methods of etcd's gRPC API, as interceptors see them.
const (
	methodRange = "/etcdserverpb.KV/Range"
	methodTxn   = "/etcdserverpb.KV/Txn"
	methodGrant = "/etcdserverpb.Lease/LeaseGrant"
)

// wire sits between a client and the cluster: it counts the calls each
// method sent, and can drop the answer of a call after the cluster acted
// on it, as a connection broken mid-reply would.
type wire struct {
	mu    sync.Mutex
	calls map[string]int
	// drop, if set, is asked about each call that has been answered; if
	// it returns an error, the caller gets that instead of the answer.
	drop func(method string) error
}

func (w *wire) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	w.mu.Lock()
	w.calls[method]++
	drop := w.drop
	w.mu.Unlock()
	if err == nil && drop != nil {
		if derr := drop(method); derr != nil {
			return derr
		}
	}
	return err
}

// counted returns the calls per method since the last reset, and resets.
func (w *wire) counted() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.calls
	w.calls = map[string]int{}
	return c
}

func (w *wire) setDrop(drop func(method string) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop = drop
}

// wiredClient returns a client of the test cluster whose calls go
// through a wire, closed when the test ends.
func wiredClient(t *testing.T) (*clientv3.Client, *wire) {
	t.Helper()
	w := &wire{calls: map[string]int{}}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: cluster.MaxRequestBytes,
		Logger:             zap.NewNop(),
		DialOptions:        []grpc.DialOption{grpc.WithChainUnaryInterceptor(w.intercept)},
	})
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli, w
}

// TestRoundTrips counts the calls the store sends to etcd through the
// middleware, as the package documentation's table states them: a new
// key is a read and two transactions, a replay one read, and a window's
// lease is granted once for all the keys that share it.
func TestRoundTrips(t *testing.T) {
	cli, w := wiredClient(t)
	store := newStore(t, cli, etcdstore.Options{})
	h := server.Middleware(store, server.Options{SingleTenant: true})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	send := func(key string) int {
		req := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{"amount":1}`))
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	require.Equal(t, http.StatusCreated, send("warm-up")) // grants the windows' leases
	w.counted()

	require.Equal(t, http.StatusCreated, send("new"))
	assert.Equal(t, map[string]int{methodRange: 1, methodTxn: 2}, w.counted(), "a new key")

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{"amount":1}`))
	req.Header.Set("Idempotency-Key", "new")
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code)
	require.Equal(t, "true", rec.Header().Get(server.ReplayedHeader))
	assert.Equal(t, map[string]int{methodRange: 1}, w.counted(), "a replay")

	for _, k := range []string{"a", "b", "c"} {
		require.Equal(t, http.StatusCreated, send(k))
	}
	assert.Zero(t, w.counted()[methodGrant], "keys expiring in one window share its lease")
}
