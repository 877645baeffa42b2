package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// Overload: more handlers than connections, each running, under a lease,
// longer than its lease.
const (
	overloadPool     = 4
	overloadRequests = 50
	// overloadLease is the middleware's lease: renewed every 2/3 s, each
	// renewal given 2/3 s, so that on a loaded machine a slow renewal, or
	// two, do not lose it.
	overloadLease = 2 * time.Second
	// overloadRenewals is how many renewals a handler's work waits for once
	// it has begun. Renewals come at least Lease/3 apart, so the work
	// outlasts a lease: without them the lease would lapse under it.
	overloadRenewals = 4
	// overloadAttempts bounds each client's attempts (409 and 503 are
	// retried after 50 to 150 ms): far more than the work needs.
	overloadAttempts = 2000
	// overloadEvents bounds the events a handler's work waits through.
	overloadEvents = 10000
	// overloadBound bounds one attempt of a run that fails (a server
	// that never answers); one that passes never comes near it.
	overloadBound = 2 * time.Minute
)

// TestOverload sends 50 requests with distinct keys at once to a service
// whose pool has 4 connections, behind the middleware with a 2-second
// lease, and retries every request until it gets a final answer. Every
// handler runs exactly once per key (executions are counted, not rows),
// every request gets its 201, and no key is left running.
//
// The test times nothing but the pause between a client's attempts; what
// it needs in order is ordered by events it counts:
//
//   - A client gives up on the attempt whose handler has started (as
//     idem's client does on an attempt that outlasts its AttemptTimeout)
//     and retries at once, so a retry arrives while its first attempt
//     still runs.
//   - A handler's work, holding its connection, goes on until a retry of
//     its key has reached the store and, under a lease, until its lease
//     has been renewed four times since the work began: it outlasts a
//     lease, which only renewals keep. A work whose context ends first
//     (the middleware cancels it once no renewal got through for a lease)
//     fails the test, whether or not a retry took its key over.
//
// The three ways of claiming:
//
//   - Transactional, claimed by the work's transaction (ClaimWork): there
//     is no lease to keep, and nothing is renewed. Requests wait for a
//     connection before they hold anything; a repeat holds none. A
//     handler's work goes on until a retry of its key has been answered:
//     in flight, or, waiting for a connection the work holds, refused at
//     StartTimeout, which bounds ClaimWork's wait (without that bound the
//     retry and the work would wait for each other until the test's
//     bounds).
//   - Transactional, claimed under a lease (Claim, BeginWork): running
//     transactions hold every connection of the pool, so renewals,
//     completions and releases run on the Store's reserved pool
//     (Options.ReservedConns), and the middleware refuses work whose
//     transaction cannot begin within its StartTimeout (503) instead of
//     starting it late.
//   - Without transactions, the handler doing its own database work on
//     the same pool: the reserved pool again.
//
// Without the reserved pool (ReservedConns -1) the lease paths fail every
// run: renewals queue behind the running work on the main pool, hardly
// any renewal of a running key gets through, and the middleware cancels
// the work (lease lost) before its fourth. TestStarvedRenewals shows the same for one key, down
// to the retry that takes the key over and runs the handler again.
//
// The middleware's admission control (Options.StartTimeout) refuses, with
// 503, the requests that wait too long for a connection behind the work:
// the renewals of their leases go on meanwhile, and they are retried.
func TestOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 30 seconds")
	}
	t.Parallel()
	cases := []struct {
		name          string
		transactional bool
		leased        bool
	}{
		{name: "transactional, claimed by the work's transaction", transactional: true},
		{name: "transactional, claimed under a lease", transactional: true, leased: true},
		{name: "without transactions, the handler on the same pool", leased: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := newPool(t, poolConfig(t, overloadPool))
			table := tableName()
			s := newStore(t, pool, pgstore.Options{Table: table, Transactional: tc.transactional})
			charges := newCharges(t, pool)
			keys := make(map[string]*overloadKey, overloadRequests)
			for i := range overloadRequests {
				keys[fmt.Sprint("load-", i)] = newOverloadKey()
			}
			counted := countingStore{s, keys}
			var ms server.Store = counted
			done := func(c overloadCounts) bool { return c.answers > 0 } // no lease: a retry answered
			if tc.leased {
				ms = leased{counted, s}
				done = func(c overloadCounts) bool { return c.claims > 0 && c.renewals >= overloadRenewals }
			}
			svc := &service{pool: pool, store: s, table: table, charges: charges, client: &http.Client{
				Transport: &http.Transport{MaxIdleConnsPerHost: overloadRequests},
				Timeout:   overloadBound,
			}}
			t.Cleanup(svc.client.CloseIdleConnections)
			var logs syncLog
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("middleware log:\n%s", logs.String())
				}
			})
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			svc.serveIdem(t, ms, server.Options{Lease: overloadLease, Logger: logger}, func(w http.ResponseWriter, r *http.Request) {
				key := r.Header.Get("Idempotency-Key")
				k := keys[key]
				hold := func(context.Context) error { return nil } // a run after the first has failed already
				if k.runs.Add(1) == 1 {
					from := k.counts() // before the client hears of the start, and retries
					close(k.started)
					hold = func(ctx context.Context) error { return k.hold(ctx, from, done) }
				}
				if err := overloadWork(r.Context(), pool, charges, key, hold); err != nil {
					logger.Error("test handler failed", "key", key, "err", err)
					http.Error(w, "charge failed", http.StatusInternalServerError)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})

			var wg sync.WaitGroup
			final := make([]int, overloadRequests)
			for i := range overloadRequests {
				key := fmt.Sprint("load-", i)
				wg.Go(func() { final[i] = untilFinal(t, svc, key, keys[key]) })
			}
			wg.Wait()

			var renewals, refused, inFlight int32
			for key, k := range keys {
				assert.Equal(t, int32(1), k.runs.Load(), "%s: handler runs", key)
				if lost := k.lost.Load(); lost != nil {
					t.Errorf("%s: the work's context ended before the work was done: %v", key, *lost)
				}
				renewals += k.renewals.Load()
				refused += k.refused.Load()
				inFlight += k.inFlight.Load()
			}
			if !tc.leased {
				assert.Zero(t, renewals, "renewals of claims that hold no lease")
			}
			t.Logf("renewals %d, answers 503 (refused) %d, 409 (in flight) %d", renewals, refused, inFlight)
			for i, status := range final {
				assert.Equal(t, http.StatusCreated, status, "load-%d: final answer", i)
			}
			var running, completed int
			require.NoError(t, pool.QueryRow(context.Background(),
				"SELECT count(*) FILTER (WHERE state = 'running'), count(*) FILTER (WHERE state = 'completed') FROM "+table,
			).Scan(&running, &completed))
			assert.Zero(t, running, "keys left running")
			assert.Equal(t, overloadRequests, completed, "keys completed")
			assert.Equal(t, overloadRequests, countCharges(t, pool, charges), "charges")
		})
	}
}

// overloadKey is what TestOverload counts of one key: the handler's runs,
// the claims of the key that reached the store, the renewals of its lease
// that got through, and the answers its client got after giving up on the
// attempt that ran the handler, which signal event; and the answers 503
// and 409 of all its attempts.
type overloadKey struct {
	runs                      atomic.Int32
	claims, renewals, answers atomic.Int32
	refused, inFlight         atomic.Int32          // answers 503 and 409, all attempts
	started                   chan struct{}         // closed by the handler's first run
	event                     chan struct{}         // one buffered: a count went up
	lost                      atomic.Pointer[error] // why the work's context ended first
}

func newOverloadKey() *overloadKey {
	return &overloadKey{started: make(chan struct{}), event: make(chan struct{}, 1)}
}

func (k *overloadKey) add(n *atomic.Int32) {
	n.Add(1)
	select {
	case k.event <- struct{}{}:
	default:
	}
}

// overloadCounts are a key's counts since its work began.
type overloadCounts struct{ claims, renewals, answers int32 }

func (k *overloadKey) counts() overloadCounts {
	return overloadCounts{k.claims.Load(), k.renewals.Load(), k.answers.Load()}
}

// hold returns once done says the counts are enough: the claims and
// answers since from, taken when the handler started, and the renewals
// since hold was called, when the work began. If ctx ends first, it
// returns nil all the same and sets k.lost.
func (k *overloadKey) hold(ctx context.Context, from overloadCounts, done func(overloadCounts) bool) error {
	from.renewals = k.renewals.Load()
	for range overloadEvents {
		c := k.counts()
		if done(overloadCounts{c.claims - from.claims, c.renewals - from.renewals, c.answers - from.answers}) {
			return nil
		}
		select {
		case <-k.event:
		case <-ctx.Done():
			lost := fmt.Errorf("after %d renewals of %d: %w", c.renewals-from.renewals, overloadRenewals, context.Cause(ctx))
			k.lost.Store(&lost)
			return nil // the work goes on all the same (see overloadWork)
		}
	}
	return errors.New("the work waited through too many events")
}

// countingStore is the Store with the claims and successful renewals of
// each key counted.
type countingStore struct {
	*pgstore.Store
	keys map[string]*overloadKey
}

func (s countingStore) Claim(ctx context.Context, k server.Key, fp string, lease time.Duration) (server.Claim, error) {
	s.keys[k.Key].add(&s.keys[k.Key].claims)
	return s.Store.Claim(ctx, k, fp, lease)
}

func (s countingStore) ClaimWork(ctx context.Context, k server.Key, fp string) (server.Claim, context.Context, server.Work, error) {
	s.keys[k.Key].add(&s.keys[k.Key].claims)
	return s.Store.ClaimWork(ctx, k, fp)
}

func (s countingStore) Renew(ctx context.Context, k server.Key, token string, lease time.Duration) error {
	err := s.Store.Renew(ctx, k, token, lease)
	if err == nil {
		s.keys[k.Key].add(&s.keys[k.Key].renewals)
	}
	return err
}

// overloadWork is the handler's work, held by hold: in transactional mode a
// charge through the work's transaction, which holds its connection
// meanwhile; without, the charge on a connection of the same pool, held as
// long. It ignores cancellation, as a call to a card network in flight
// would: once the handler has started, the work happens, and a second run
// would happen twice.
func overloadWork(ctx context.Context, pool *pgxpool.Pool, charges, key string, hold func(context.Context) error) error {
	work := context.WithoutCancel(ctx)
	const insert = "INSERT INTO %s (key, amount) VALUES ($1, 1000)"
	if tx, ok := pgstore.Tx(ctx); ok {
		if _, err := tx.Exec(work, fmt.Sprintf(insert, charges), key); err != nil {
			return err
		}
		return hold(ctx)
	}
	conn, err := pool.Acquire(work)
	if err != nil {
		return err
	}
	defer conn.Release()
	if err := hold(ctx); err != nil {
		return err
	}
	_, err = conn.Exec(work, fmt.Sprintf(insert, charges), key)
	return err
}

// untilFinal sends the payment request with key until it gets an answer
// other than 409 or 503, and returns its status. It gives up on the
// attempt during which the key's handler starts, and counts in k the
// answers it gets after that, and the answers 503 and 409.
func untilFinal(t *testing.T, svc *service, key string, k *overloadKey) int {
	abandoned := false
	for range overloadAttempts {
		ctx, cancel := context.WithCancel(context.Background())
		if !abandoned {
			go func() {
				select {
				case <-k.started:
					cancel()
				case <-ctx.Done():
				}
			}()
		}
		status, err := overloadPost(ctx, svc, key)
		cancel()
		switch {
		case !abandoned && errors.Is(err, context.Canceled):
			abandoned = true // the handler runs on
			continue
		case err != nil:
			t.Errorf("%s: %v", key, err)
			return 0
		case abandoned:
			k.add(&k.answers)
		}
		switch status {
		case http.StatusServiceUnavailable:
			k.refused.Add(1)
		case http.StatusConflict:
			k.inFlight.Add(1)
		default:
			return status
		}
		time.Sleep(50*time.Millisecond + rand.N(100*time.Millisecond))
	}
	t.Errorf("%s: no final answer after %d attempts", key, overloadAttempts)
	return 0
}

// overloadPost sends the payment request with key under ctx and returns
// the answer's status.
func overloadPost(ctx context.Context, svc *service, key string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, svc.url, strings.NewReader(payBody))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := svc.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}
