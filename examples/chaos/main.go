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
// Each run charges under a scope of its own, chaos-<seed>-<run ID> (the
// run ID is random), and is checked against that scope's records only, so
// runs with the same -seed against the same database never count each
// other's charges. A charge in the run's scope that the run did not ask
// for fails the run and is reported.
//
// With -restart-postgres the harness restarts, once and mid-run, the
// PostgreSQL server -database points at, and no other: it must run on this
// machine, and the harness finds its data directory with SQL and restarts
// it with pg_ctlcluster (a Debian cluster) or pg_ctl, as the directory's
// owner. When it cannot (a remote host, a container, a pooler, no
// permission) it refuses before the run starts; -restart-cmd then names a
// shell command that restarts the server. After the restart the harness
// checks that the server's start time changed.
//
// With -redis the idempotency records are kept in Redis (package
// redisstore; comma-separated addresses are a cluster's seeds) and the
// charges in the harness's memory, each kept once Redis has recorded its
// request's outcome under the lease's fence. With -kill-redis-master the
// harness SIGKILLs one master of that cluster, once and mid-run, through
// scripts/redis-cluster.sh kill (so the cluster must be the one the
// script started; -redis-script names another copy), waits until a
// replica serves its slots, and after the run heals the cluster with the
// script's heal. Redis replicates asynchronously: a claim or an outcome
// the master acknowledged but had not yet sent to its replica is lost
// with it, and the retry runs the operation again, so such a run can end
// with duplicates, which it reports and fails on.
//
//	go run ./examples/chaos -ops 2000 -kills 5
//	go run ./examples/chaos -ops 2000 -kills 5 -database $IDEM_TEST_DATABASE -restart-postgres
//	go run ./examples/chaos -database $DSN -restart-cmd 'sudo systemctl restart postgresql'
//	go run ./examples/chaos -redis "$(scripts/redis-cluster.sh start | tail -n 1)" -kill-redis-master
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/internal/faultproxy"
)

type options struct {
	ops, kills, conc  int
	database          string
	restartPostgres   bool
	restartCmd        string
	redis             string
	killRedisMaster   bool
	redisScript       string
	seed              uint64
	runID             string
	drop, reset, fail float64
}

func main() {
	var o options
	flag.IntVar(&o.ops, "ops", 2000, "operations in the batch")
	flag.IntVar(&o.kills, "kills", 5, "times to kill the client with SIGKILL")
	flag.IntVar(&o.conc, "c", 8, "operations the client keeps in flight")
	flag.StringVar(&o.database, "database", "", "PostgreSQL DSN; empty keeps the service in memory")
	flag.BoolVar(&o.restartPostgres, "restart-postgres", false, "restart the PostgreSQL server -database names, once, mid-run")
	flag.StringVar(&o.restartCmd, "restart-cmd", "", "shell command that restarts the database (implies -restart-postgres)")
	flag.StringVar(&o.redis, "redis", "", "Redis address for the idempotency records (comma-separated: a cluster's seeds); the charges stay in memory")
	flag.BoolVar(&o.killRedisMaster, "kill-redis-master", false, "SIGKILL one master of the -redis cluster, once, mid-run, and heal the cluster after the run")
	flag.StringVar(&o.redisScript, "redis-script", "scripts/redis-cluster.sh", "the script that started the -redis cluster, for -kill-redis-master")
	flag.Uint64Var(&o.seed, "seed", 0, "seed for faults and kill times (0: from the clock)")
	flag.StringVar(&o.runID, "run-id", "", "the run's ID in its scope chaos-<seed>-<run ID> (default random); a scope that holds charges already is refused")
	flag.Float64Var(&o.drop, "drop", 0.10, "share of answers dropped after the service charged")
	flag.Float64Var(&o.reset, "reset", 0.05, "share of connections reset before forwarding")
	flag.Float64Var(&o.fail, "503", 0.05, "share of requests answered 503 by the proxy")
	child := flag.Bool("child", false, "run as the client process (used by the harness)")
	url := flag.String("url", "", "child: the proxy's URL")
	journal := flag.String("journal", "", "child: the journal file")
	historyFile := flag.String("history", "", "child: the history file it appends its final answers to")
	client := flag.String("client", "", "child: the client ID (idempotency scope)")
	flag.Parse()

	if *child {
		if err := runClient(*url, *journal, *client, *historyFile, o.ops, o.conc); err != nil {
			fmt.Fprintln(os.Stderr, "chaos client:", err)
			os.Exit(1)
		}
		return
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	o.restartPostgres = o.restartPostgres || o.restartCmd != ""
	if o.restartPostgres && o.database == "" {
		fail("-restart-postgres and -restart-cmd need -database")
	}
	if o.database != "" && o.redis != "" {
		fail("-database and -redis are exclusive")
	}
	if o.killRedisMaster && !strings.Contains(o.redis, ",") {
		fail("-kill-redis-master needs -redis with a cluster's seeds, comma-separated")
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
	rng := mrand.New(mrand.NewPCG(o.seed, 7))
	cfg := charges.Config{Delay: time.Millisecond, Lease: 3 * time.Second, Wait: time.Second}
	var (
		store string
		pool  *pgxpool.Pool
		rdb   redis.UniversalClient
		err   error
	)
	rlog := &redisLog{}
	if o.redis != "" {
		redis.SetLogger(rlog)
		store, rdb, err = withRedis(ctx, &cfg, o.redis)
	} else {
		store, pool, err = withStore(ctx, &cfg, o.database, o.conc)
	}
	if err != nil {
		return false, err
	}
	if pool != nil {
		defer pool.Close()
	}
	if rdb != nil {
		defer rdb.Close()
	}
	var rs restart
	if o.restartPostgres {
		if o.restartCmd != "" {
			rs = shellRestart(o.restartCmd)
		} else if rs, err = planRestart(ctx, pool, o.database, thisMachine()); err != nil {
			return false, fmt.Errorf("-restart-postgres: %v", err)
		}
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
	// The run's own scope: another run's charges, with this seed or
	// another, are never counted as this one's.
	if o.runID == "" {
		o.runID = rand.Text()[:8]
	}
	client := fmt.Sprintf("chaos-%d-%s", o.seed, o.runID)
	if cs, err := svc.Charges(ctx, client); err != nil {
		return false, err
	} else if len(cs) > 0 {
		return false, fmt.Errorf("the scope %s already holds %d charges this run did not write", client, len(cs))
	}
	fmt.Printf("chaos: %d operations, %d kills, store %s, seed %d, scope %s\n", o.ops, o.kills, store, o.seed, client)
	if o.restartPostgres {
		fmt.Printf("chaos: will restart %s: %s\n", rs.what, strings.Join(rs.argv, " "))
	}
	if o.killRedisMaster {
		fmt.Printf("chaos: will SIGKILL a Redis master with %s kill\n", o.redisScript)
	}

	self, err := os.Executable()
	if err != nil {
		return false, err
	}
	start := func() (*exec.Cmd, <-chan error, error) {
		cmd := exec.Command(self, "-child", "-url", proxy.URL(), "-journal", filepath.Join(dir, "client.journal"),
			"-client", client, "-ops", fmt.Sprint(o.ops), "-c", fmt.Sprint(o.conc),
			"-history", filepath.Join(dir, "history"))
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
	started := time.Now().UnixNano() // on the history's clock
	// disrupt is what happens to the store mid-run, if anything: a
	// PostgreSQL restart or a Redis master killed.
	var disrupt func() (string, error)
	switch {
	case o.restartPostgres:
		disrupt = func() (string, error) {
			away, err := rs.run(ctx, pool)
			return fmt.Sprintf("PostgreSQL restarted mid-run (back in %v)", away.Round(time.Millisecond)), err
		}
	case o.killRedisMaster:
		pick := mrand.New(mrand.NewPCG(o.seed, 13)) // not rng: the kill runs beside the loop that uses it
		disrupt = func() (string, error) { return killMaster(ctx, rdb, o.redisScript, o.redis, pick) }
		defer func() {
			if err := clusterScript(ctx, o.redisScript, o.redis, "heal"); err != nil {
				fmt.Println("chaos: healing the Redis Cluster:", err)
			}
		}()
	}
	var disrupted chan error
	// disruptDuring disrupts the store while child i runs, if child i is
	// the one in the middle of the run (with no kills, the last one).
	disruptDuring := func(i int) {
		if disrupt == nil || i != o.kills/2 {
			return
		}
		disrupted = make(chan error, 1)
		go func() {
			time.Sleep(100 * time.Millisecond)
			what, err := disrupt()
			if err == nil {
				fmt.Println("chaos:", what)
			}
			disrupted <- err
		}()
	}
	kills := 0
	for i := range o.kills {
		cmd, done, err := start()
		if err != nil {
			return false, err
		}
		disruptDuring(i)
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
	last, done, err := start()
	if err != nil {
		return false, err
	}
	disruptDuring(o.kills)
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
	if disrupted != nil {
		if err := <-disrupted; err != nil {
			return false, fmt.Errorf("disrupting the store mid-run: %v", err)
		}
	}

	cs, err := svc.Charges(ctx, client)
	if err != nil {
		return false, err
	}
	executed, duplicates, foreign := tally(cs, o.ops)
	// Every answer a child saw, and every charge, checked against the
	// specification of an idempotency record, not only counted.
	hist, err := checkHistory(filepath.Join(dir, "history"), cs, started, time.Now().UnixNano())
	if err != nil {
		return false, err
	}
	fmt.Println("chaos:", hist)
	lost := o.ops - executed
	st := proxy.Stats()
	if n := rlog.n.Load(); n > 0 {
		fmt.Printf("chaos: go-redis logged %d errors (dials to a dead master, say); not shown\n", n)
	}
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
	if foreign > 0 {
		fmt.Printf("chaos: the scope %s holds %d charges that are not this run's operations\n", client, foreign)
	}
	fmt.Printf("operations=%d executed=%d duplicates=%d lost=%d kills=%d attempts=%d replays=%d\n",
		o.ops, executed, duplicates, lost, kills, proxy.By(client), st.Replayed)
	return executed == o.ops && duplicates == 0 && lost == 0 && foreign == 0 && len(missing) == 0 && hist.OK(), nil
}

// tally sorts a run's charges: executed counts the batch's operations
// charged at least once, duplicates the extra charges of those, foreign
// every charge that is none of the batch's operations (op-0 to op-<ops-1>),
// which the run did not write.
func tally(cs []charges.Charge, ops int) (executed, duplicates, foreign int) {
	refs := make(map[string]int)
	for _, c := range cs {
		refs[c.Ref]++
	}
	for i := range ops {
		if n := refs[fmt.Sprintf("op-%d", i)]; n > 0 {
			executed++
			duplicates += n - 1
		}
	}
	return executed, duplicates, len(cs) - executed - duplicates
}

// withStore points cfg at the store -database names (PostgreSQL for a
// DSN, memory otherwise) and returns its name and the pool, nil in
// memory, for the caller to close.
func withStore(ctx context.Context, cfg *charges.Config, database string, conc int) (string, *pgxpool.Pool, error) {
	if database == "" {
		return "memory", nil, nil
	}
	pc, err := pgxpool.ParseConfig(database)
	if err != nil {
		return "", nil, err
	}
	// In transactional mode each of the conc requests in flight holds a
	// connection for its transaction while its claim, lease renewals and
	// release need others (see server/pgstore's Transactional mode);
	// the harness's own queries take one more.
	pc.MaxConns = int32(2*conc + 4)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return "", nil, err
	}
	cfg.Pool = pool
	return fmt.Sprintf("PostgreSQL, pool of %d", pc.MaxConns), pool, nil
}
