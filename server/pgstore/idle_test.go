package pgstore_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestIdleInTransactionTimeout: the sessions of the pool have an
// idle_in_transaction_session_timeout (here from the connection's startup
// parameters, as it would be from the server, the database or the role)
// shorter than the handler, which sits idle in the work's transaction
// before it charges. Each key is sent until it is answered 201, at most
// idleSends times. By default pgstore turns the timeout off for the work's
// transaction (Options.IdleInTransaction 0): every key completes on its
// first run; a timeout above the handler (Options.IdleInTransaction
// positive) holds too. The naive variant lets the session's timeout stand
// (negative): PostgreSQL ends each run's session, the work rolls back and
// its key is released, so no key ever completes and every send runs the
// handler again.
func TestIdleInTransactionTimeout(t *testing.T) {
	t.Parallel()
	const (
		keys      = 3
		idleSends = 3
		timeout   = 50 * time.Millisecond
		idle      = 6 * timeout // the handler's pause, idle in the work's transaction
	)
	for _, tc := range []struct {
		name   string
		leased bool
		idle   time.Duration
		naive  bool
	}{
		{"claimed by the work's transaction", false, 0, false},
		{"claimed under a lease", true, 0, false},
		{"a timeout above the handler", false, time.Minute, false},
		{"naive: the session's timeout stands", false, -1, true},
		{"naive, claimed under a lease", true, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc := &service{pool: sessionPool(t, 8, map[string]string{
				"idle_in_transaction_session_timeout": fmt.Sprint(timeout.Milliseconds()),
			}), table: tableName()}
			svc.store = newStore(t, svc.pool, pgstore.Options{Table: svc.table, Transactional: true, IdleInTransaction: tc.idle})
			svc.charges = newCharges(t, svc.pool)
			svc.client = &http.Client{Timeout: 30 * time.Second}
			var store server.Store
			if tc.leased {
				store = leasedStore(svc.store)
			}
			var runs atomic.Int64
			svc.serveIdem(t, store, server.Options{}, func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				time.Sleep(idle)
				if err := svc.chargeTx(r, 1000); err != nil {
					http.Error(w, "charge failed", http.StatusInternalServerError)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})

			completed := 0
			for i := range keys {
				key := fmt.Sprintf("idle-%d", i)
				for range idleSends {
					if svc.post(t, key).status == http.StatusCreated {
						break
					}
				}
				if _, done := svc.stored(t, key); done {
					completed++
				}
			}
			t.Logf("%d of %d keys completed in %d handler runs", completed, keys, runs.Load())
			if tc.naive {
				require.Zero(t, completed, "keys completed although the session's timeout ends every run")
				require.EqualValues(t, keys*idleSends, runs.Load(), "handler runs: every send runs the key again")
				return
			}
			require.Equal(t, keys, completed, "keys completed")
			require.EqualValues(t, keys, runs.Load(), "handler runs")
		})
	}
}
