package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// claimWork claims k with fingerprint fp through ClaimWork and checks the
// shape of the answer: a context and a Work exactly when acquired, and no
// token ever.
func claimWork(t *testing.T, s *pgstore.Store, k server.Key, fp string) (server.Claim, context.Context, server.Work) {
	t.Helper()
	c, wctx, w, err := s.ClaimWork(context.Background(), k, fp)
	require.NoError(t, err)
	require.Empty(t, c.Token, "a claim held by the work's transaction has no token")
	if c.Acquired {
		require.NotNil(t, wctx)
		require.NotNil(t, w)
	} else {
		require.Nil(t, wctx)
		require.Nil(t, w)
	}
	return c, wctx, w
}

// commitWork claims k with fp, writes one charge through the work's
// transaction and commits resp.
func commitWork(t *testing.T, s *pgstore.Store, k server.Key, fp, charges string, resp server.StoredResponse, keep time.Duration) {
	t.Helper()
	c, wctx, w := claimWork(t, s, k, fp)
	require.True(t, c.Acquired)
	charge(t, wctx, charges, k.Key)
	require.NoError(t, w.Commit(context.Background(), resp, keep))
}

func TestClaimWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stored := server.StoredResponse{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}},
		Body:   []byte(`{"id":"ch_1"}`),
	}
	cases := []struct {
		name string
		// run drives key k of store s; charges is a table of side effects.
		run func(t *testing.T, s *pgstore.Store, k server.Key, charges string)
		// charged is the number of charges in the end.
		charged int
	}{
		{
			name: "new key, then replay",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				commitWork(t, s, k, "fp", charges, stored, retention)
				c, _, _ := claimWork(t, s, k, "fp")
				require.True(t, c.Record.Completed)
				assert.Equal(t, "fp", c.Record.Fingerprint)
				assert.Equal(t, stored, c.Record.Response)
				assert.WithinDuration(t, time.Now().Add(retention), c.Record.ExpiresAt, time.Minute)
				assert.True(t, c.Record.LeaseExpires.IsZero())
			},
			charged: 1,
		},
		{
			name: "another fingerprint is told the stored one",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				commitWork(t, s, k, "fp", charges, stored, retention)
				c, _, _ := claimWork(t, s, k, "other")
				require.True(t, c.Record.Completed)
				assert.Equal(t, "fp", c.Record.Fingerprint)
			},
			charged: 1,
		},
		{
			name: "running: in flight, fingerprint unknown, whatever the body",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				charge(t, wctx, charges, k.Key)
				for _, fp := range []string{"fp", "other"} {
					again, _, _ := claimWork(t, s, k, fp)
					assert.False(t, again.Acquired, fp)
					assert.False(t, again.Record.Completed, fp)
					assert.Empty(t, again.Record.Fingerprint, "only a lock is held: the running request's fingerprint is not known")
				}
				require.NoError(t, w.Commit(ctx, stored, retention))
				again, _, _ := claimWork(t, s, k, "other")
				assert.True(t, again.Record.Completed, "once it committed, the record tells")
			},
			charged: 1,
		},
		{
			name: "rollback frees the key",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				charge(t, wctx, charges, k.Key)
				require.NoError(t, w.Rollback(ctx))
				require.NoError(t, w.Rollback(ctx), "a second Rollback does nothing")
				require.Error(t, w.Commit(ctx, stored, retention), "Commit after Rollback")
				commitWork(t, s, k, "other", charges, stored, retention)
			},
			charged: 1,
		},
		{
			name: "commit twice",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				charge(t, wctx, charges, k.Key)
				require.NoError(t, w.Commit(ctx, stored, retention))
				require.Error(t, w.Commit(ctx, stored, retention))
				require.NoError(t, w.Rollback(ctx), "Rollback after Commit does nothing")
			},
			charged: 1,
		},
		{
			name: "a failed statement aborts the work and frees the key",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				charge(t, wctx, charges, k.Key)
				tx, _ := pgstore.Tx(wctx)
				_, err := tx.Exec(wctx, "INSERT INTO "+charges+" (key) VALUES ('no amount')")
				require.Error(t, err)
				err = w.Commit(ctx, stored, retention)
				require.Error(t, err)
				require.NotErrorIs(t, err, server.ErrLeaseLost)
				again, _, w2 := claimWork(t, s, k, "fp")
				require.True(t, again.Acquired)
				require.NoError(t, w2.Rollback(ctx))
			},
		},
		{
			name: "the handler may not end the transaction, but may use savepoints",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				tx, _ := pgstore.Tx(wctx) // a DBTX: no Commit, no Rollback (TestTxHasNoEnd)
				sp, err := tx.Begin(wctx)
				require.NoError(t, err)
				_, err = sp.Exec(wctx, "INSERT INTO "+charges+" (key) VALUES ('no amount')")
				require.Error(t, err)
				require.NoError(t, sp.Rollback(wctx))
				require.ErrorIs(t, sp.Rollback(wctx), pgx.ErrTxClosed)
				sp, err = tx.Begin(wctx)
				require.NoError(t, err)
				charge(t, wctx, charges, k.Key)
				require.NoError(t, sp.Commit(wctx))
				require.NoError(t, w.Commit(ctx, stored, retention))
			},
			charged: 1,
		},
		{
			name: "completed past its retention: claimed afresh, not taken over",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				commitWork(t, s, k, "fp", charges, stored, lapsed)
				c, wctx, w := claimWork(t, s, k, "other")
				require.True(t, c.Acquired)
				assert.False(t, c.TakenOver)
				charge(t, wctx, charges, k.Key)
				require.NoError(t, w.Commit(ctx, stored, retention))
				again, _, _ := claimWork(t, s, k, "fp")
				assert.Equal(t, "other", again.Record.Fingerprint)
			},
			charged: 2,
		},
		{
			name: "a lease claimed through Claim is running, with its fingerprint",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				lc, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(t, err)
				require.True(t, lc.Acquired)
				for _, fp := range []string{"fp", "other"} {
					c, _, _ := claimWork(t, s, k, fp)
					assert.False(t, c.Acquired)
					assert.False(t, c.Record.Completed)
					assert.Equal(t, "fp", c.Record.Fingerprint)
					assert.WithinDuration(t, time.Now().Add(lease), c.Record.LeaseExpires, time.Minute)
				}
				require.NoError(t, s.Complete(ctx, k, lc.Token, stored, retention))
				c, _, _ := claimWork(t, s, k, "fp")
				assert.True(t, c.Record.Completed)
			},
		},
		{
			name: "a lapsed lease is taken over by its own request only",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				lc, err := s.Claim(ctx, k, "fp", lapsed)
				require.NoError(t, err)
				c, _, _ := claimWork(t, s, k, "other")
				require.False(t, c.Acquired)
				assert.Equal(t, "fp", c.Record.Fingerprint)

				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				assert.True(t, c.TakenOver)
				charge(t, wctx, charges, k.Key)
				require.NoError(t, w.Commit(ctx, stored, retention))
				require.ErrorIs(t, s.Complete(ctx, k, lc.Token, stored, retention), server.ErrLeaseLost,
					"the former owner's completion is fenced")
			},
			charged: 1,
		},
		{
			name: "a record stored meanwhile without the lock wins: the work rolls back",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				// The primary key is the last line of defence against a
				// path that takes no lock (a process of an earlier version,
				// whose claim ignored the lock, completing the key).
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				charge(t, wctx, charges, k.Key)
				_, err := s.Pool().Exec(ctx, "INSERT INTO "+s.Table()+` (scope, key, fingerprint, token, state, status, expires_at)
					VALUES ($1, $2, 'fp', 'earlier', 'completed', 201, now() + interval '1 hour')`, k.Scope, k.Key)
				require.NoError(t, err)
				require.ErrorIs(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusTeapot}, retention), server.ErrLeaseLost)
				again, _, _ := claimWork(t, s, k, "fp")
				assert.Equal(t, http.StatusCreated, again.Record.Response.Status)
			},
		},
		{
			name: "Claim does not take a key ClaimWork holds",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				charge(t, wctx, charges, k.Key)
				for _, fp := range []string{"fp", "other"} {
					lc, err := s.Claim(ctx, k, fp, lease)
					require.NoError(t, err)
					assert.False(t, lc.Acquired, fp)
					assert.False(t, lc.Record.Completed, fp)
					assert.Empty(t, lc.Record.Fingerprint, "nothing stored yet: the fingerprint is not known")
				}
				require.NoError(t, w.Commit(ctx, stored, retention))
				lc, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(t, err)
				assert.Equal(t, stored, lc.Record.Response)
			},
			charged: 1,
		},
		{
			name: "Claim does not take over a key ClaimWork runs again",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				commitWork(t, s, k, "fp", charges, stored, lapsed) // retention over
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				charge(t, wctx, charges, k.Key)
				lc, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(t, err)
				assert.False(t, lc.Acquired, "the expired record is being run again")
				assert.False(t, lc.Record.Completed)
				require.NoError(t, w.Commit(ctx, stored, retention))
				lc, err = s.Claim(ctx, k, "fp", lease)
				require.NoError(t, err)
				assert.True(t, lc.Record.Completed)
			},
			charged: 2,
		},
		{
			name: "a lapsed lease completed while it was being taken over: the work rolls back",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				lc, err := s.Claim(ctx, k, "fp", lapsed)
				require.NoError(t, err)
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				require.True(t, c.TakenOver)
				charge(t, wctx, charges, k.Key)
				// The former owner was only paused, and records its outcome
				// before the new owner commits.
				require.NoError(t, s.Complete(ctx, k, lc.Token, stored, retention))
				require.ErrorIs(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusTeapot}, retention), server.ErrLeaseLost)
				again, _, _ := claimWork(t, s, k, "fp")
				assert.Equal(t, stored, again.Record.Response)
			},
		},
		{
			name: "scopes never meet",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, charges string) {
				c, wctx, w := claimWork(t, s, k, "fp")
				require.True(t, c.Acquired)
				charge(t, wctx, charges, k.Key)
				// The same key in other scopes, including ones an ambiguous
				// encoding of (scope, key) would confuse with this one.
				for _, other := range []server.Key{
					{Scope: k.Scope + "x", Key: k.Key},
					{Scope: "", Key: k.Scope + k.Key},
					{Scope: k.Scope + k.Key[:1], Key: k.Key[1:]},
				} {
					oc, octx, ow := claimWork(t, s, other, "fp")
					require.True(t, oc.Acquired, "%+v", other)
					charge(t, octx, charges, other.Key)
					require.NoError(t, ow.Commit(ctx, stored, retention))
				}
				require.NoError(t, w.Commit(ctx, stored, retention))
			},
			charged: 4,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, pool := newTestStore(t, pgstore.Options{Transactional: true})
			charges := newCharges(t, pool)
			tc.run(t, s, server.Key{Scope: "tenant", Key: "pay-1"}, charges)
			assert.Equal(t, tc.charged, countCharges(t, pool, charges), "charges")
			s.Settle()
			assert.Zero(t, pool.Stat().AcquiredConns(), "every connection went back to the pool")
		})
	}
}

func TestClaimWorkNeedsTransactions(t *testing.T) {
	t.Parallel()
	s, pool := newTestStore(t, pgstore.Options{})
	acquired := pool.Stat().AcquireCount()
	c, wctx, w, err := s.ClaimWork(context.Background(), server.Key{Scope: "s", Key: "k"}, "fp")
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.False(t, c.Acquired)
	require.Nil(t, wctx)
	require.Nil(t, w)
	assert.Equal(t, acquired, pool.Stat().AcquireCount(), "nothing was asked of the database")
}

func TestClaimWorkCancelledContext(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, pgstore.Options{Transactional: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, _, err := s.ClaimWork(ctx, server.Key{Scope: "s", Key: "k"}, "fp")
	require.ErrorIs(t, err, context.Canceled)
	c, _, w := claimWork(t, s, server.Key{Scope: "s", Key: "k"}, "fp")
	require.True(t, c.Acquired, "the cancelled claim held nothing")
	require.NoError(t, w.Rollback(context.Background()))
}

// TestClaimWorkSetsTakeover: the work's transaction carries the TCP
// settings of Options.Takeover however the key was acquired (new, past
// its retention, or taken over from a lapsed lease), and only the work's
// transaction: the connection goes back to the pool with its own.
func TestClaimWorkSetsTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	show := func(t *testing.T, queryRow func(context.Context, string, ...any) pgx.Row) [4]string {
		var v [4]string
		require.NoError(t, queryRow(ctx, `SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'),
			current_setting('tcp_keepalives_count'), current_setting('tcp_user_timeout')`).Scan(&v[0], &v[1], &v[2], &v[3]))
		return v
	}
	k := server.Key{Scope: "s", Key: "k"}
	cases := []struct {
		name     string
		takeover time.Duration
		// before leaves k to be acquired by ClaimWork.
		before func(t *testing.T, s *pgstore.Store)
		want   [4]string // zero: the pool's own
	}{
		{"default", 0, nil, [4]string{"10", "5", "4", "30000"}}, // seconds, seconds, probes, milliseconds
		{"90s", 90 * time.Second, nil, [4]string{"30", "15", "4", "90000"}},
		{"negative", -1, nil, [4]string{}},
		{"retention over", 0, func(t *testing.T, s *pgstore.Store) {
			c, _, w := claimWork(t, s, k, "fp")
			require.True(t, c.Acquired)
			require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: 201}, lapsed))
		}, [4]string{"10", "5", "4", "30000"}},
		{"lapsed lease", 0, func(t *testing.T, s *pgstore.Store) {
			_, err := s.Claim(ctx, k, "fp", lapsed)
			require.NoError(t, err)
		}, [4]string{"10", "5", "4", "30000"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, pool := newTestStore(t, pgstore.Options{Transactional: true, Takeover: tc.takeover})
			own := show(t, pool.QueryRow)
			if tc.before != nil {
				tc.before(t, s)
			}
			c, wctx, w := claimWork(t, s, k, "fp")
			require.True(t, c.Acquired)
			tx, _ := pgstore.Tx(wctx)
			inWork := show(t, tx.QueryRow)
			if tc.want == ([4]string{}) {
				assert.Equal(t, own, inWork)
			} else {
				assert.Equal(t, tc.want, inWork)
				assert.NotEqual(t, own, inWork)
			}
			require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: 201}, retention))
			conn, err := pool.Acquire(ctx)
			require.NoError(t, err)
			defer conn.Release()
			assert.Equal(t, own, show(t, conn.QueryRow), "the settings ended with the work")
		})
	}
}
