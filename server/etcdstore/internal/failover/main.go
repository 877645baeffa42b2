// Command failover measures what leader failovers of an etcd cluster do
// to idempotency through etcdstore (the harness is internal/drill). For
// each seed it starts a three-member cluster in the process, serves a
// counting handler through server.Middleware on an etcdstore behind a
// proxy that drops some answers after the work, drives keyed operations
// at it through an idem client with retries, kills the leader -kills
// times mid-run (its raft loop stopped without a word to its peers, then
// restarted on its data), and finally sends every operation once more,
// which must be replayed. It prints a line per seed and then the totals:
//
//	operations=<n> duplicates=<d> lost=<l> leader_kills=<k> forgotten=<f> median_to_leader=<t>
//
// where
//
//   - duplicates are runs of an operation's work beyond the first, over
//     the whole run, the final re-send included;
//   - lost are operations without a final answer within the client's
//     retries;
//   - forgotten are operations answered during the run whose re-send ran
//     the work again (their outcome was lost);
//   - median_to_leader is the median time from a kill until every live
//     member's status names the same new leader in a later term:
//     measured, never asserted.
//
// It exits 1 unless duplicates, lost and forgotten are all 0 and every
// kill happened (with -naive, which serves the handler without the
// middleware: unless lost is 0 and duplicates are above 0), and 2 on a
// harness error. Every wait is bounded.
//
//	go run ./server/etcdstore/internal/failover -seeds 1,2,3 -kills 4
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore/internal/drill"
)

func main() {
	var cfg drill.Config
	seeds := flag.String("seeds", "1,2,3", "seeds, comma-separated: one run, on a fresh cluster, per seed")
	flag.IntVar(&cfg.Kills, "kills", 4, "leader kills per seed")
	flag.IntVar(&cfg.Ops, "ops", 1000, "operations per seed, at least (more are sent until the kills are over)")
	flag.IntVar(&cfg.Conc, "c", 16, "operations in flight")
	flag.DurationVar(&cfg.Work, "work", 2*time.Millisecond, "how long the handler's work takes")
	flag.Float64Var(&cfg.Drop, "drop", 0.05, "share of answers the proxy drops after the work")
	flag.DurationVar(&cfg.Lease, "lease", server.DefaultLease, "the middleware's lease")
	flag.BoolVar(&cfg.Naive, "naive", false, "serve the handler without the middleware (expects duplicates)")
	flag.StringVar(&cfg.Dir, "dir", "", "where the members' data lives (default: a temporary directory)")
	verbose := flag.Bool("v", false, "report each kill on standard error")
	timeout := flag.Duration("timeout", 10*time.Minute, "bound on each seed's run")
	flag.Parse()
	if *verbose {
		cfg.Log = os.Stderr
	}
	var list []uint64
	for f := range strings.SplitSeq(*seeds, ",") {
		s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			fail("-seeds: " + err.Error())
		}
		list = append(list, s)
	}
	if cfg.Kills < 1 || cfg.Ops < 1 || cfg.Conc < 1 {
		fail("-kills, -ops and -c must be at least 1")
	}

	var total drill.Result
	for _, seed := range list {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		r, err := drill.Run(ctx, cfg, seed)
		cancel()
		if err != nil {
			fail(fmt.Sprintf("seed %d: %v", seed, err))
		}
		fmt.Println(r)
		total.Ops += r.Ops
		total.Duplicates += r.Duplicates
		total.Lost += r.Lost
		total.Forgotten += r.Forgotten
		total.Kills += r.Kills
		total.ToLeader = append(total.ToLeader, r.ToLeader...)
	}
	fmt.Printf("operations=%d duplicates=%d lost=%d leader_kills=%d forgotten=%d median_to_leader=%s\n",
		total.Ops, total.Duplicates, total.Lost, total.Kills, total.Forgotten, drill.Median(total.ToLeader).Round(time.Millisecond))
	ok := total.Lost == 0 && total.Kills == cfg.Kills*len(list)
	if cfg.Naive {
		ok = ok && total.Duplicates > 0
	} else {
		ok = ok && total.Duplicates == 0 && total.Forgotten == 0
	}
	if !ok {
		os.Exit(1)
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "failover:", msg)
	os.Exit(2)
}
