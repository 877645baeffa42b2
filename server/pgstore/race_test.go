package pgstore_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

const (
	raceRequests = 100
	raceRounds   = 20
)

// stampede sends raceRequests identical requests with key at once and
// returns what the clients saw.
func stampede(t *testing.T, svc *service, key string) []reply {
	t.Helper()
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		replies = make([]reply, raceRequests)
		errs    = make([]error, raceRequests)
	)
	for i := range replies {
		wg.Go(func() {
			<-start
			replies[i], errs[i] = svc.do(key)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return replies
}

// TestRaceOneCharge sends 100 identical payment requests with one fresh
// key at once, 20 times, through the middleware and a transactional
// pgstore, and counts the charges: exactly one per key, every round. The
// same stampede against a naive check-then-insert handler charges more
// than once, which shows the test can fail.
func TestRaceOneCharge(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name      string
		leased    bool
		pipelined bool
	}{
		{"middleware, claimed by the work's transaction", false, false},
		{"middleware, claimed under a lease", true, false},
		{"middleware, claim pipelined with the charge", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(t)
			var store server.Store // the service's own: ClaimWork
			switch {
			case tc.leased:
				store = leasedStore(svc.store)
			case tc.pipelined:
				store = pipelinedStore(t, svc)
			}
			svc.serveIdem(t, store, server.Options{}, func(w http.ResponseWriter, r *http.Request) {
				if err := svc.chargeTx(r, 1000); err != nil {
					http.Error(w, "charge failed", http.StatusInternalServerError)
					return
				}
				w.WriteHeader(http.StatusCreated)
				fmt.Fprint(w, `{"status":"charged"}`)
			})
			oneChargeEachRound(t, svc, "race")
		})
	}

	t.Run("naive check-then-insert", func(t *testing.T) {
		t.Parallel()
		svc := newService(t)
		svc.serve(t, naiveHandler(svc))
		most := 0
		for round := 0; round < raceRounds && most <= 1; round++ {
			key := fmt.Sprintf("naive-%d", round)
			stampede(t, svc, key)
			most = max(most, svc.charged(t, key))
		}
		assert.Greater(t, most, 1, "the naive handler never charged twice: the stampede does not race")
	})
}

// oneChargeEachRound sends raceRounds stampedes, each with a key of its
// own named after prefix, to svc, and requires of each that one request
// ran the handler, every other was answered 201 (a replay) or 409, and
// the key was charged once.
func oneChargeEachRound(t *testing.T, svc *service, prefix string) {
	t.Helper()
	for round := range raceRounds {
		key := fmt.Sprintf("%s-%d", prefix, round)
		fresh := 0
		for _, rep := range stampede(t, svc, key) {
			switch {
			case rep.status == http.StatusCreated && !rep.replayed:
				fresh++
			case rep.status == http.StatusCreated, rep.status == http.StatusConflict:
			default:
				t.Errorf("round %d: unexpected answer %d %s", round, rep.status, rep.body)
			}
		}
		require.Equal(t, 1, fresh, "round %d: requests that ran the handler", round)
		require.Equal(t, 1, svc.charged(t, key), "round %d: charges", round)
	}
}

// naiveHandler is the payment API without the middleware: it looks for an
// earlier charge with the request's key and inserts one if there is none,
// with a short pause in between such as real work takes.
func naiveHandler(svc *service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		key := r.Header.Get("Idempotency-Key")
		var n int
		if err := svc.pool.QueryRow(ctx, "SELECT count(*) FROM "+svc.charges+" WHERE key = $1", key).Scan(&n); err != nil {
			http.Error(w, "lookup failed", http.StatusInternalServerError)
			return
		}
		if n == 0 {
			time.Sleep(5 * time.Millisecond)
			if _, err := svc.pool.Exec(ctx, "INSERT INTO "+svc.charges+" (key, amount) VALUES ($1, 1000)", key); err != nil {
				http.Error(w, "charge failed", http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusCreated)
	}
}
