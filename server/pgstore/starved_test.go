package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// starvedLease is the lease of TestStarvedRenewals: three renewals a
// lease, so a slow renewal on a loaded machine does not lose it.
const starvedLease = 3 * time.Second

// TestStarvedRenewals is TestOverload's proof that it can fail, made
// deterministic: the overload is forced rather than hoped for. Worker 1's
// pool has one connection, which its running transaction (BeginWork under
// a lease) holds while the handler blocks on a channel, so every renewal
// through the main pool waits for it. A retry reaches worker 2, a process
// with its own pool on the same table, once the first lease would have
// lapsed by the database's clock.
//
//   - naive, without the reserved pool: no renewal gets through, the lease
//     lapses, worker 2 takes the key over and the handler runs twice,
//     every time.
//   - with the reserved pool (the default): the renewals run on it, the
//     key stays worker 1's, worker 2 answers 409, and the handler runs
//     once.
func TestStarvedRenewals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		reserved int
		runs     int32
	}{
		{name: "naive: lease without the reserved pool", reserved: -1, runs: 2},
		{name: "reserved pool", runs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			watch := newPool(t, poolConfig(t, 2))
			table := tableName()
			s1 := newStore(t, newPool(t, poolConfig(t, 1)), pgstore.Options{Table: table, Transactional: true, ReservedConns: tc.reserved})
			s2 := newStore(t, newPool(t, poolConfig(t, 2)), pgstore.Options{Table: table, Transactional: true})
			dropTable(t, watch, table)

			var runs atomic.Int32
			started, proceed := make(chan struct{}), make(chan struct{})
			handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if runs.Add(1) == 1 {
					close(started)
					select { // the work ignores cancellation, as a card network call in flight would
					case <-proceed:
					case <-time.After(time.Minute): // bounds the test if it fails
					}
				}
				w.WriteHeader(http.StatusCreated)
			})
			serve := func(s *pgstore.Store) string {
				srv := httptest.NewServer(server.Middleware(leasedStore(s), server.Options{SingleTenant: true, Lease: starvedLease})(handler))
				t.Cleanup(srv.Close)
				return srv.URL
			}
			worker1, worker2 := serve(s1), serve(s2)
			const key = "pay-starved"
			post := func(url string) (int, error) {
				req, err := http.NewRequest(http.MethodPost, url+"/payments", strings.NewReader(payBody))
				if err != nil {
					return 0, err
				}
				req.Header.Set("Idempotency-Key", key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}

			first := make(chan int, 1)
			go func() {
				status, err := post(worker1)
				assert.NoError(t, err)
				first <- status
			}()
			<-started
			// Wait, by the database's clock, until the first lease would
			// have lapsed without renewals.
			var claimed time.Time
			require.NoError(t, watch.QueryRow(ctx, "SELECT statement_timestamp() FROM "+table+" WHERE key = $1", key).Scan(&claimed))
			for range 200 {
				var past bool
				require.NoError(t, watch.QueryRow(ctx, "SELECT statement_timestamp() > $1::timestamptz + $2::interval",
					claimed, starvedLease.String()).Scan(&past))
				if past {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			var lapsed bool
			require.NoError(t, watch.QueryRow(ctx, "SELECT expires_at < statement_timestamp() FROM "+table+" WHERE key = $1", key).Scan(&lapsed))

			retry, err := post(worker2)
			require.NoError(t, err)
			close(proceed)
			firstStatus := <-first
			s1.Settle()
			s2.Settle()
			assert.Equal(t, tc.runs, runs.Load(), "handler runs")
			if tc.runs == 2 {
				assert.True(t, lapsed, "the lease lapsed")
				assert.Equal(t, http.StatusCreated, retry, "the retry took the key over")
				assert.NotEqual(t, http.StatusCreated, firstStatus, "the first run's outcome was fenced out")
				return
			}
			assert.False(t, lapsed, "the lease was renewed")
			assert.Equal(t, http.StatusConflict, retry, "the retry found the key in flight")
			assert.Equal(t, http.StatusCreated, firstStatus)
		})
	}
}
