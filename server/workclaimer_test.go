package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// TestWorkClaimerInFlight: while a unit of work holds a key, a repeat is
// told the key is in flight, even with another body (the store cannot
// tell whose request holds it, so it is never called reuse); once the
// first has committed, the repeat is replayed and another body is 422.
// In wait mode the repeat waits and is replayed.
func TestWorkClaimerInFlight(t *testing.T) {
	t.Parallel()
	for _, wait := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprint("wait ", wait), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				fs := newFakeStore()
				release := make(chan struct{})
				runs := 0
				h := server.Middleware(fakeWorkClaimer{fs}, server.Options{SingleTenant: true, Wait: wait})(
					http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						runs++
						<-release
						w.WriteHeader(http.StatusCreated)
						fmt.Fprintf(w, "run %d", runs)
					}))
				first := make(chan *httptest.ResponseRecorder, 1)
				go func() { first <- serveDirect(h, "wc-1", "a") }()
				synctest.Wait() // the first holds the key
				if wait == 0 {
					assert.Equal(t, http.StatusConflict, serveDirect(h, "wc-1", "a").Code)
					assert.Equal(t, http.StatusConflict, serveDirect(h, "wc-1", "other").Code,
						"an unknown holder is in flight, not reuse")
					close(release)
				} else {
					repeat := make(chan *httptest.ResponseRecorder, 1)
					go func() { repeat <- serveDirect(h, "wc-1", "a") }()
					synctest.Wait()
					close(release)
					r := <-repeat
					assert.Equal(t, http.StatusCreated, r.Code)
					assert.Equal(t, "true", r.Header().Get(server.ReplayedHeader))
				}
				assert.Equal(t, "run 1", (<-first).Body.String())
				again := serveDirect(h, "wc-1", "a")
				assert.Equal(t, "true", again.Header().Get(server.ReplayedHeader))
				assert.Equal(t, "run 1", again.Body.String())
				assert.Equal(t, http.StatusUnprocessableEntity, serveDirect(h, "wc-1", "other").Code)
				assert.Equal(t, 1, runs)
				assert.Equal(t, []string{"Commit"}, fs.endsOf(server.Key{Key: "wc-1"}))
			})
		})
	}
}

// unsupportedClaims is a WorkClaimer configured not to claim within its
// unit of work.
type unsupportedClaims struct{ *fakeStore }

func (unsupportedClaims) ClaimWork(context.Context, server.Key, string) (server.Claim, context.Context, server.Work, error) {
	return server.Claim{}, nil, nil, fmt.Errorf("fake: no transactions: %w", errors.ErrUnsupported)
}

// failingClaims is a WorkClaimer whose ClaimWork fails.
type failingClaims struct{ *fakeStore }

func (failingClaims) ClaimWork(context.Context, server.Key, string) (server.Claim, context.Context, server.Work, error) {
	return server.Claim{}, nil, nil, errStore
}

// TestWorkClaimerUnsupportedOrFailing: a ClaimWork that says
// errors.ErrUnsupported leaves the claim to Store.Claim; one that fails is
// answered 503 and runs nothing.
func TestWorkClaimerUnsupportedOrFailing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		store  func(*fakeStore) server.Store
		status int
		ends   []string
		claims int
	}{
		{"unsupported: claimed with Claim", func(s *fakeStore) server.Store { return unsupportedClaims{s} }, http.StatusCreated, []string{"Complete"}, 1},
		{"failing: 503", func(s *fakeStore) server.Store { return failingClaims{s} }, http.StatusServiceUnavailable, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				fs := newFakeStore()
				runs := 0
				h := server.Middleware(tt.store(fs), server.Options{SingleTenant: true})(
					http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						runs++
						w.WriteHeader(http.StatusCreated)
					}))
				rec := serveDirect(h, "wc-2", "a")
				require.Equal(t, tt.status, rec.Code, rec.Body.String())
				assert.NotContains(t, rec.Body.String(), "secret")
				assert.Equal(t, tt.ends, fs.endsOf(server.Key{Key: "wc-2"}))
				claims, _ := fs.counts()
				assert.Equal(t, tt.claims, claims)
				assert.Equal(t, tt.claims, runs)
				idle()
			})
		})
	}
}
