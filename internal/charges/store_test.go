package charges

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// TestObserverSeesTheStore: Config.Observer is the middleware's, and its
// store calls name the system the records are kept in, through the
// ledger's wrapper.
func TestObserverSeesTheStore(t *testing.T) {
	t.Parallel()
	stores := map[string]server.Store{"memory": nil} // Redis: in the redisstore module
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			results := map[server.Outcome]int{}
			systems := map[string]bool{}
			obs := &server.Observer{
				Request: func(_ context.Context, info server.RequestInfo) {
					mu.Lock()
					defer mu.Unlock()
					results[info.Outcome]++
				},
				StoreOp: func(_ context.Context, info server.StoreOpInfo) {
					mu.Lock()
					defer mu.Unlock()
					systems[info.System] = true
				},
			}
			svc, err := New(context.Background(), Config{Store: store, Observer: obs})
			require.NoError(t, err)
			srv := httptest.NewServer(svc.Handler())
			defer srv.Close()
			require.Equal(t, http.StatusCreated, post(t, srv.URL, "acme", "order-1", `{"amount":1000}`).status)
			require.Equal(t, http.StatusCreated, post(t, srv.URL, "acme", "order-1", `{"amount":1000}`).status)
			require.Equal(t, http.StatusUnprocessableEntity, post(t, srv.URL, "acme", "order-1", `{"amount":2000}`).status)

			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, map[server.Outcome]int{server.OutcomeExecuted: 1, server.OutcomeReplayed: 1, server.OutcomeKeyReused: 1}, results)
			want := "memory"
			if store != nil {
				want = "redis"
			}
			assert.Equal(t, map[string]bool{want: true}, systems)
		})
	}
}

// TestListWaitsForCommits: while a store records an outcome, a list of
// the charges cannot run, so no list misses the charge of an outcome the
// store may already be replaying.
func TestListWaitsForCommits(t *testing.T) {
	t.Parallel()
	var svc *Service
	listed := make(chan bool, 1)
	store := &hookedStore{Store: memstore.New(memstore.Options{}), afterComplete: func() {
		l := svc.ledger.(*memLedger)
		ok := l.commits.TryLock()
		if ok {
			l.commits.Unlock()
		}
		listed <- ok
	}}
	var err error
	svc, err = New(context.Background(), Config{Store: store})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	require.Equal(t, http.StatusCreated, post(t, srv.URL, "acme", "order-1", `{"amount":1000}`).status)
	assert.False(t, <-listed, "a list could run between the recorded outcome and its charge")
	cs, err := svc.Charges(context.Background(), "acme")
	require.NoError(t, err)
	assert.Len(t, cs, 1)
}

// hookedStore calls afterComplete once a Complete has recorded its
// outcome.
type hookedStore struct {
	server.Store
	afterComplete func()
}

func (s *hookedStore) Complete(ctx context.Context, k server.Key, token string, resp server.StoredResponse, retention time.Duration) error {
	err := s.Store.Complete(ctx, k, token, resp, retention)
	if err == nil {
		s.afterComplete()
	}
	return err
}

// TestPoolAndStoreExclusive: a service keeps its records in one place,
// and says so before touching PostgreSQL.
func TestPoolAndStoreExclusive(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none") // connects lazily: never here
	require.NoError(t, err)
	defer pool.Close()
	_, err = New(context.Background(), Config{Pool: pool, Store: memstore.New(memstore.Options{})})
	assert.ErrorContains(t, err, "exclusive")
}
