package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// leased is a transactional pgstore as a middleware sees it when it claims
// under a lease (Claim, then BeginWork): ClaimWork is hidden.
type leased struct {
	server.Store
	server.Transactor
}

func leasedStore(s *pgstore.Store) leased { return leased{s, s} }

// stalledRenewals is the leased store as a worker sees it when its
// renewals never reach the database (a stalled process, a partition):
// Renew reports success and changes nothing. Everything else, BeginWork
// included, is the real store.
type stalledRenewals struct{ leased }

func (stalledRenewals) Renew(context.Context, server.Key, string, time.Duration) error { return nil }

// TestLeaseTakeover, for a transactional store claimed under a lease
// (Claim and BeginWork), runs a first request whose handler charges and then
// hangs, and sends a retry while it hangs. If the first worker's lease
// lapses, the retry takes the key over and charges; the first worker's
// completion is refused (409) and its charge rolled back with its
// transaction. If the lease is renewed, the retry is told the request is
// in flight. Either way exactly one charge remains and a further repeat
// replays the outcome that was recorded.
func TestLeaseTakeover(t *testing.T) {
	t.Parallel()
	// The superseded worker's fenced commit is bounded by one lease too: a
	// lease long enough that a loaded machine's commit fits in it.
	const lease = time.Second
	cases := []struct {
		name  string
		renew bool
	}{
		{"lease lapses, retry takes over", false},
		{"lease renewed, retry is in flight", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(t)
			var (
				calls   atomic.Int32
				charged = make(chan struct{})
				unblock = make(chan struct{})
			)
			var store server.Store = stalledRenewals{leasedStore(svc.store)}
			if tc.renew {
				store = leasedStore(svc.store)
			}
			svc.serveIdem(t, store, server.Options{Lease: lease}, func(w http.ResponseWriter, r *http.Request) {
				attempt := int(calls.Add(1))
				if err := svc.chargeTx(r, attempt); err != nil {
					http.Error(w, "charge failed", http.StatusInternalServerError)
					return
				}
				if attempt == 1 {
					close(charged)
					<-unblock
				}
				w.WriteHeader(http.StatusCreated)
				fmt.Fprintf(w, `{"attempt":%d}`, attempt)
			})
			const key = "pay-hang"

			first := make(chan reply, 1)
			go func() {
				rep, err := svc.do(key)
				assert.NoError(t, err)
				first <- rep
			}()
			<-charged
			if tc.renew {
				// Outlast three leases by the database's clock; renewals
				// keep the key.
				require.Eventually(t, func() bool {
					var ok bool
					require.NoError(t, svc.pool.QueryRow(context.Background(),
						"SELECT claimed_at + $2::interval < statement_timestamp() FROM "+svc.table+" WHERE key = $1",
						key, 3*lease).Scan(&ok))
					return ok
				}, 10*time.Second, 10*time.Millisecond)
			} else {
				svc.waitLeaseLapsed(t, key)
			}

			retry := svc.post(t, key)
			close(unblock)
			firstRep := <-first

			if tc.renew {
				assert.Equal(t, http.StatusConflict, retry.status, "retry while the first runs: %s", retry.body)
				assert.Equal(t, http.StatusCreated, firstRep.status, firstRep.body)
				assert.Equal(t, `{"attempt":1}`, firstRep.body)
			} else {
				assert.Equal(t, http.StatusCreated, retry.status, retry.body)
				assert.False(t, retry.replayed)
				assert.Equal(t, `{"attempt":2}`, retry.body)
				assert.Equal(t, http.StatusConflict, firstRep.status, "the superseded worker's answer: %s", firstRep.body)
			}
			want := 1
			if !tc.renew {
				want = 2
			}
			var amounts []int
			rows, err := svc.pool.Query(context.Background(), "SELECT amount FROM "+svc.charges+" WHERE key = $1", key)
			require.NoError(t, err)
			for rows.Next() {
				var a int
				require.NoError(t, rows.Scan(&a))
				amounts = append(amounts, a)
			}
			require.NoError(t, rows.Err())
			require.Equal(t, []int{want}, amounts, "exactly one charge, by the worker whose outcome was recorded")

			again := svc.post(t, key)
			assert.Equal(t, http.StatusCreated, again.status)
			assert.True(t, again.replayed)
			assert.Equal(t, fmt.Sprintf(`{"attempt":%d}`, want), again.body)
			assert.Equal(t, int32(2-btoi(tc.renew)), calls.Load(), "handler runs")
		})
	}
}

func btoi(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
