package pgstore_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestClaimWorkTakeoverOnConnectionDeath: a worker holding a key through
// ClaimWork loses its connection in the middle of the work (its backend is
// terminated, as when PostgreSQL or a proxy drops it). The transaction and
// its lock go with the connection: once the backend is gone, the very next
// ClaimWork of the key acquires it, with no lease to wait out, and the
// first worker's charge is gone. The first worker's Commit fails, and is
// not mistaken for success.
func TestClaimWorkTakeoverOnConnectionDeath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true})
	charges := newCharges(t, pool)
	k := server.Key{Scope: "tenant", Key: "pay-1"}

	c, wctx, w := claimWork(t, s, k, "fp")
	require.True(t, c.Acquired)
	charge(t, wctx, charges, k.Key)
	tx, _ := pgstore.Tx(wctx)
	var pid int64
	require.NoError(t, tx.QueryRow(wctx, "SELECT pg_backend_pid()").Scan(&pid))

	again, _, _ := claimWork(t, s, k, "fp")
	require.False(t, again.Acquired, "in flight while the first worker's connection lives")

	var killed bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&killed))
	require.True(t, killed)
	waitBackendGone(t, pool, pid)

	c2, wctx2, w2 := claimWork(t, s, k, "fp")
	require.True(t, c2.Acquired, "the key is free as soon as the backend is gone")
	assert.False(t, c2.TakenOver, "nothing was stored: there is nothing to take over")
	charge(t, wctx2, charges, k.Key)
	require.NoError(t, w2.Commit(ctx, server.StoredResponse{Status: http.StatusCreated}, retention))

	err := w.Commit(ctx, server.StoredResponse{Status: http.StatusTeapot}, retention)
	require.Error(t, err, "the first worker's transaction died with its connection")
	assert.Equal(t, 1, countCharges(t, pool, charges), "only the second worker's charge")
	done, _, _ := claimWork(t, s, k, "fp")
	assert.Equal(t, http.StatusCreated, done.Record.Response.Status)
}

// waitBackendGone returns once backend pid holds no lock any more (it
// releases its locks as it exits, before it leaves pg_stat_activity). It
// gives up after ten seconds.
func waitBackendGone(t *testing.T, pool *pgxpool.Pool, pid int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var alive bool
		require.NoError(t, pool.QueryRow(context.Background(),
			"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1) OR EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)",
			pid).Scan(&alive))
		if !alive {
			return
		}
	}
	t.Fatalf("backend %d is still there", pid)
}

// Environment of the worker process of TestClaimWorkTakeoverOnCrash.
const (
	crashChildEnv = "IDEM_PGSTORE_CRASH_CHILD" // the table
	crashKeyEnv   = "IDEM_PGSTORE_CRASH_KEY"
)

// TestClaimWorkTakeoverOnCrash runs a worker in a process of its own: it
// claims a key with ClaimWork, charges in the work's transaction, says so,
// and hangs. The test kills it with SIGKILL. Its operating system closes
// its connection, PostgreSQL rolls the work back and drops the lock, and
// once its backend is gone the next ClaimWork of the key acquires it at
// once: no charge from the dead worker, one from the retry.
func TestClaimWorkTakeoverOnCrash(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("the worker process runs TestCrashChild")
	}
	t.Parallel()
	ctx := context.Background()
	table := tableName()
	s, pool := newTestStore(t, pgstore.Options{Table: table, Transactional: true})
	charges := "charges_" + table
	_, err := pool.Exec(ctx, "CREATE TABLE "+charges+" (key text NOT NULL, amount integer NOT NULL)")
	require.NoError(t, err)
	dropTable(t, pool, charges)
	k := server.Key{Scope: "tenant", Key: "pay-crash"}

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+table, crashKeyEnv+"="+k.Key)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// The child prints "charged <backend pid>" once it holds the key.
	var pid int64
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if p, ok := strings.CutPrefix(lines.Text(), "charged "); ok {
			pid, err = strconv.ParseInt(p, 10, 64)
			require.NoError(t, err)
			break
		}
	}
	require.NotZero(t, pid, "the worker process never charged")
	running, _, _ := claimWork(t, s, k, "fp")
	require.False(t, running.Acquired, "in flight while the worker lives")

	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_ = cmd.Wait()
	waitBackendGone(t, pool, pid)

	c, wctx, w := claimWork(t, s, k, "fp")
	require.True(t, c.Acquired, "the dead worker's key is free as soon as its backend is gone")
	charge(t, wctx, charges, k.Key)
	require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusCreated}, retention))
	assert.Equal(t, 1, countCharges(t, pool, charges), "the dead worker's charge rolled back")
}

// TestCrashChild is the worker process of TestClaimWorkTakeoverOnCrash.
func TestCrashChild(t *testing.T) {
	table := os.Getenv(crashChildEnv)
	if table == "" {
		t.Skip("run by TestClaimWorkTakeoverOnCrash")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testDatabase)
	require.NoError(t, err)
	s, err := pgstore.New(pool, pgstore.Options{Table: table, Transactional: true})
	require.NoError(t, err)
	k := server.Key{Scope: "tenant", Key: os.Getenv(crashKeyEnv)}
	c, wctx, _, err := s.ClaimWork(ctx, k, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	tx, _ := pgstore.Tx(wctx)
	_, err = tx.Exec(wctx, "INSERT INTO charges_"+table+" (key, amount) VALUES ($1, 1000)", k.Key)
	require.NoError(t, err)
	var pid int64
	require.NoError(t, tx.QueryRow(wctx, "SELECT pg_backend_pid()").Scan(&pid))
	fmt.Printf("charged %d\n", pid)
	time.Sleep(time.Hour) // until SIGKILL
}
