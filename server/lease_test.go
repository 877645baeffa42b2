package server_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

const shortLease = 60 * time.Millisecond

// TestLeaseRenewalKeepsKey runs a handler for over three leases while
// repeats keep arriving: renewal keeps the key, so none takes it over.
func TestLeaseRenewalKeepsKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{Lease: shortLease}, nil)
	key := newKey()
	first := h.async(call{key: key, header: map[string]string{"X-Sleep": (4 * shortLease).String()}})
	require.Eventually(t, func() bool { return h.app.calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	deadline := time.Now().Add(3 * shortLease)
	for time.Now().Before(deadline) {
		requireProblem(t, h.do(call{key: key}), http.StatusConflict, server.ProblemInFlight)
		time.Sleep(shortLease / 4)
	}
	r := <-first
	require.Equal(t, 201, r.status)
	assert.Equal(t, int64(1), h.app.calls.Load(), "no repeat took the key over")
	assert.True(t, h.do(call{key: key}).replayed())
}

// flakyStore fails Renew with a transient error while failRenew is set.
type flakyStore struct {
	server.Store
	failRenew atomic.Bool
}

func (s *flakyStore) Renew(ctx context.Context, k server.Key, token string, lease time.Duration) error {
	if s.failRenew.Load() {
		return errors.New("renew: secret transient failure")
	}
	return s.Store.Renew(ctx, k, token, lease)
}

// TestLeaseLost stalls the first request past its lease (renewals fail),
// lets a repeat take the key over and finish, and then checks that the
// first is fenced off: its client gets 409 and the repeat's outcome is the
// one replayed.
func TestLeaseLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// recover: renewal works again after the takeover, so it finds the
		// lease lost and cancels the first handler; otherwise the first
		// handler finishes on its own and completion finds the lease lost.
		recover bool
	}{
		{"renewal finds it lost", true},
		{"completion finds it lost", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &flakyStore{Store: newMemstore()}
			store.failRenew.Store(true)
			var calls atomic.Int64
			taken := make(chan struct{})
			cause := make(chan error, 1)
			mw := server.Middleware(store, server.Options{SingleTenant: true, Lease: shortLease})
			srv := newServer(t, mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) > 1 {
					w.Write([]byte("second"))
					return
				}
				<-taken
				if tt.recover {
					select {
					case <-r.Context().Done():
						cause <- context.Cause(r.Context())
					case <-time.After(5 * time.Second):
						cause <- nil
					}
				}
				w.Write([]byte("first"))
			})))
			var once sync.Once
			unblock := func() { once.Do(func() { close(taken) }) }
			t.Cleanup(unblock) // before srv.Close, even if the test fails
			h := &harness{t: t, srv: srv, client: srv.Client()}
			key := newKey()
			first := h.async(call{key: key})
			require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)

			var second reply
			require.Eventually(t, func() bool {
				second = h.do(call{key: key})
				return second.status == http.StatusOK
			}, 5*time.Second, shortLease/4, "the lapsed key is never taken over")
			assert.Equal(t, "second", second.body)
			if tt.recover {
				store.failRenew.Store(false)
			}
			unblock()

			requireProblem(t, <-first, http.StatusConflict, server.ProblemLeaseLost)
			if tt.recover {
				assert.ErrorIs(t, <-cause, server.ErrLeaseLost, "the handler's context is cancelled with cause ErrLeaseLost")
			}
			again := h.do(call{key: key})
			assert.True(t, again.replayed())
			assert.Equal(t, "second", again.body)
			assert.Equal(t, int64(2), calls.Load())
		})
	}
}
