package mysqlstore_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/mysqlstore"
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

// leased hides the store's ClaimWork, so that the middleware claims under
// a lease (Claim, BeginWork) and the work's transaction is begun under it.
type leased struct {
	server.Store
	server.Transactor
}

// TestRaceOneCharge sends 100 identical payment requests with one fresh
// key at once, 20 times, through the middleware and a transactional
// mysqlstore, and counts the charges: exactly one per key, every round,
// whether the key is claimed by the work's connection (ClaimWork) or under
// a lease (Claim and BeginWork), and through a Store in lease mode whose
// handler charges outside any transaction. The same stampede against a naive
// check-then-insert handler charges more than once, which shows the test
// can fail.
func TestRaceOneCharge(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name          string
		leased, plain bool
	}{
		{"middleware, claimed by the work's connection", false, false},
		{"middleware, claimed under a lease", true, false},
		{"middleware, lease mode, work outside the database", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(t)
			var store server.Store // the service's own: ClaimWork
			charge := svc.chargeTx
			switch {
			case tc.leased:
				store = leased{svc.store, svc.store}
			case tc.plain:
				store = newStore(t, svc.db, mysqlstore.Options{})
				charge = func(r *http.Request, amount int) error {
					_, err := svc.db.ExecContext(r.Context(), "INSERT INTO "+svc.charges+" (idem_key, amount) VALUES (?, ?)",
						r.Header.Get("Idempotency-Key"), amount)
					return err
				}
			}
			svc.serveIdem(t, store, func(w http.ResponseWriter, r *http.Request) {
				if err := charge(r, 1000); err != nil {
					http.Error(w, "charge failed", http.StatusInternalServerError)
					return
				}
				w.WriteHeader(http.StatusCreated)
				fmt.Fprint(w, `{"status":"charged"}`)
			})
			for round := range raceRounds {
				key := fmt.Sprintf("race-%d", round)
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
		t.Logf("naive handler: %d charges for one key", most)
		assert.Greater(t, most, 1, "the naive handler never charged twice: the stampede does not race")
	})
}

// naiveHandler is the payment API without the middleware: it looks for an
// earlier charge with the request's key and inserts one if there is none,
// with a short pause in between such as real work takes.
func naiveHandler(svc *service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		key := r.Header.Get("Idempotency-Key")
		var n int
		if err := svc.db.QueryRowContext(ctx, "SELECT count(*) FROM "+svc.charges+" WHERE idem_key = ?", key).Scan(&n); err != nil {
			http.Error(w, "lookup failed", http.StatusInternalServerError)
			return
		}
		if n == 0 {
			time.Sleep(5 * time.Millisecond)
			if _, err := svc.db.ExecContext(ctx, "INSERT INTO "+svc.charges+" (idem_key, amount) VALUES (?, 1000)", key); err != nil {
				http.Error(w, "charge failed", http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusCreated)
	}
}
