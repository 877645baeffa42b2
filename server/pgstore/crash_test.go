package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// crashRequests is how many keys a crash run sends, crashConc at once.
const (
	crashRequests = 400
	crashConc     = 4
)

// crashLease is the middleware's lease in a crash run, far shorter than
// the cluster's restart.
const crashLease = 250 * time.Millisecond

// TestCrashForgetsNoAnsweredOutcome runs a payment API on a PostgreSQL
// cluster of its own whose database sets synchronous_commit off, answers
// crashRequests keys, and crashes the database server right after the last
// answer: every process of the cluster SIGKILLed at once, so that WAL
// still in wal_buffers (the cluster's WAL writer runs every 10 s) is lost,
// as a crash of the machine loses WAL not yet flushed. After crash
// recovery it counts the answered keys whose outcome is gone, and sends
// each answered key again: a key whose handler runs a second time is a
// charge made twice.
//
// By default pgstore raises synchronous_commit to on for the commits that
// record an outcome: no answered outcome is lost, no key runs twice. The
// naive variant, Options.InheritSynchronousCommit, records with the
// database's off: the outcomes of the last answers are lost and their
// keys charged again. (A loss needs the crash to come before the WAL
// writer's next round; a run whose crash came just after one loses
// nothing, so the naive variant runs up to three times.)
func TestCrashForgetsNoAnsweredOutcome(t *testing.T) {
	admin := ownCluster(t)
	for _, tc := range []struct {
		name          string
		transactional bool
		inherit       bool
	}{
		{"lease", false, false},
		{"lease, naive: InheritSynchronousCommit", false, true},
		{"transactional", true, false},
		{"transactional, naive: InheritSynchronousCommit", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := clusterDatabase(t, admin, map[string]string{"synchronous_commit": "off"})
			opts := pgstore.Options{Transactional: tc.transactional, InheritSynchronousCommit: tc.inherit}
			var res crashResult
			for attempt := 0; attempt < 3; attempt++ {
				res = crashRun(t, dsn, opts, fmt.Sprintf("idem_crash_%d", attempt))
				t.Logf("attempt %d: %d of %d keys answered; after the crash, %d answered outcomes gone, %d keys run again when re-sent",
					attempt, res.answered, crashRequests, res.lost, res.again)
				if !tc.inherit || res.lost > 0 {
					break
				}
			}
			require.Equal(t, crashRequests, res.answered, "every key is answered before the crash")
			if tc.inherit {
				assert.Positive(t, res.lost, "the naive variant lost no answered outcome: the crash does not lose unflushed WAL")
				assert.Equal(t, res.lost, res.again, "each lost outcome's key runs again")
				return
			}
			assert.Zero(t, res.lost, "answered outcomes lost in the crash")
			assert.Zero(t, res.again, "answered keys run again after the crash")
		})
	}
}

// crashResult is what a crash run counted.
type crashResult struct {
	answered, lost, again int
}

// crashRun serves the payment API on dsn with opts and table, answers
// crashRequests fresh keys, kills the cluster, starts it again and counts.
func crashRun(t *testing.T, dsn string, opts pgstore.Options, table string) crashResult {
	ctx := context.Background()
	var (
		mu   sync.Mutex
		runs = map[string]int{} // handler runs per key: the charges a provider made
	)
	charges := table + "_charges"
	handler := func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(server.DefaultHeader)
		if tx, ok := pgstore.Tx(r.Context()); ok {
			if _, err := tx.Exec(r.Context(), "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1000)", key); err != nil {
				http.Error(w, "charge failed", http.StatusInternalServerError)
				return
			}
		}
		mu.Lock()
		runs[key]++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}
	opts.Table = table

	// serve starts the API on a pool of dsn and returns post and a
	// function that stops it.
	serve := func() (post func(key string) (int, bool, error), stop func()) {
		cfg, err := pgxpool.ParseConfig(dsn)
		require.NoError(t, err)
		cfg.MaxConns = 2*crashConc + 2
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		s, err := pgstore.New(pool, opts)
		require.NoError(t, err)
		require.NoError(t, s.Migrate(ctx))
		_, err = pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+charges+" (key text NOT NULL, amount integer NOT NULL)")
		require.NoError(t, err)
		// A short lease: a claim whose outcome the crash forgot is running
		// under a lease that lapsed during the restart, and its re-sent
		// key takes it over at once instead of waiting 30 s. The start
		// limit, a third of the lease by default, is set apart from it:
		// the first requests after a start wait for new connections.
		mw := server.Middleware(s, server.Options{SingleTenant: true, Lease: crashLease, StartTimeout: 30 * time.Second})
		srv := httptest.NewServer(mw(http.HandlerFunc(handler)))
		client := srv.Client()
		post = func(key string) (int, bool, error) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/payments", strings.NewReader(payBody))
			if err != nil {
				return 0, false, err
			}
			req.Header.Set(server.DefaultHeader, key)
			resp, err := client.Do(req)
			if err != nil {
				return 0, false, err
			}
			defer resp.Body.Close()
			return resp.StatusCode, resp.Header.Get(server.ReplayedHeader) == "true", nil
		}
		return post, func() { srv.Close(); s.Close(); pool.Close() }
	}

	post, stop := serve()
	keys := make(chan string)
	var (
		wg       sync.WaitGroup
		answered []string
		failures []string
	)
	for range crashConc {
		wg.Go(func() {
			for key := range keys {
				status, replayed, err := post(key)
				mu.Lock()
				if err == nil && status == http.StatusCreated && !replayed {
					answered = append(answered, key)
				} else {
					failures = append(failures, fmt.Sprintf("%s: %d %v", key, status, err))
				}
				mu.Unlock()
			}
		})
	}
	for i := range crashRequests {
		keys <- fmt.Sprintf("%s-%d", table, i)
	}
	close(keys)
	wg.Wait()
	runCluster(t, "kill") // right after the last answer
	stop()
	require.Empty(t, failures, "answers before the crash")
	runCluster(t, "start") // crash recovery

	post, stop = serve()
	defer stop()
	res := crashResult{answered: len(answered)}
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer pool.Close()
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) AS a(key)
WHERE NOT EXISTS (SELECT 1 FROM `+table+` t WHERE t.scope = '' AND t.key = a.key AND t.state = 'completed')`, answered).Scan(&res.lost))
	for _, key := range answered {
		status, _, err := post(key)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, status, "re-sent key %s", key)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, key := range answered {
		if runs[key] > 1 {
			res.again++
		}
	}
	return res
}
