package pgstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// dbCPU measures the CPU time the PostgreSQL backends of one pool spend,
// read from /proc/<pid>/schedstat when the server runs on this machine:
// the database's own work per operation, which a loaded machine disturbs
// far less than it disturbs latency. Elsewhere it measures nothing.
type dbCPU struct {
	pool    *pgxpool.Pool
	appName string
	start   map[int64]int64 // backend pid -> CPU ns at start
}

// benchPool opens a pool of maxConns connections whose backends carry a
// fresh application_name, so that dbCPU finds them among the shared
// server's others.
func benchPool(b *testing.B, maxConns int32) (*pgxpool.Pool, *dbCPU) {
	cfg := poolConfig(b, maxConns)
	name := "idem_bench_" + strings.ToLower(rand.Text()[:12])
	cfg.ConnConfig.RuntimeParams["application_name"] = name
	pool := newPool(b, cfg)
	return pool, &dbCPU{pool: pool, appName: name}
}

// backends returns the CPU time so far of each backend of the pool, by
// pid; nil if the server's processes cannot be read here.
func (c *dbCPU) backends(b *testing.B) map[int64]int64 {
	rows, err := c.pool.Query(context.Background(),
		"SELECT pid FROM pg_stat_activity WHERE application_name = $1", c.appName)
	require.NoError(b, err)
	var pids []int64
	for rows.Next() {
		var pid int64
		require.NoError(b, rows.Scan(&pid))
		pids = append(pids, pid)
	}
	require.NoError(b, rows.Err())
	cpu := make(map[int64]int64, len(pids))
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			return nil // not this machine's, or gone: measure nothing
		}
		var ns int64
		if _, err := fmt.Sscan(string(data), &ns); err != nil {
			return nil
		}
		cpu[pid] = ns
	}
	return cpu
}

// begin records the backends' CPU time before the measured operations.
// (Its query, and report's, run on the pool too: a few microseconds in
// all.)
func (c *dbCPU) begin(b *testing.B) { c.start = c.backends(b) }

// report adds the backends' CPU time per operation since begin
// (db-cpu-µs/op) for n operations. A backend that opened meanwhile counts
// whole; one that closed meanwhile is lost.
func (c *dbCPU) report(b *testing.B, n int) { c.reportAs(b, n, "db-cpu-µs/op") }

// reportAs is report under the metric's name unit, for a benchmark that
// reports several pools' CPU side by side.
func (c *dbCPU) reportAs(b *testing.B, n int, unit string) {
	end := c.backends(b)
	if c.start == nil || end == nil || n == 0 {
		return
	}
	var ns int64
	for pid, t := range end {
		ns += t - c.start[pid]
	}
	b.ReportMetric(float64(ns)/1e3/float64(n), unit)
}
