package main

import (
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/idemhq/idem"
)

// TestMain lets the test binary run as the idem command in test scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"idem": main})
}

// serversKey finds a script's servers in its values.
type serversKey struct{}

// TestScripts runs testdata/script/*.txtar. Each script gets its own
// servers on loopback, named by environment variables: CHARGES_URL (the
// example charges service), NAIVE_URL (the naive server), IGNORING_URL
// (the server that ignores keys), FLAKY_URL (the charges service behind
// a switch, answering 503 until "flaky on"), and SQUARE_URL and STRIPE_URL
// (imitations of those APIs' idempotency, see fakeAPI).
//
// Commands besides testscript's own:
//
//	charges CLIENT N      the charges service took N charges for CLIENT
//	executed SERVER N     the naive, ignoring, square or stripe server
//	                      executed N requests
//	flaky on|off          turn the flaky server's service on or off
//	down square|stripe    the imitation answers 503 until "up"
//	up square|stripe
//	holdjournal PATH      hold the journal open, as a running application
//	                      would, until the script ends
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: false,
		Setup: func(e *testscript.Env) error {
			s, err := startServers(e.Defer)
			if err != nil {
				return err
			}
			e.Values[serversKey{}] = s
			e.Setenv("CHARGES_URL", s.charges.URL+"/charges")
			e.Setenv("NAIVE_URL", s.naive.URL+"/charges")
			e.Setenv("IGNORING_URL", s.ignoring.URL+"/charges")
			e.Setenv("FLAKY_URL", s.flaky.URL+"/charges")
			e.Setenv("SQUARE_URL", s.square.URL+"/v2/payments")
			e.Setenv("STRIPE_URL", s.stripe.URL+"/v1/payment_intents")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"charges": func(ts *testscript.TestScript, neg bool, args []string) {
				s := ts.Value(serversKey{}).(*testServers)
				if len(args) != 2 {
					ts.Fatalf("usage: charges CLIENT N")
				}
				n, err := s.chargeCount(args[0])
				ts.Check(err)
				checkCount(ts, neg, "charges for "+args[0], n, args[1])
			},
			"executed": func(ts *testscript.TestScript, neg bool, args []string) {
				s := ts.Value(serversKey{}).(*testServers)
				if len(args) != 2 {
					ts.Fatalf("usage: executed naive|ignoring N")
				}
				var n int
				switch args[0] {
				case "naive":
					n = s.naiveSrv.count()
				case "ignoring":
					n = s.ignoringSv.count()
				case "square", "stripe":
					n = s.fake(ts, args[0]).count()
				default:
					ts.Fatalf("executed: unknown server %q", args[0])
				}
				checkCount(ts, neg, args[0]+" executions", n, args[1])
			},
			"flaky": func(ts *testscript.TestScript, neg bool, args []string) {
				s := ts.Value(serversKey{}).(*testServers)
				if len(args) != 1 || args[0] != "on" && args[0] != "off" {
					ts.Fatalf("usage: flaky on|off")
				}
				s.flakySw.on.Store(args[0] == "on")
			},
			"down": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: down square|stripe")
				}
				ts.Value(serversKey{}).(*testServers).fake(ts, args[0]).down.Store(true)
			},
			"up": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: up square|stripe")
				}
				ts.Value(serversKey{}).(*testServers).fake(ts, args[0]).down.Store(false)
			},
			"holdjournal": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: holdjournal PATH")
				}
				j, err := idem.OpenJournal(ts.MkAbs(args[0]), idem.JournalOptions{})
				ts.Check(err)
				ts.Defer(func() { j.Close() })
			},
		},
	})
}

func checkCount(ts *testscript.TestScript, neg bool, what string, got int, want string) {
	n, err := strconv.Atoi(want)
	ts.Check(err)
	if (got == n) == neg {
		ts.Fatalf("%s: %d, want %s%d", what, got, map[bool]string{true: "not ", false: ""}[neg], n)
	}
}

// fake returns the imitation of the API named.
func (s *testServers) fake(ts *testscript.TestScript, name string) *fakeAPI {
	switch name {
	case "square":
		return s.squareAPI
	case "stripe":
		return s.stripeAPI
	}
	ts.Fatalf("no imitation of %q", name)
	return nil
}
