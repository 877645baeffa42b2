package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// testDatabase returns IDEM_TEST_DATABASE. Without it the test is
// skipped, unless CI=true, where it fails: the store's tests must run
// there.
func testDatabase(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("IDEM_TEST_DATABASE")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("IDEM_TEST_DATABASE is not set and CI=true: the PostgreSQL tests must run")
		}
		t.Skip("set IDEM_TEST_DATABASE, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable, to run the PostgreSQL tests")
	}
	return dsn
}

// storeFixture is a fresh table of idempotency records, dropped when the
// test ends: per scope, keys running under a live lease, running under a
// lapsed one, completed, and expired.
type storeFixture struct {
	dsn, table string
	// running lists the running keys (live or lapsed) oldest first.
	running []server.Key
}

// fixtureScopes is how many records of each state each scope holds.
var fixtureScopes = []struct {
	scope                               string
	running, lapsed, completed, expired int
}{
	{"a", 2, 1, 3, 2},
	{"b", 1, 0, 1, 0},
}

func newStoreFixture(t testing.TB) *storeFixture {
	t.Helper()
	f, err := makeStoreFixture(testDatabase(t), t.Cleanup)
	require.NoError(t, err)
	return f
}

// makeStoreFixture fills a fresh table in the database dsn names, and
// registers with cleanup the dropping of it.
func makeStoreFixture(dsn string, cleanup func(func())) (*storeFixture, error) {
	ctx := context.Background()
	f := &storeFixture{dsn: dsn, table: "idem_cmd_test_" + strings.ToLower(rand.Text()[:12])}
	s, err := pgstore.Open(ctx, f.dsn, pgstore.Options{Table: f.table})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	cleanup(func() { dropTable(f.dsn, f.table) })
	if err := s.Migrate(ctx); err != nil {
		return nil, err
	}
	n := 0
	claim := func(scope string, lease time.Duration) (server.Key, string, error) {
		n++
		k := server.Key{Scope: scope, Key: fmt.Sprintf("k%03d", n)}
		c, err := s.Claim(ctx, k, "fp", lease)
		if err == nil && !c.Acquired {
			err = fmt.Errorf("claim %v: not acquired", k)
		}
		return k, c.Token, err
	}
	for _, sc := range fixtureScopes {
		for i := range sc.running + sc.lapsed + sc.completed + sc.expired {
			lease := time.Hour
			if i >= sc.running && i < sc.running+sc.lapsed {
				lease = -time.Second // lapsed at once
			}
			k, token, err := claim(sc.scope, lease)
			if err != nil {
				return nil, err
			}
			switch {
			case i < sc.running+sc.lapsed:
				f.running = append(f.running, k)
			case i < sc.running+sc.lapsed+sc.completed:
				err = s.Complete(ctx, k, token, server.StoredResponse{Status: 201}, time.Hour)
			default:
				err = s.Complete(ctx, k, token, server.StoredResponse{Status: 201}, -time.Second) // expired at once
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// dropTable drops the fixture's table: idem's command reaches the
// database only through pgstore, which has no statement for that. A
// failure leaves an empty table behind, which is reported, not fatal.
func dropTable(dsn, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err == nil {
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dropping test table %s: %v\n", table, err)
	}
}

// TestKeysLs: keys ls counts the fixture's records by state, and lists its
// running keys oldest first, as --state, --scope and --limit select.
func TestKeysLs(t *testing.T) {
	t.Parallel()
	f := newStoreFixture(t)
	ptr := func(n int) *int { return &n }
	keys := func(ks ...server.Key) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.Scope+"/"+k.Key)
		}
		return out
	}
	tests := []struct {
		name    string
		args    []string
		counts  countsJSON
		running []string // scope/key, in order
		lapsed  int
		more    bool
	}{{
		name:    "every state",
		counts:  countsJSON{Running: ptr(3), Lapsed: ptr(1), Completed: ptr(4), Expired: ptr(2), Purgeable: ptr(2)},
		running: keys(f.running...), lapsed: 1,
	}, {
		name:    "lapsed leases purgeable after --abandon",
		args:    []string{"--abandon", "1ms"},
		counts:  countsJSON{Running: ptr(3), Lapsed: ptr(1), Completed: ptr(4), Expired: ptr(2), Purgeable: ptr(3)},
		running: keys(f.running...), lapsed: 1,
	}, {
		name:    "running",
		args:    []string{"--state", "running"},
		counts:  countsJSON{Running: ptr(3), Lapsed: ptr(1)},
		running: keys(f.running...), lapsed: 1,
	}, {
		name:   "completed",
		args:   []string{"--state", "completed"},
		counts: countsJSON{Completed: ptr(4), Expired: ptr(2)},
	}, {
		name:    "one scope",
		args:    []string{"--scope", "b"},
		counts:  countsJSON{Running: ptr(1), Lapsed: ptr(0), Completed: ptr(1), Expired: ptr(0), Purgeable: ptr(0)},
		running: keys(f.running[3]),
	}, {
		name:    "limit",
		args:    []string{"--state", "running", "--limit", "2"},
		counts:  countsJSON{Running: ptr(3), Lapsed: ptr(1)},
		running: keys(f.running[:2]...), more: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"keys", "ls", "--json", "--table", f.table}, tt.args...)
			r := runIdem(t, "", []string{databaseEnv + "=" + f.dsn}, args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			var got keysJSON
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
			assert.Equal(t, f.table, got.Table)
			// Times are the database's; the counts are compared alone.
			got.Counts.Oldest, got.Counts.Newest, got.Counts.OldestRunning = nil, nil, nil
			assert.Equal(t, tt.counts, got.Counts)
			var running []string
			lapsed := 0
			for _, k := range got.Running {
				running = append(running, k.Scope+"/"+k.Key)
				if k.Lapsed {
					lapsed++
					assert.True(t, k.LeaseExpires.Before(got.At))
				} else {
					assert.True(t, k.LeaseExpires.After(got.At))
				}
			}
			assert.Equal(t, tt.running, running)
			assert.Equal(t, tt.lapsed, lapsed)
			assert.Equal(t, tt.more, got.More)
		})
	}
}

// TestKeysPurge: keys purge deletes the expired records, and the lapsed
// ones older than --abandon, in batches, and nothing else.
func TestKeysPurge(t *testing.T) {
	t.Parallel()
	f := newStoreFixture(t)
	env := []string{databaseEnv + "=" + f.dsn}

	r := runIdem(t, "", env, "keys", "purge", "--table", f.table, "--batch", "1")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, fmt.Sprintf("purged 2 records from %s\n", f.table), r.stdout)

	r = runIdem(t, "", env, "keys", "purge", "--json", "--table", f.table, "--abandon", "1ms")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.JSONEq(t, `{"purged": 1}`, r.stdout)

	r = runIdem(t, "", env, "keys", "ls", "--json", "--table", f.table)
	require.Equal(t, exitOK, r.code, r.stderr)
	var got keysJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.Equal(t, 3, *got.Counts.Running)
	assert.Equal(t, 4, *got.Counts.Completed)
	assert.Zero(t, *got.Counts.Lapsed+*got.Counts.Expired+*got.Counts.Purgeable)
}

// TestKeysScripts runs testdata/keys/*.txtar, each against a fresh
// fixture table named by $TABLE in the database $IDEM_DATABASE names.
func TestKeysScripts(t *testing.T) {
	t.Parallel()
	dsn := testDatabase(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/keys",
		Setup: func(e *testscript.Env) error {
			f, err := makeStoreFixture(dsn, e.Defer)
			if err != nil {
				return err
			}
			e.Setenv(databaseEnv, f.dsn)
			e.Setenv("TABLE", f.table)
			return nil
		},
	})
}

// TestKeysLsTakenOver: a lapsed key that a retry took over with a
// transactional store's ClaimWork is listed as taken over while the
// retry's work runs.
func TestKeysLsTakenOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStoreFixture(t)
	s, err := pgstore.Open(ctx, f.dsn, pgstore.Options{Table: f.table, Transactional: true})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	lapsed := f.running[2] // a/k003
	c, _, w, err := s.ClaimWork(ctx, lapsed, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	defer w.Rollback(ctx)

	r := runIdem(t, "", []string{databaseEnv + "=" + f.dsn}, "keys", "ls", "--json", "--state", "running", "--table", f.table)
	require.Equal(t, exitOK, r.code, r.stderr)
	var got keysJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	taken := map[string]bool{}
	for _, k := range got.Running {
		require.NotNil(t, k.TakenOver)
		taken[k.Scope+"/"+k.Key] = *k.TakenOver
	}
	assert.Equal(t, map[string]bool{"a/k001": false, "a/k002": false, "a/k003": true, "b/k009": false}, taken)
}
