// Command killrun proves natsidem's exactly-once effects on a real
// JetStream and PostgreSQL: it publishes N messages to a stream of its
// own, runs the consumer as a child process whose effects are rows in
// PostgreSQL (pgstore in transactional mode, so each effect row and idem's
// record of its message commit together), SIGKILLs the consumer at random
// points at least ten times, lets JetStream redeliver (AckWait 1 s), and
// counts the effect rows:
//
//	messages=1000 effects=1000 duplicates=0 lost=0 kills=12
//
// It exits 0 if the counts are what -expect says, 1 otherwise, and 2 if
// the run itself failed. Half of the kills come from this process at a
// random moment (after a random number of messages, plus a random delay
// of up to 3 ms); the other half at a random stage of a random message
// (received, effect written, outcome recorded, acked), chosen here and
// delivered by the consumer to itself with SIGKILL, so that every window
// between two steps is hit at least once.
//
// Two variants show what the test guards against:
//
//	-ack-first   acks each message (and waits for the server's confirmation)
//	             before running it through RunOnce: a kill between the ack
//	             and the commit loses the message (-expect loss)
//	-no-idem     runs each effect in a transaction of its own and acks
//	             after the commit, without RunOnce: a kill between the
//	             commit and the ack runs the effect again (-expect duplicates)
//
// Usage:
//
//	IDEM_TEST_DATABASE=postgres://... go run ./internal/killrun [-n 1000] [-kills 12] [-nats URL|embedded]
//
// -nats defaults to IDEM_TEST_NATS, or nats://127.0.0.1:4222; "embedded"
// runs a NATS server inside this process (the consumer is killed, never
// the server). The stream, its consumer and both tables are named after
// this run and removed at the end.
package main

import (
	"flag"
	"fmt"
	"os"
)

// Stages of a message in the consumer, in the order each variant passes
// them; a stage kill happens on entering one.
const (
	stageReceived = "received" // delivered, nothing done yet
	stageEffect   = "effect"   // the effect row written, not committed
	stageRecorded = "recorded" // the outcome committed, not acked
	stageAcked    = "acked"    // acked
)

var stages = []string{stageReceived, stageEffect, stageRecorded, stageAcked}

// config is what the parent and the child share.
type config struct {
	natsURL  string
	dsn      string
	stream   string
	effects  string // the effect rows' table
	keys     string // idem's table
	ackFirst bool
	noIdem   bool
}

func (c config) variant() string {
	switch {
	case c.ackFirst:
		return "ack-first"
	case c.noIdem:
		return "no-idem"
	}
	return "idem"
}

func main() {
	var (
		c         config
		child     bool
		n, kills  int
		expect    string
		seed      uint64
		killStage string
		killAfter int
	)
	flag.StringVar(&c.natsURL, "nats", envOr("IDEM_TEST_NATS", "nats://127.0.0.1:4222"), `NATS URL, or "embedded" for a server in this process`)
	flag.StringVar(&c.dsn, "db", os.Getenv("IDEM_TEST_DATABASE"), "PostgreSQL DSN (default $IDEM_TEST_DATABASE)")
	flag.IntVar(&n, "n", 1000, "messages to publish")
	flag.IntVar(&kills, "kills", 12, "consumer kills (at least 10)")
	flag.BoolVar(&c.ackFirst, "ack-first", false, "ack before recording the outcome (loses messages)")
	flag.BoolVar(&c.noIdem, "no-idem", false, "run effects without RunOnce (duplicates them)")
	flag.StringVar(&expect, "expect", "exact", "what the counts must show: exact, loss or duplicates")
	flag.Uint64Var(&seed, "seed", 0, "random seed (default: from the clock, printed)")
	// The child's flags.
	flag.BoolVar(&child, "child", false, "run as the consumer (internal)")
	flag.StringVar(&c.stream, "stream", "", "stream name (internal)")
	flag.StringVar(&c.effects, "effects", "", "effects table (internal)")
	flag.StringVar(&c.keys, "keys", "", "idem table (internal)")
	flag.StringVar(&killStage, "kill-stage", "", "stage at which the consumer kills itself (internal)")
	flag.IntVar(&killAfter, "kill-after", 0, "message on whose stage the consumer kills itself (internal)")
	flag.Parse()

	if child {
		if err := runChild(c, killStage, killAfter); err != nil {
			fmt.Fprintln(os.Stderr, "killrun consumer:", err)
			os.Exit(2)
		}
		return
	}
	os.Exit(runParent(c, n, kills, expect, seed))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
