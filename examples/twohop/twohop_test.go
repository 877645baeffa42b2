package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/examples/internal/linear"
)

// TestMain runs a child's role when the harness started this binary as
// one: the tests' harness re-executes the test binary, as the command
// re-executes itself.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}

func TestTally(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a, b map[int]int
		want counts
	}{
		{"every operation once", map[int]int{0: 1, 1: 1, 2: 1}, map[int]int{0: 1, 1: 1, 2: 1},
			counts{aRows: 3, bCharges: 3}},
		{"charged twice", map[int]int{0: 1, 1: 1, 2: 1}, map[int]int{0: 1, 1: 3, 2: 1},
			counts{aRows: 3, bCharges: 5, duplicates: 2}},
		{"ordered twice", map[int]int{0: 2, 1: 1, 2: 1}, map[int]int{0: 1, 1: 1, 2: 1},
			counts{aRows: 4, bCharges: 3, duplicates: 1}},
		{"charged, never ordered", map[int]int{0: 1, 2: 1}, map[int]int{0: 1, 1: 1, 2: 1},
			counts{aRows: 2, bCharges: 3, lost: 1}},
		{"ordered, never charged", map[int]int{0: 1, 1: 1, 2: 1}, map[int]int{0: 1, 1: 1},
			counts{aRows: 3, bCharges: 2, lost: 1}},
		{"lost at both, duplicated at both", map[int]int{0: 2}, map[int]int{0: 2},
			counts{aRows: 2, bCharges: 2, duplicates: 2, lost: 2}},
		{"beyond the batch", map[int]int{0: 1, 1: 1, 2: 1, 3: 1}, map[int]int{0: 1, 1: 1, 2: 1, -1: 2},
			counts{aRows: 3, bCharges: 3, foreign: 3}},
		{"nothing", nil, nil, counts{lost: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, tally(tc.a, tc.b, 3))
		})
	}
}

func TestPass(t *testing.T) {
	t.Parallel()
	clean := result{counts: counts{aRows: 10, bCharges: 10}}
	assert.True(t, clean.pass(options{ops: 10}))
	assert.False(t, clean.pass(options{ops: 11}), "a_rows must equal the operations")
	assert.False(t, clean.pass(options{ops: 10, expectDuplicates: true}), "no duplicates found")
	short := clean
	short.missing = []string{"no kill of A landed in the window"}
	assert.False(t, short.pass(options{ops: 10}), "a run that missed its faults")
	dup := result{counts: counts{aRows: 10, bCharges: 12, duplicates: 2}}
	assert.False(t, dup.pass(options{ops: 10}))
	assert.True(t, dup.pass(options{ops: 10, expectDuplicates: true}))
	dup.history = linear.Result{Keys: 10}
	assert.False(t, dup.pass(options{ops: 10, expectDuplicates: true}), "the history check must catch the duplicates")
	dup.history.Violations = 2
	assert.True(t, dup.pass(options{ops: 10, expectDuplicates: true}))
	dup.lost = 1
	assert.False(t, dup.pass(options{ops: 10, expectDuplicates: true}), "nothing may be lost, naive or not")
	clean.history = linear.Result{Keys: 10, Violations: 1}
	assert.False(t, clean.pass(options{ops: 10}), "a history that is not linearizable")
}

func TestBodiesAreDeterministic(t *testing.T) {
	t.Parallel()
	assert.Equal(t, chargeBody("run1", 7), chargeBody("run1", 7))
	assert.NotEqual(t, chargeBody("run1", 7), chargeBody("run1", 8))
	assert.Equal(t, opKey("run1", 7), opKey("run1", 7))
	assert.NotEqual(t, opKey("run1", 7), opKey("run2", 7), "runs never share keys")
	for _, tb := range newTables("abcd2345").all() {
		assert.Regexp(t, `^[a-z_][a-z0-9_]{0,47}$`, tb)
	}
}

// TestRun runs a tiny two-hop run, with one kill of the client and one of
// service A, once with derived keys (nothing duplicated, nothing lost) and
// once naive (duplicates at B). It needs PostgreSQL: IDEM_TEST_DATABASE.
func TestRun(t *testing.T) {
	dsn := os.Getenv("IDEM_TEST_DATABASE")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("IDEM_TEST_DATABASE is not set and CI=true: the two-hop run must run")
		}
		t.Skip("set IDEM_TEST_DATABASE, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	ping(t, dsn)
	last := regexp.MustCompile(`^operations=(\d+) a_rows=(\d+) provider_charges=(\d+) duplicates=(\d+) lost=(\d+) kills=(\d+)$`)
	for _, tc := range []struct {
		name  string
		naive bool
	}{{"derived", false}, {"naive", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := options{
				ops: 60, kills: 2, conc: 4, database: dsn, seed: 42,
				naive: tc.naive, expectDuplicates: tc.naive,
				pause: 10 * time.Millisecond, timeout: 3 * time.Minute,
				drop: 0.10, reset: 0.05, fail: 0.05,
			}
			var out bytes.Buffer
			r, err := harness(o, &out)
			t.Log("\n" + out.String())
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			require.GreaterOrEqual(t, len(lines), 2)
			assert.Regexp(t, last, lines[len(lines)-1])
			assert.Regexp(t, `^client_kills=1 a_kills=1 kills_in_window=1$`, lines[len(lines)-2])
			assert.True(t, r.pass(o), "the run's verdict")
			assert.Zero(t, r.lost)
			if tc.naive {
				assert.Positive(t, r.duplicates, "a fresh key per run charges again")
			} else {
				assert.Zero(t, r.duplicates)
				assert.Equal(t, o.ops, r.aRows)
				assert.Equal(t, o.ops, r.bCharges)
			}
			assert.Equal(t, 1, r.clientKills)
			assert.Equal(t, 1, r.aKills)
		})
	}
}

func ping(t *testing.T, dsn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err, "IDEM_TEST_DATABASE is set but unreachable")
	defer conn.Close(ctx)
	require.NoError(t, conn.Ping(ctx))
}
