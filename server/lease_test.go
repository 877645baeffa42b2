package server_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

const shortLease = 60 * time.Millisecond

// TestLeaseRenewalKeepsKey runs a handler for four leases (on a fake
// clock) while repeats keep arriving every quarter lease: renewal keeps
// the key, so none takes it over, though the store lets any repeat take a
// lapsed lease over.
func TestLeaseRenewalKeepsKey(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const lease = time.Second
		fs := newFakeStore()
		runs := 0
		h := server.Middleware(fs, server.Options{SingleTenant: true, Lease: lease})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				time.Sleep(4 * lease)
				w.WriteHeader(http.StatusCreated)
			}))
		first := make(chan int, 1)
		go func() { first <- serveDirect(h, "renewed-1", "x").Code }()
		for range 15 {
			time.Sleep(lease / 4)
			require.Equal(t, http.StatusConflict, serveDirect(h, "renewed-1", "x").Code)
		}
		require.Equal(t, http.StatusCreated, <-first)
		assert.Equal(t, 1, runs, "no repeat took the key over")
		assert.Equal(t, "true", serveDirect(h, "renewed-1", "x").Header().Get(server.ReplayedHeader))
		idle()
	})
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
