package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestOpen: a Store opened from a DSN works on a pool of its own, which
// Close closes; a DSN that cannot be parsed or reached fails Open with an
// error that never shows the password.
func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("works and closes its pool", func(t *testing.T) {
		t.Parallel()
		table := tableName()
		s, err := pgstore.Open(ctx, testDatabase, pgstore.Options{Table: table})
		require.NoError(t, err)
		dropTable(t, newPool(t, poolConfig(t, 1)), table)
		require.NoError(t, s.Migrate(ctx))
		k := server.Key{Scope: "tenant", Key: "k"}
		c, err := s.Claim(ctx, k, "fp", lease)
		require.NoError(t, err)
		require.True(t, c.Acquired)
		require.NoError(t, s.Complete(ctx, k, c.Token, server.StoredResponse{Status: http.StatusCreated}, retention))
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, st.Completed)

		s.Close()
		s.Close() // safe twice
		_, err = s.Stats(ctx)
		require.Error(t, err, "the Store's own pool is closed")
	})

	cases := []struct {
		name string
		dsn  string
		opts pgstore.Options
	}{
		{"unparsable DSN", "postgres://idem:s3cret@127.0.0.1:notaport/test", pgstore.Options{}},
		{"unreachable database", "postgres://idem:s3cret@127.0.0.1:1/test?connect_timeout=5", pgstore.Options{}},
		{"invalid table", testDatabase, pgstore.Options{Table: "Not-A-Table"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := pgstore.Open(ctx, tc.dsn, tc.opts)
			require.Error(t, err)
			require.Nil(t, s)
			assert.NotContains(t, err.Error(), "s3cret")
			assert.Contains(t, err.Error(), "pgstore")
		})
	}

	t.Run("cancelled context", func(t *testing.T) {
		t.Parallel()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := pgstore.Open(cctx, testDatabase, pgstore.Options{})
		require.ErrorIs(t, err, context.Canceled)
	})
}

// operatorFixture fills a fresh table with records of every state in
// two scopes, a and b: per scope, running under a live lease, running
// under a lapsed one, completed, and expired; and one key of scope a held
// by ClaimWork with nothing stored.
type operatorFixture struct {
	s       *pgstore.Store
	held    server.Work // the ClaimWork of the key with nothing stored
	running map[string][]server.Key
}

// perScope is how many records of each state each scope holds.
var perScope = map[string]struct{ running, lapsed, completed, expired int }{
	"a": {running: 3, lapsed: 2, completed: 4, expired: 5},
	"b": {running: 1, lapsed: 1, completed: 2, expired: 1},
}

func newOperatorFixture(t *testing.T) *operatorFixture {
	ctx := context.Background()
	// Abandon of a microsecond: every lapsed lease is purgeable at once.
	s, _ := newTestStore(t, pgstore.Options{Transactional: true, Abandon: time.Microsecond})
	f := &operatorFixture{s: s, running: map[string][]server.Key{}}
	n := 0
	claim := func(scope string, d time.Duration) (server.Key, string) {
		n++
		k := server.Key{Scope: scope, Key: fmt.Sprintf("k%03d", n)}
		c, err := s.Claim(ctx, k, "fp", d)
		require.NoError(t, err)
		require.True(t, c.Acquired)
		return k, c.Token
	}
	for _, scope := range []string{"a", "b"} {
		want := perScope[scope]
		for range want.running {
			k, _ := claim(scope, lease)
			f.running[scope] = append(f.running[scope], k)
		}
		for range want.lapsed {
			k, _ := claim(scope, lapsed)
			f.running[scope] = append(f.running[scope], k)
		}
		for range want.completed {
			k, token := claim(scope, lease)
			require.NoError(t, s.Complete(ctx, k, token, server.StoredResponse{Status: 201}, retention))
		}
		for range want.expired {
			k, token := claim(scope, lease)
			require.NoError(t, s.Complete(ctx, k, token, server.StoredResponse{Status: 201}, lapsed))
		}
	}
	c, _, w, err := s.ClaimWork(ctx, server.Key{Scope: "a", Key: "held"}, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	f.held = w
	t.Cleanup(func() { _ = w.Rollback(context.Background()) })
	return f
}

func TestStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	before := time.Now()
	f := newOperatorFixture(t)
	after := time.Now()

	cases := []struct {
		name   string
		scopes []string
		in     []string // the scopes whose records count
	}{
		{"every scope", nil, []string{"a", "b"}},
		{"one scope", []string{"a"}, []string{"a"}},
		{"two scopes", []string{"a", "b"}, []string{"a", "b"}},
		{"a scope without records", []string{"none"}, nil},
		{"the single-tenant scope", []string{""}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := f.s.Stats(ctx, tc.scopes...)
			require.NoError(t, err)
			var want pgstore.Stats
			for _, scope := range tc.in {
				p := perScope[scope]
				want.Running += p.running
				want.Lapsed += p.lapsed
				want.Completed += p.completed
				want.Expired += p.expired
				want.Purgeable += p.expired + p.lapsed
			}
			assert.Equal(t, want.Running, st.Running, "Running (the key ClaimWork holds has no record)")
			assert.Equal(t, want.Lapsed, st.Lapsed, "Lapsed")
			assert.Equal(t, want.Completed, st.Completed, "Completed")
			assert.Equal(t, want.Expired, st.Expired, "Expired")
			assert.Equal(t, want.Purgeable, st.Purgeable, "Purgeable")
			assert.WithinDuration(t, time.Now(), st.At, time.Minute)
			if len(tc.in) == 0 {
				assert.True(t, st.Oldest.IsZero() && st.Newest.IsZero() && st.OldestRunning.IsZero())
				return
			}
			assert.WithinDuration(t, before, st.Oldest, time.Minute)
			assert.WithinDuration(t, after, st.Newest, time.Minute)
			assert.False(t, st.Newest.Before(st.Oldest))
			assert.False(t, st.OldestRunning.Before(st.Oldest))
		})
	}

	t.Run("Purgeable is what Purge deletes", func(t *testing.T) {
		st, err := f.s.Stats(ctx)
		require.NoError(t, err)
		n, err := f.s.Purge(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, st.Purgeable, n)
		st, err = f.s.Stats(ctx)
		require.NoError(t, err)
		assert.Zero(t, st.Purgeable+st.Expired+st.Lapsed)
	})
}

func TestRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOperatorFixture(t)

	// A retry takes one of scope b's lapsed leases over with ClaimWork:
	// its record still says running, and the lock shows who runs it now.
	b := f.running["b"]
	taken := b[len(b)-1]
	c, _, w, err := f.s.ClaimWork(ctx, taken, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	require.True(t, c.TakenOver)
	defer w.Rollback(ctx)

	cases := []struct {
		name   string
		limit  int
		scopes []string
		want   []server.Key
	}{
		{"every scope", 0, nil, append(append([]server.Key{}, f.running["a"]...), f.running["b"]...)},
		{"one scope", 0, []string{"b"}, f.running["b"]},
		{"limited", 2, []string{"a"}, f.running["a"][:2]},
		{"no such scope", 0, []string{"none"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := f.s.Running(ctx, tc.limit, tc.scopes...)
			require.NoError(t, err)
			got := make([]server.Key, 0, len(keys))
			for _, k := range keys {
				got = append(got, k.Key)
			}
			require.Equal(t, len(tc.want), len(got), "%v", got)
			if len(tc.want) > 0 {
				require.Equal(t, tc.want, got, "oldest first; the key ClaimWork holds has no record")
			}
			for i, k := range keys {
				if i > 0 {
					assert.False(t, k.Since.Before(keys[i-1].Since), "oldest first")
				}
				assert.Equal(t, k.LeaseExpires.Before(time.Now()), k.Lapsed, "%v: Lapsed", k.Key)
				assert.Equal(t, k.Key == taken, k.HeldByLock, "%v: HeldByLock", k.Key)
			}
		})
	}
	t.Run("the lock ends with the work", func(t *testing.T) {
		require.NoError(t, w.Rollback(ctx))
		keys, err := f.s.Running(ctx, 0, "b")
		require.NoError(t, err)
		for _, k := range keys {
			assert.False(t, k.HeldByLock, "%v", k.Key)
		}
	})
}

func TestPurgeWithProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOperatorFixture(t)
	st, err := f.s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 9, st.Purgeable, "the fixture's expired and lapsed records")

	var seen []int
	n, err := f.s.PurgeWithProgress(ctx, 2, func(deleted int) { seen = append(seen, deleted) })
	require.NoError(t, err)
	assert.Equal(t, st.Purgeable, n)
	// 9 in batches of 2: four full batches and a short one.
	assert.Equal(t, []int{2, 4, 6, 8, 9}, seen)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	n, err = f.s.PurgeWithProgress(cctx, 5, func(int) { t.Error("no batch runs after cancellation") })
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, n)
}
