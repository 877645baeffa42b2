// Command chaos proves idem's promise under the faults it exists for. It
// runs the example charges service behind a lossy proxy, and a client child
// process that works through a batch of charges whose keys come from
// business IDs or from names bound in its journal. It kills the child with
// SIGKILL at random moments and restarts it; each restart resumes from the
// journal. At the end it checks, from the service's own records, that every
// operation executed exactly once, and prints as its last line
//
//	operations=<n> executed=<n> duplicates=<d> lost=<l> kills=<k> attempts=<a> replays=<r>
//
// exiting non-zero unless executed equals operations and there are no
// duplicates and nothing lost. A run that did not meet the faults it was
// asked for (a kill that found the child already done, no dropped answer
// replayed) fails too: it would prove less than it claims. Every wait is
// bounded: a child that hangs is killed and the run fails.
//
//	go run ./examples/chaos -ops 2000 -kills 5
//	go run ./examples/chaos -ops 2000 -kills 5 -database $IDEM_TEST_DATABASE -restart-postgres
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/internal/faultproxy"
)

type options struct {
	ops, kills, conc  int
	database          string
	restartPostgres   bool
	seed              uint64
	drop, reset, fail float64
}

func main() {
	var o options
	flag.IntVar(&o.ops, "ops", 2000, "operations in the batch")
	flag.IntVar(&o.kills, "kills", 5, "times to kill the client with SIGKILL")
	flag.IntVar(&o.conc, "c", 8, "operations the client keeps in flight")
	flag.StringVar(&o.database, "database", "", "PostgreSQL DSN; empty keeps the service in memory")
	flag.BoolVar(&o.restartPostgres, "restart-postgres", false, "restart the local PostgreSQL once, mid-run (needs -database)")
	flag.Uint64Var(&o.seed, "seed", 0, "seed for faults and kill times (0: from the clock)")
	flag.Float64Var(&o.drop, "drop", 0.10, "share of answers dropped after the service charged")
	flag.Float64Var(&o.reset, "reset", 0.05, "share of connections reset before forwarding")
	flag.Float64Var(&o.fail, "503", 0.05, "share of requests answered 503 by the proxy")
	child := flag.Bool("child", false, "run as the client process (used by the harness)")
	url := flag.String("url", "", "child: the proxy's URL")
	journal := flag.String("journal", "", "child: the journal file")
	client := flag.String("client", "", "child: the client ID (idempotency scope)")
	flag.Parse()

	if *child {
		if err := runClient(*url, *journal, *client, o.ops, o.conc); err != nil {
			fmt.Fprintln(os.Stderr, "chaos client:", err)
			os.Exit(1)
		}
		return
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if o.restartPostgres && o.database == "" {
		fail("-restart-postgres needs -database")
	}
	ok, err := harness(o)
	if err != nil {
		fail(err.Error())
	}
	if !ok {
		os.Exit(1)
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "chaos:", msg)
	os.Exit(2)
}

func harness(o options) (bool, error) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(o.seed, 7))
	cfg := charges.Config{Delay: time.Millisecond, Lease: 3 * time.Second, Wait: time.Second}
	store := "memory"
	if o.database != "" {
		pool, err := pgxpool.New(ctx, o.database)
		if err != nil {
			return false, err
		}
		defer pool.Close()
		cfg.Pool, store = pool, "PostgreSQL"
	}
	svc, err := charges.New(ctx, cfg)
	if err != nil {
		return false, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return false, err
	}
	go http.Serve(ln, svc.Handler())
	proxy, err := faultproxy.Start(faultproxy.Config{
		Upstream: "http://" + ln.Addr().String(),
		Drop:     o.drop, Reset: o.reset, Unavailable: o.fail, MaxDelay: 2 * time.Millisecond, Seed: o.seed,
	})
	if err != nil {
		return false, err
	}
	defer proxy.Close()
	dir, err := os.MkdirTemp("", "idem-chaos")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	client := fmt.Sprintf("chaos-%d", o.seed)
	fmt.Printf("chaos: %d operations, %d kills, store %s, seed %d\n", o.ops, o.kills, store, o.seed)

	self, err := os.Executable()
	if err != nil {
		return false, err
	}
	start := func() (*exec.Cmd, <-chan error, error) {
		cmd := exec.Command(self, "-child", "-url", proxy.URL(), "-journal", filepath.Join(dir, "client.journal"),
			"-client", client, "-ops", fmt.Sprint(o.ops), "-c", fmt.Sprint(o.conc))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, done, nil
	}

	// Every wait is bounded: a child that hangs is killed and the run
	// fails, rather than hold up whoever runs it.
	deadline := time.Now().Add(15 * time.Minute)
	var restarted chan error
	kills := 0
	for i := range o.kills {
		cmd, done, err := start()
		if err != nil {
			return false, err
		}
		if o.restartPostgres && i == o.kills/2 {
			restarted = make(chan error, 1)
			go func() {
				time.Sleep(100 * time.Millisecond)
				restarted <- restartPostgres()
			}()
		}
		// Kill it once it has sent a random number of further requests,
		// so every kill lands mid-run, whatever the machine's speed.
		target := proxy.By(client) + 1 + int64(rng.IntN(max(1, o.ops/(o.kills+1))))
		for over := false; !over; {
			select {
			case err := <-done:
				if err != nil {
					return false, fmt.Errorf("client exited early: %v", err)
				}
				fmt.Printf("chaos: client %d finished before its kill\n", i+1)
				over = true
				continue
			case <-time.After(time.Millisecond):
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				<-done
				return false, fmt.Errorf("client %d neither finished nor reached its kill by the deadline", i+1)
			}
			if proxy.By(client) >= target {
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				kills++
				over = true
				fmt.Printf("chaos: killed client %d after %d requests so far\n", i+1, proxy.By(client))
			}
		}
	}
	if restarted != nil {
		if err := <-restarted; err != nil {
			return false, fmt.Errorf("restarting PostgreSQL: %v", err)
		}
		fmt.Println("chaos: PostgreSQL was restarted mid-run")
	}
	last, done, err := start()
	if err != nil {
		return false, err
	}
	select {
	case err := <-done:
		if err != nil {
			return false, fmt.Errorf("the last client failed: %v", err)
		}
	case <-time.After(time.Until(deadline)):
		last.Process.Kill()
		<-done
		return false, fmt.Errorf("the last client did not finish by the deadline")
	}

	cs, err := svc.Charges(ctx, client)
	if err != nil {
		return false, err
	}
	refs := make(map[string]int)
	for _, c := range cs {
		refs[c.Ref]++
	}
	executed := 0
	for i := range o.ops {
		if refs[fmt.Sprintf("op-%d", i)] > 0 {
			executed++
		}
	}
	duplicates, lost := len(cs)-len(refs), o.ops-executed
	st := proxy.Stats()
	fmt.Printf("chaos: proxy saw %d requests: %d reset, %d answered 503, %d answers dropped after the charge\n",
		st.Requests, st.Resets, st.Unavailable, st.Dropped)
	// A run that did not meet the faults it was asked for proves less
	// than it claims, so it does not pass.
	var missing []string
	if kills < o.kills {
		missing = append(missing, fmt.Sprintf("only %d of %d kills landed mid-run (more -ops, or fewer -kills)", kills, o.kills))
	}
	if o.drop > 0 && (st.Dropped == 0 || st.Replayed == 0) {
		missing = append(missing, fmt.Sprintf("%d answers dropped and %d replayed: no lost answer was put to the test", st.Dropped, st.Replayed))
	}
	for _, m := range missing {
		fmt.Println("chaos:", m)
	}
	fmt.Printf("operations=%d executed=%d duplicates=%d lost=%d kills=%d attempts=%d replays=%d\n",
		o.ops, executed, duplicates, lost, kills, proxy.By(client), st.Replayed)
	return executed == o.ops && duplicates == 0 && lost == 0 && len(refs) == o.ops && len(missing) == 0, nil
}

func restartPostgres() error {
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) == 0 {
		return fmt.Errorf("no cluster under /etc/postgresql: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", versions[0].Name(), "main", "restart").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
