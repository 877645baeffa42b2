package server_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// An observer that panics right after a key was acquired must not leave
// the claim held: nothing else would end it. A unit of work is rolled
// back (a transaction's lock would otherwise outlive the request), a
// leased key released (it would otherwise wait out its lease), and the
// retry runs the work.
func TestObserverPanicAfterAClaimEndsIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(*fakeStore) server.Store
		end   string
	}{
		{"unit of work", func(s *fakeStore) server.Store { return fakeWorkClaimer{s} }, "Rollback"},
		{"lease", func(s *fakeStore) server.Store { return s }, "Release"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := newFakeStore()
			var panicked atomic.Bool
			obs := &server.Observer{StoreOp: func(_ context.Context, i server.StoreOpInfo) {
				if i.Op == server.OpClaim && panicked.CompareAndSwap(false, true) {
					panic("metrics backend down")
				}
			}}
			h := newHarness(t, server.Options{Observer: obs}, tc.store(fs))
			k := newKey()
			first := h.do(call{key: k})
			require.Error(t, first.err, "net/http drops the connection of a handler that panicked")
			assert.Equal(t, []string{tc.end}, fs.endsOf(server.Key{Scope: "t1", Key: k}), "the claim was ended")
			again := h.do(call{key: k})
			require.NoError(t, again.err)
			assert.Equal(t, http.StatusCreated, again.status, "the retry runs the work")
			assert.Equal(t, int64(1), h.app.calls.Load())
		})
	}
}
