package pgstore_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// clusterStarted is set once a test started the cluster of
// scripts/pgcluster.sh; TestMain stops it when the tests end.
var clusterStarted atomic.Bool

// clusterScript runs scripts/pgcluster.sh with args and returns its
// standard output.
func clusterScript(ctx context.Context, args ...string) (string, error) {
	path, err := filepath.Abs("../../scripts/pgcluster.sh")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", &scriptError{args: args, err: err, stderr: stderr.String()}
	}
	return string(out), nil
}

type scriptError struct {
	args   []string
	err    error
	stderr string
}

func (e *scriptError) Error() string {
	return "scripts/pgcluster.sh " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

// runCluster runs scripts/pgcluster.sh with args, failing the test if it
// fails.
func runCluster(t *testing.T, args ...string) string {
	t.Helper()
	out, err := clusterScript(context.Background(), args...)
	require.NoError(t, err)
	return out
}

// ownCluster returns the DSN of the database "test" of the PostgreSQL
// cluster scripts/pgcluster.sh runs on a port of its own, starting it if
// needed. Tests that kill it, restart it or change its settings use it,
// never the shared server; they are not parallel, so that one's kill
// never meets another's run. It skips the test unless
// IDEM_TEST_PGCLUSTER=1. The cluster is stopped when the tests end.
func ownCluster(t *testing.T) string {
	t.Helper()
	if os.Getenv("IDEM_TEST_PGCLUSTER") != "1" {
		t.Skip("set IDEM_TEST_PGCLUSTER=1 to run the tests that start, kill and reconfigure a PostgreSQL cluster of their own (scripts/pgcluster.sh)")
	}
	out := runCluster(t, "start")
	clusterStarted.Store(true)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// stopCluster stops the cluster of scripts/pgcluster.sh if a test started
// it.
func stopCluster() {
	if clusterStarted.Load() {
		_, _ = clusterScript(context.Background(), "stop")
	}
}

// clusterDatabase creates a fresh database in the cluster of admin (a
// DSN of that cluster), with the given database-level settings (ALTER
// DATABASE ... SET), and returns its DSN. It is dropped when the test
// ends.
func clusterDatabase(t *testing.T, admin string, settings map[string]string) string {
	t.Helper()
	ctx := context.Background()
	name := tableName()
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	for k, v := range settings {
		_, err = conn.Exec(ctx, "ALTER DATABASE "+name+" SET "+k+" = '"+v+"'")
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return // the cluster is gone; its directory goes with it
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}
