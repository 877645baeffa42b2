package charges

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/storetest"
)

// clock is a settable clock for the store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestTakeoverChargesOnce: the first worker stalls past its lease (a long
// pause, say), a retry takes the key over and charges; the first worker's
// charge must not count, as a rolled-back PostgreSQL transaction would
// not. The in-memory ledger commits under the fence of the store that
// keeps the records (here Config.Store, a memstore on the test's clock;
// the default memstore is wrapped the same way).
func TestTakeoverChargesOnce(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Now()}
	store := memstore.New(memstore.Options{Now: clk.Now})
	s, err := New(context.Background(), Config{Store: store, Delay: 200 * time.Millisecond, Lease: time.Hour})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	first := make(chan answer, 1)
	go func() { first <- post(t, srv.URL, "acme", "order-7", `{"amount":700}`) }()
	for deadline := time.Now().Add(5 * time.Second); store.Len() == 0; {
		require.True(t, time.Now().Before(deadline), "the first request never claimed its key")
		time.Sleep(time.Millisecond)
	}
	clk.advance(2 * time.Hour) // the first worker's lease lapses while it runs
	second := post(t, srv.URL, "acme", "order-7", `{"amount":700}`)
	a := <-first

	assert.Equal(t, http.StatusCreated, second.status, "the retry took the key over and charged")
	assert.Equal(t, http.StatusConflict, a.status, "the first worker's outcome was refused")
	cs, err := s.Charges(context.Background(), "acme")
	require.NoError(t, err)
	assert.Len(t, cs, 1, "one charge for one key")
}

// TestInMemoryTransactorConformance: the in-memory service's store, a
// memstore made transactional for its ledger, is a conforming Store and
// Transactor.
func TestInMemoryTransactorConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) server.Store {
		return &memTx{Store: memstore.New(memstore.Options{}), ledger: &memLedger{}}
	})
}
