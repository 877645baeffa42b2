package server_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

const (
	raceRounds   = 20
	raceRequests = 100
)

// sideEffects is a handler that performs one side effect per execution,
// keyed by the request's Idempotency-Key.
type sideEffects struct {
	mu     sync.Mutex
	byKey  map[string]int
	total  atomic.Int64
	sleep  time.Duration
	checks bool // check-then-insert: skip keys already seen (the naive way)
}

func (s *sideEffects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if s.checks {
		s.mu.Lock()
		_, seen := s.byKey[key]
		s.mu.Unlock()
		if seen {
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	time.Sleep(s.sleep) // the work between the check and the insert
	s.mu.Lock()
	s.byKey[key]++
	s.mu.Unlock()
	s.total.Add(1)
	w.WriteHeader(http.StatusCreated)
}

// stampede sends raceRequests identical POSTs with one fresh key at once,
// for raceRounds rounds, and returns the side effects of each round.
func stampede(t *testing.T, handler http.Handler, effects *sideEffects) []int {
	t.Helper()
	srv := newServer(t, handler)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: raceRequests}}
	t.Cleanup(client.CloseIdleConnections)
	var perRound []int
	for range raceRounds {
		key := newKey()
		var start, done sync.WaitGroup
		start.Add(1)
		for range raceRequests {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				req, err := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":100}`))
				if !assert.NoError(t, err) {
					return
				}
				req.Header.Set("Idempotency-Key", key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if !assert.NoError(t, err) {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Contains(t, []int{http.StatusOK, http.StatusCreated, http.StatusConflict}, resp.StatusCode)
			}()
		}
		start.Done()
		done.Wait()
		effects.mu.Lock()
		perRound = append(perRound, effects.byKey[key])
		effects.mu.Unlock()
	}
	return perRound
}

// TestRaceOneSideEffect: 100 identical requests at once with one fresh key
// produce exactly one side effect, every round. The naive check-then-insert
// handler, run the same way without the middleware, produces more, which
// shows the test can fail.
func TestRaceOneSideEffect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		naive bool
	}{
		{"middleware", false},
		{"naive check-then-insert", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			effects := &sideEffects{byKey: map[string]int{}, sleep: time.Millisecond, checks: tt.naive}
			var handler http.Handler = effects
			if !tt.naive {
				handler = server.Middleware(newMemstore(), server.Options{SingleTenant: true})(effects)
			}
			perRound := stampede(t, handler, effects)
			require.Len(t, perRound, raceRounds)
			if tt.naive {
				assert.Greater(t, effects.total.Load(), int64(raceRounds),
					"the naive handler must execute some key more than once: %v", perRound)
				return
			}
			for round, n := range perRound {
				assert.Equal(t, 1, n, "side effects in round %d", round)
			}
		})
	}
}
