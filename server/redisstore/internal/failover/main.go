// Command failover measures what a Redis Cluster failover does to
// idempotency. It serves a counting handler through server.Middleware on a
// redisstore, behind a proxy that drops some answers after the work (so
// clients retry and need replays), and drives many keyed requests at it,
// each retried until it gets a final answer. Mid-run it SIGKILLs one
// master of the local cluster (scripts/redis-cluster.sh kill); the
// cluster promotes that master's replica. After the run every operation is
// sent once more, as a client that lost its answer would, and must be
// replayed. It prints one line per run:
//
//		seed=<s> wait=<n> ops=<n> executed=<n> duplicates=<d> lost=<l> forgotten=<f> ...
//
//	  - executed: operations whose work ran at least once;
//	  - duplicates: runs of the work beyond the first, over the whole run,
//	    the final re-send included;
//	  - lost: operations that never got a final answer within the budget;
//	  - forgotten: operations answered during the run whose re-send ran the
//	    work again instead of being replayed (their outcome is gone).
//
// Each seed runs without and with WaitReplicas 1 (or as -wait says), and
// the cluster is healed (the killed node restarted as a replica) between
// runs. With -lag, the master's replica is held back for that long before
// the kill (paused with scripts/redis-cluster.sh pause, behind a burst of
// filler): it falls behind, as over a slow link, and is promoted without
// the master's last writes.
// Every wait is bounded.
//
//	scripts/redis-cluster.sh start
//	go run ./server/redisstore/internal/failover -seeds 1,2,3,4,5
//	go run ./server/redisstore/internal/failover -seeds 1,2,3,4,5 -lag 300ms
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

type options struct {
	addrs    []string
	script   string
	seeds    []uint64
	waits    []int
	ops      int
	conc     int
	work     time.Duration
	lease    time.Duration
	drop     float64
	budget   time.Duration
	noKill   bool
	killFrom float64
	verbose  bool
	restart  bool
	lag      time.Duration
}

func main() {
	var o options
	addrs := flag.String("redis", os.Getenv("IDEM_TEST_REDIS"), "the cluster's seed addresses, comma-separated (default $IDEM_TEST_REDIS)")
	seeds := flag.String("seeds", "1,2,3", "seeds, comma-separated: one run per seed and wait setting")
	waits := flag.String("wait", "0,1", "WaitReplicas settings to run each seed with, comma-separated")
	flag.StringVar(&o.script, "script", "scripts/redis-cluster.sh", "the cluster script (kill, heal)")
	flag.IntVar(&o.ops, "ops", 3000, "operations per run")
	flag.IntVar(&o.conc, "c", 32, "operations in flight")
	flag.DurationVar(&o.work, "work", 2*time.Millisecond, "how long the handler's work takes")
	flag.DurationVar(&o.lease, "lease", 30*time.Second, "the middleware's lease")
	flag.Float64Var(&o.drop, "drop", 0.05, "share of answers the proxy drops after the work")
	flag.DurationVar(&o.budget, "budget", 60*time.Second, "how long one operation is retried before it counts as lost")
	flag.BoolVar(&o.noKill, "no-kill", false, "kill nothing: the baseline")
	flag.Float64Var(&o.killFrom, "kill-at", 0.3, "kill once this share of operations is answered (plus up to 0.3, by seed)")
	flag.BoolVar(&o.verbose, "v", false, "report progress on standard error")
	flag.DurationVar(&o.lag, "lag", 0, "hold the master's replica back this long before the kill, so it is promoted behind")
	flag.BoolVar(&o.restart, "restart", true, "restart the killed node once its replica is promoted, as a supervisor would")
	flag.Parse()

	if *addrs == "" {
		fail("no cluster: set IDEM_TEST_REDIS or -redis (scripts/redis-cluster.sh start prints the addresses)")
	}
	o.addrs = strings.Split(*addrs, ",")
	var err error
	if o.seeds, err = parseList(*seeds, func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }); err != nil {
		fail("-seeds: " + err.Error())
	}
	if o.waits, err = parseList(*waits, strconv.Atoi); err != nil {
		fail("-wait: " + err.Error())
	}
	ok := true
	for _, seed := range o.seeds {
		for _, wait := range o.waits {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			r, err := run(ctx, o, seed, wait)
			cancel()
			if err != nil {
				fail(fmt.Sprintf("seed %d wait %d: %v", seed, wait, err))
			}
			fmt.Println(r)
			fmt.Println(r.history)
			ok = ok && r.lost == 0
		}
	}
	if !ok {
		os.Exit(1)
	}
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for f := range strings.SplitSeq(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "failover:", msg)
	os.Exit(2)
}
