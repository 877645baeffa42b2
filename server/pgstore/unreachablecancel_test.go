package pgstore_test

import (
	"context"
	"net"
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

// silentCancels is a dialer for a pool whose connections, once armed, go
// to a server that accepts them and never answers, as pgx's cancel
// request finds PostgreSQL in a partition. It reports when pgx gives up
// on such a connection and closes it, and holds them until freed.
type silentCancels struct {
	hole   net.Listener
	armed  atomic.Bool
	closed atomic.Bool // pgx closed a connection to the hole
	mu     sync.Mutex
	held   []net.Conn // the hole's side
}

func newSilentCancels(t *testing.T) *silentCancels {
	t.Helper()
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &silentCancels{hole: hole}
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.held = append(s.held, c)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(s.free)
	return s
}

func (s *silentCancels) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	if !s.armed.Load() {
		return d.DialContext(ctx, network, addr)
	}
	c, err := d.DialContext(ctx, "tcp", s.hole.Addr().String())
	if err != nil {
		return nil, err
	}
	return &closeSeen{Conn: c, closed: &s.closed}, nil
}

// free closes the hole and the connections it holds: pgx's cancel
// request then fails at once.
func (s *silentCancels) free() {
	s.hole.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.held {
		c.Close()
	}
	s.held = nil
}

// closeSeen records that its connection was closed.
type closeSeen struct {
	net.Conn
	closed *atomic.Bool
}

func (c *closeSeen) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// TestUnansweredCancelDoesNotHoldTheAnswer: a handler bounds its query
// with a timeout of its own, and answers when it passes; pgx closes the
// work's connection and sends PostgreSQL a cancel request, which gets no
// answer (a partition). The rollback waits for that cancel only briefly,
// so the client has its answer long before pgx gives up on the cancel
// (15 s): the request was not held for a cancel that will not arrive.
func TestUnansweredCancelDoesNotHoldTheAnswer(t *testing.T) {
	t.Parallel()
	cancels := newSilentCancels(t)
	cfg := poolConfig(t, 2)
	cfg.ConnConfig.DialFunc = cancels.dial
	s := newStore(t, newPool(t, cfg), pgstore.Options{Transactional: true})
	h := server.Middleware(s, server.Options{SingleTenant: true})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, _ := pgstore.Tx(r.Context())
		ctx, cancel := context.WithTimeout(r.Context(), 100*time.Millisecond)
		defer cancel()
		cancels.armed.Store(true) // the pool's connection is open: the next dial is the cancel
		if _, err := tx.Exec(ctx, "SELECT pg_sleep(2)"); err != nil {
			http.Error(w, "ledger timed out", http.StatusGatewayTimeout)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	req := httptest.NewRequest(http.MethodPost, "/p", strings.NewReader("x"))
	req.Header.Set("Idempotency-Key", "silent-cancel-1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	cancels.armed.Store(false)

	assert.Equal(t, http.StatusGatewayTimeout, rec.Code)
	assert.False(t, cancels.closed.Load(), "the answer waited until pgx gave up on the cancel request")
	cancels.free()
}
