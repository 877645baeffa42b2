package charges

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/faultproxy"
)

// TestEndToEnd sends a batch of charges from the idem client, through a
// proxy that drops answers after the service committed them, resets
// connections and injects 503s, to the charges service behind the
// middleware (in memory, and on PostgreSQL in transactional mode). Every
// operation must be charged exactly once, and the client must report the
// replays that answered its retries.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(svc.Handler())
			defer srv.Close()
			proxy, err := faultproxy.Start(faultproxy.Config{
				Upstream: srv.URL, Drop: 0.3, Reset: 0.1, Unavailable: 0.1,
				MaxDelay: time.Millisecond, Seed: uint64(time.Now().UnixNano()),
			})
			require.NoError(t, err)
			defer proxy.Close()
			j, err := idem.OpenJournal(filepath.Join(t.TempDir(), "client.journal"), idem.JournalOptions{})
			require.NoError(t, err)
			defer j.Close()
			c, err := idem.New(idem.Options{Journal: j, MaxAttempts: 30, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetryAfter: 50 * time.Millisecond})
			require.NoError(t, err)

			const ops = 120
			client := "e2e-" + name
			var replays atomic.Int64
			var wg sync.WaitGroup
			work := make(chan int)
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range work {
						body := fmt.Sprintf(`{"amount":%d,"currency":"usd","ref":"op-%d"}`, 1000+i, i)
						req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, proxy.URL()+"/charges", bytes.NewReader([]byte(body)))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set(ClientHeader, client)
						resp, err := c.Do(req)
						if !assert.NoError(t, err, "op %d", i) {
							continue
						}
						assert.Equal(t, http.StatusCreated, resp.StatusCode, "op %d: %s", i, resp.Body)
						if resp.Replayed {
							replays.Add(1)
						}
					}
				}()
			}
			for i := range ops {
				work <- i
			}
			close(work)
			wg.Wait()

			cs, err := svc.Charges(context.Background(), client)
			require.NoError(t, err)
			perRef := map[string]int{}
			for _, ch := range cs {
				perRef[ch.Ref]++
			}
			for i := range ops {
				assert.Equal(t, 1, perRef[fmt.Sprintf("op-%d", i)], "op %d charged exactly once", i)
			}
			assert.Len(t, cs, ops)
			st := proxy.Stats()
			t.Logf("%d requests: %d answers dropped after the charge, %d resets, %d 503s; the client saw %d replays",
				st.Requests, st.Dropped, st.Resets, st.Unavailable, replays.Load())
			require.Positive(t, st.Dropped, "the proxy lost answers")
			assert.Positive(t, replays.Load(), "retries after lost answers were answered by replays")
			assert.LessOrEqual(t, replays.Load(), st.Replayed)
			pending, err := j.Pending()
			require.NoError(t, err)
			assert.Empty(t, pending)
		})
	}
}
