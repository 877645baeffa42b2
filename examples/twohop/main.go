// Command twohop proves that idem's promise reaches the provider a handler
// calls: a retried request never makes the provider act twice, even when
// the service in the middle dies after the provider acted and before its
// own transaction committed.
//
// It runs three kinds of real processes, all this same binary in another
// role (chosen by the TWOHOP_ROLE environment variable):
//
//   - the client: an idem client with a bbolt journal that works through
//     the run's operations, operation i under the key
//     idem.DeriveKey("twohop", runID, i), and resumes from its journal
//     after a restart;
//   - service A: idem's middleware on pgstore in transactional mode (a
//     table of its own). Its handler inserts an order row in the request's
//     transaction, calls provider B through an idem client (a journal of
//     its own, reopened by every restart, which resumes the calls a killed
//     A left pending) with no key of its own: the key is derived from the
//     one the request holds and the step idem.Step names, "charge". It
//     then records B's charge on the order, pauses (-pause), and answers;
//     the middleware commits the order with the stored response. B's
//     request body is computed from the operation alone, so every run of
//     the handler sends the same bytes;
//   - provider B: idem's middleware on pgstore in transactional mode (a
//     table of its own), whose handler inserts one charge row per
//     execution. B is never killed.
//
// The harness (the parent process) holds both services' listening
// sockets, so a restarted A serves the same address, and runs a lossy
// proxy (internal/faultproxy) on each hop, client to A and A to B, which
// drops answers after the server acted, resets connections and answers
// 503. It SIGKILLs the client and A, -kills times in all (the client the
// odd one out), at random points, and restarts each. Every other kill of
// A waits for A to say that B answered an operation and kills it in the
// pause before the commit: after B charged and before A committed. A
// prints a line when B answered and when the middleware has committed
// and sent the answer; after each kill of A the harness waits until the
// dead process's database sessions are gone and counts the operations B
// had answered that have no order row: the kill landed in that window.
// Such a kill is counted in kills_in_window.
//
// At the end the harness counts, from the two databases, A's order rows
// and B's charge rows per operation. Every operation must have exactly one
// of each: duplicates counts the extra rows of either, lost the operations
// missing either. It prints
//
//	client_kills=<c> a_kills=<a> kills_in_window=<w>
//	operations=<n> a_rows=<n> provider_charges=<n> duplicates=<d> lost=<l> kills=<k>
//
// as its last two lines and exits non-zero unless duplicates=0, lost=0 and
// a_rows=provider_charges=operations. A run that did not meet the faults
// it was asked for (a kill that found the client done, no kill of A in the
// window, no dropped answer replayed on a hop) fails too: it would prove
// less than it claims.
//
// With -naive, A's handler sends B a fresh key (idem.NewKey) on every run
// instead of the derived one: each time a kill makes the client's retry
// run A's handler again after B charged, B charges again, and the run
// reports duplicates. -expect-duplicates turns that into the pass
// condition (nothing lost, and duplicates found), for CI.
//
// Each run has a random run ID: its own four tables (twohop_<id>_a_keys,
// _orders, _b_keys, _charges, dropped at the end unless -keep), its own
// scopes and journals, so runs never count each other's rows. Every wait
// is bounded (-timeout bounds the whole run); the children exit when the
// harness goes away, and the harness kills them before it exits (on
// SIGINT and SIGTERM too). A harness killed with SIGKILL cannot drop its
// tables: its first line names the run, whose tables begin twohop_<id>_.
//
//	go run ./examples/twohop -ops 300 -kills 6 -database $IDEM_TEST_DATABASE
//	go run ./examples/twohop -ops 2000 -kills 20 -database $IDEM_TEST_DATABASE -seed 42
//	go run ./examples/twohop -ops 300 -kills 6 -database $IDEM_TEST_DATABASE -naive -expect-duplicates
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

type options struct {
	ops, kills, conc  int
	database          string
	seed              uint64
	naive             bool
	expectDuplicates  bool
	pause             time.Duration
	timeout           time.Duration
	drop, reset, fail float64
	keep              bool
}

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runChild(role))
	}
	var o options
	flag.IntVar(&o.ops, "ops", 300, "operations the client works through")
	flag.IntVar(&o.kills, "kills", 6, "SIGKILLs in all, shared between the client and service A (the client gets the odd one)")
	flag.IntVar(&o.conc, "c", 8, "operations the client keeps in flight")
	flag.StringVar(&o.database, "database", os.Getenv("IDEM_TEST_DATABASE"), "PostgreSQL DSN (default $IDEM_TEST_DATABASE)")
	flag.Uint64Var(&o.seed, "seed", 0, "seed for faults and kill points (0: from the clock)")
	flag.BoolVar(&o.naive, "naive", false, "A sends B a fresh key on every run of its handler, instead of the derived one")
	flag.BoolVar(&o.expectDuplicates, "expect-duplicates", false, "pass only if duplicates were found (and nothing lost): for -naive in CI")
	flag.DurationVar(&o.pause, "pause", 10*time.Millisecond, "how long A's handler waits between B's answer and its commit")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	flag.Float64Var(&o.drop, "drop", 0.10, "share of answers each proxy drops after the server acted")
	flag.Float64Var(&o.reset, "reset", 0.05, "share of connections each proxy resets before forwarding")
	flag.Float64Var(&o.fail, "503", 0.05, "share of requests each proxy answers 503")
	flag.BoolVar(&o.keep, "keep", false, "keep the run's tables for inspection")
	flag.Parse()
	if o.database == "" {
		fail("-database (or IDEM_TEST_DATABASE) must name a PostgreSQL database")
	}
	if o.ops < 1 || o.kills < 0 || o.conc < 1 {
		fail("-ops and -c must be positive, -kills not negative")
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	r, err := harness(o, os.Stdout)
	if err != nil {
		fail(err.Error())
	}
	if !r.pass(o) {
		os.Exit(1)
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "twohop:", msg)
	os.Exit(2)
}
