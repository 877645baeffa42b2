package main

// This file holds the harness: the processes it starts and kills, the
// proxies on the two hops, and the count at the end.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/examples/internal/linear"
	"github.com/idemhq/idem/internal/faultproxy"
)

// result is what a run found.
type result struct {
	counts
	unmatched                         int // A's orders whose charge B has no row for
	clientKills, aKills               int
	killsInWindow, opsInWindow        int
	missing                           []string // faults the run was asked for and did not meet
	aResumed, aFromJournal, aAnswered int
	history                           linear.Result // the clients' answers and B's charges, checked
}

// pass reports whether the run proved what it was asked to.
func (r result) pass(o options) bool {
	if o.expectDuplicates {
		// A history that was checked must have caught the duplicates.
		caught := r.history.Keys == 0 || !r.history.OK()
		return r.duplicates > 0 && r.lost == 0 && r.foreign == 0 && caught
	}
	return r.duplicates == 0 && r.lost == 0 && r.foreign == 0 && r.unmatched == 0 && r.history.OK() &&
		r.aRows == o.ops && r.bCharges == o.ops && len(r.missing) == 0
}

// run is one harness run's state.
type run struct {
	o        options
	runID    string
	tables   tables
	self     string
	dir      string
	deadline time.Time
	out      *lockedWriter

	mu       sync.Mutex
	children map[*child]bool
	aN       int // service A processes started
	res      result
}

// child is a running child process.
type child struct {
	name   string
	app    string // application_name of its database sessions
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited and its output is read
	err    error         // cmd.Wait's, once exited is closed
}

// done reports whether c has exited, and with what.
func (c *child) done() (bool, error) {
	select {
	case <-c.exited:
		return true, c.err
	default:
		return false, nil
	}
}

// signalled reports whether c ended by a signal (rather than exiting).
func (c *child) signalled() bool {
	return c.cmd.ProcessState != nil && c.cmd.ProcessState.ExitCode() == -1
}

// aWatch follows one process of service A through the lines it prints.
type aWatch struct {
	mu       sync.Mutex
	open     map[int]bool  // operations B answered that A has not yet said are committed
	answered chan struct{} // a B answer was seen (capacity 1)
	ready    chan struct{}
	once     sync.Once
}

func harness(o options, stdout io.Writer) (result, error) {
	began := time.Now()
	h := &run{
		o:        o,
		runID:    strings.ToLower(rand.Text()[:8]),
		deadline: began.Add(o.timeout),
		out:      &lockedWriter{w: stdout},
		children: make(map[*child]bool),
	}
	h.tables = newTables(h.runID)
	var err error
	if h.self, err = os.Executable(); err != nil {
		return result{}, err
	}
	ctx := context.Background()
	pc, err := pgxpool.ParseConfig(o.database)
	if err != nil {
		return result{}, err
	}
	pc.MaxConns = 4
	pc.ConnConfig.RuntimeParams["application_name"] = h.appPrefix() + "harness"
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return result{}, err
	}
	defer pool.Close()
	if err := h.createTables(ctx, pool); err != nil {
		return result{}, err
	}
	cleanup := sync.OnceFunc(func() {
		h.killAll()
		if o.keep {
			fmt.Fprintf(h.out, "twohop: kept the tables %s\n", strings.Join(h.tables.all(), ", "))
			return
		}
		h.dropTables(pool)
	})
	defer cleanup()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer func() {
		signal.Stop(sigs)
		close(sigs) // no signal comes after Stop: this ends the goroutine below
	}()
	go func() {
		if _, ok := <-sigs; ok {
			fmt.Fprintln(os.Stderr, "twohop: interrupted; stopping the children")
			cleanup()
			os.Exit(130)
		}
	}()
	if h.dir, err = os.MkdirTemp("", "idem-twohop"); err != nil {
		return result{}, err
	}
	defer os.RemoveAll(h.dir)

	// The harness holds both services' sockets: a restarted A serves the
	// same address, and requests that arrive while it is down wait in the
	// socket's backlog for the next one.
	lnA, fA, err := listen()
	if err != nil {
		return result{}, err
	}
	defer lnA.Close()
	defer fA.Close()
	lnB, fB, err := listen()
	if err != nil {
		return result{}, err
	}
	defer lnB.Close()
	defer fB.Close()
	proxyAB, err := faultproxy.Start(faultproxy.Config{
		Upstream: "http://" + lnB.Addr().String(),
		Drop:     o.drop, Reset: o.reset, Unavailable: o.fail, MaxDelay: 2 * time.Millisecond, Seed: o.seed ^ 0xab,
	})
	if err != nil {
		return result{}, err
	}
	defer proxyAB.Close()
	proxyCA, err := faultproxy.Start(faultproxy.Config{
		Upstream: "http://" + lnA.Addr().String(),
		CountBy:  processHeader,
		Drop:     o.drop, Reset: o.reset, Unavailable: o.fail, MaxDelay: 2 * time.Millisecond, Seed: o.seed,
	})
	if err != nil {
		return result{}, err
	}
	defer proxyCA.Close()

	clientKills, aKills := (o.kills+1)/2, o.kills/2
	mode := "derived keys to B"
	if o.naive {
		mode = "naive: a fresh key to B on every run"
	}
	fmt.Fprintf(h.out, "twohop: %d operations, %d kills (%d of the client, %d of service A), %s, seed %d, run %s (tables twohop_%[7]s_*)\n",
		o.ops, o.kills, clientKills, aKills, mode, o.seed, h.runID)

	base := childConfig{RunID: h.runID, Database: o.database, Tables: h.tables, Ops: o.ops, Conc: o.conc, Pause: o.pause, Naive: o.naive}
	bcfg := base
	bcfg.AppName = h.appPrefix() + "b"
	bReady := make(chan struct{})
	var bOnce sync.Once
	b, err := h.start("provider B", "b", bcfg, fB, func(line string) {
		if line == lineBReady {
			bOnce.Do(func() { close(bReady) })
			return
		}
		fmt.Fprintln(h.out, line)
	})
	if err != nil {
		return result{}, err
	}
	if err := h.waitReady(b, bReady); err != nil {
		return result{}, err
	}
	startA := func() (*child, *aWatch, error) {
		h.mu.Lock()
		h.aN++
		n := h.aN
		h.mu.Unlock()
		cfg := base
		cfg.AppName = fmt.Sprintf("%sa-%d", h.appPrefix(), n)
		cfg.URL = proxyAB.URL()
		cfg.Journal = filepath.Join(h.dir, "a.journal")
		w := &aWatch{open: make(map[int]bool), answered: make(chan struct{}, 1), ready: make(chan struct{})}
		a, err := h.start(fmt.Sprintf("service A (process %d)", n), "a", cfg, fA, func(line string) { h.onALine(w, line) })
		if err != nil {
			return nil, nil, err
		}
		return a, w, h.waitReady(a, w.ready)
	}
	clients := 0
	startClient := func() (*child, error) {
		clients++
		cfg := base
		cfg.Process = clients
		cfg.AppName = h.appPrefix() + "client"
		cfg.URL = proxyCA.URL()
		cfg.Journal = filepath.Join(h.dir, "client.journal")
		cfg.History = h.historyFile()
		return h.start("client", "client", cfg, nil, func(line string) { fmt.Fprintln(h.out, line) })
	}
	a, aw, err := startA()
	if err != nil {
		return result{}, err
	}
	client, err := startClient()
	if err != nil {
		return result{}, err
	}

	// alive fails when a child the harness did not kill has exited, but
	// for the client finishing its batch, which it reports.
	alive := func() (clientDone bool, err error) {
		for _, c := range []*child{b, a} {
			if over, err := c.done(); over {
				return false, fmt.Errorf("%s exited: %v", c.name, err)
			}
		}
		if over, err := client.done(); over {
			if err != nil {
				return true, fmt.Errorf("the client failed: %v", err)
			}
			return true, nil
		}
		return false, nil
	}
	// until waits for cond, bounded by the run's deadline.
	until := func(what string, cond func() bool) (clientDone bool, err error) {
		for !cond() {
			if clientDone, err := alive(); err != nil || clientDone {
				return clientDone, err
			}
			if time.Now().After(h.deadline) {
				return false, fmt.Errorf("deadline passed waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
		return false, nil
	}

	rng := mrand.New(mrand.NewPCG(o.seed, 7))
	plan := make([]string, 0, o.kills)
	for range clientKills {
		plan = append(plan, "client")
	}
	for range aKills {
		plan = append(plan, "a")
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	// Kills are spread over the batch by the requests the client has sent
	// A, so that each lands mid-run whatever the machine's speed: kill k
	// at a random point of the k-th of kills+1 slices of the first ops
	// requests (a run sends more, as retries).
	gap := max(1, o.ops/(o.kills+1))
plan:
	for k, who := range plan {
		target := max(proxyCA.Stats().Requests+1, int64(k*gap+1+rng.IntN(gap)))
		// and never before the client process running has sent A a
		// request.
		clientDone, err := until("the next kill's point", func() bool {
			return proxyCA.Stats().Requests >= target && proxyCA.By(strconv.Itoa(clients)) > 0
		})
		if err != nil {
			return result{}, err
		}
		if clientDone {
			h.res.missing = append(h.res.missing, fmt.Sprintf("the client finished before kill %d of %d (more -ops, or fewer -kills)", k+1, o.kills))
			break plan
		}
		switch who {
		case "client":
			if err := h.kill(client); err != nil {
				return result{}, err
			}
			if !client.signalled() {
				h.res.missing = append(h.res.missing, fmt.Sprintf("the client finished before kill %d of %d", k+1, o.kills))
				break plan
			}
			h.res.clientKills++
			fmt.Fprintf(h.out, "twohop: kill %d: SIGKILLed the client after %d requests to A\n", k+1, proxyCA.Stats().Requests)
			if client, err = startClient(); err != nil {
				return result{}, err
			}
		case "a":
			// Every other kill of A waits for B to answer one of A's
			// operations and lands in A's pause before its commit.
			how := "at a random point"
			if h.res.aKills%2 == 0 {
				how = "just after B answered"
				select {
				case <-aw.answered: // a stale one
				default:
				}
				clientDone, err := until("B to answer A", func() bool {
					select {
					case <-aw.answered:
						return true
					default:
						return false
					}
				})
				if err != nil {
					return result{}, err
				}
				if clientDone {
					h.res.missing = append(h.res.missing, fmt.Sprintf("the client finished before kill %d of %d", k+1, o.kills))
					break plan
				}
			}
			if err := h.kill(a); err != nil {
				return result{}, err
			}
			h.res.aKills++
			uncommitted, err := h.inWindow(ctx, pool, a, aw)
			if err != nil {
				return result{}, err
			}
			if len(uncommitted) > 0 {
				h.res.killsInWindow++
				h.res.opsInWindow += len(uncommitted)
			}
			fmt.Fprintf(h.out, "twohop: kill %d: SIGKILLed service A %s: %d operations B had answered were not committed at A %v\n",
				k+1, how, len(uncommitted), uncommitted)
			if a, aw, err = startA(); err != nil {
				return result{}, err
			}
		}
	}
	if _, err := until("the client to finish", func() bool { over, _ := client.done(); return over }); err != nil {
		return result{}, err
	}
	if _, err := client.done(); err != nil {
		return result{}, fmt.Errorf("the last client failed: %v", err)
	}

	// Stop the services, and wait until their sessions are gone, so that
	// nothing commits after the count.
	for _, c := range []*child{a, b} {
		if err := h.stop(c); err != nil {
			return result{}, err
		}
	}
	if err := h.sessionsGone(ctx, pool, h.appPrefix()+"a-%", h.appPrefix()+"b"); err != nil {
		return result{}, err
	}
	h.mu.Lock()
	r := h.res
	h.mu.Unlock()
	if r.counts, r.unmatched, err = h.count(ctx, pool); err != nil {
		return result{}, err
	}
	if r.history, err = h.checkHistory(ctx, pool, began); err != nil {
		return result{}, err
	}
	fmt.Fprintln(h.out, "twohop:", r.history)
	for _, hop := range []struct {
		name   string
		server string
		p      *faultproxy.Proxy
	}{{"client->A", "A", proxyCA}, {"A->B", "B", proxyAB}} {
		st := hop.p.Stats()
		fmt.Fprintf(h.out, "twohop: hop %s: %d requests: %d reset, %d answered 503, %d answers dropped after %s acted, %d replays reached the caller\n",
			hop.name, st.Requests, st.Resets, st.Unavailable, st.Dropped, hop.server, st.Replayed)
		if o.drop > 0 && (st.Dropped == 0 || st.Replayed == 0) {
			r.missing = append(r.missing, fmt.Sprintf("hop %s: %d answers dropped and %d replayed: no lost answer was put to the test", hop.name, st.Dropped, st.Replayed))
		}
	}
	fmt.Fprintf(h.out, "twohop: service A ran %d processes; its handler got %d answers from B (%d from its journal); restarts resumed %d pending calls to B\n",
		h.aN, r.aAnswered, r.aFromJournal, r.aResumed)
	if r.aKills > 0 && r.killsInWindow == 0 {
		r.missing = append(r.missing, "no kill of A landed after B charged and before A committed")
	}
	if r.clientKills+r.aKills < o.kills {
		r.missing = append(r.missing, fmt.Sprintf("only %d of %d kills landed mid-run", r.clientKills+r.aKills, o.kills))
	}
	for _, m := range r.missing {
		fmt.Fprintln(h.out, "twohop:", m)
	}
	if r.foreign > 0 {
		fmt.Fprintf(h.out, "twohop: %d rows name no operation of this run\n", r.foreign)
	}
	if r.unmatched > 0 {
		fmt.Fprintf(h.out, "twohop: %d of A's orders name a charge B has no row for\n", r.unmatched)
	}
	fmt.Fprintf(h.out, "twohop: %d operations in the kill window in all; took %v\n", r.opsInWindow, time.Since(began).Round(10*time.Millisecond))
	fmt.Fprintf(h.out, "client_kills=%d a_kills=%d kills_in_window=%d\n", r.clientKills, r.aKills, r.killsInWindow)
	fmt.Fprintf(h.out, "operations=%d a_rows=%d provider_charges=%d duplicates=%d lost=%d kills=%d\n",
		o.ops, r.aRows, r.bCharges, r.duplicates, r.lost, r.clientKills+r.aKills)
	return r, nil
}

// appPrefix begins the application_name of every database session of the
// run.
func (h *run) appPrefix() string { return "twohop-" + h.runID + "-" }

func (h *run) onALine(w *aWatch, line string) {
	var op int
	var journal bool
	var resumed, pending int
	switch {
	case line == lineReady:
		w.once.Do(func() { close(w.ready) })
	case strings.HasPrefix(line, lineAnswered):
		if _, err := fmt.Sscanf(line[len(lineAnswered):], "%d journal=%t", &op, &journal); err != nil {
			fmt.Fprintln(h.out, line)
			return
		}
		w.mu.Lock()
		w.open[op] = true
		w.mu.Unlock()
		select {
		case w.answered <- struct{}{}:
		default:
		}
		h.mu.Lock()
		h.res.aAnswered++
		if journal {
			h.res.aFromJournal++
		}
		h.mu.Unlock()
	case strings.HasPrefix(line, lineCommitted):
		if _, err := fmt.Sscanf(line[len(lineCommitted):], "%d", &op); err != nil {
			fmt.Fprintln(h.out, line)
			return
		}
		w.mu.Lock()
		delete(w.open, op)
		w.mu.Unlock()
	case strings.HasPrefix(line, lineResumed):
		if _, err := fmt.Sscanf(line[len(lineResumed):], "%d pending calls to B (%d still pending)", &resumed, &pending); err == nil {
			h.mu.Lock()
			h.res.aResumed += resumed
			h.mu.Unlock()
			if resumed > 0 {
				fmt.Fprintf(h.out, "twohop: the new service A resumed %d pending calls to B (%d still pending)\n", resumed, pending)
			}
			return
		}
		fmt.Fprintln(h.out, line)
	default:
		fmt.Fprintln(h.out, line)
	}
}

// inWindow returns, for a killed process of A, the operations B had
// answered it that had no order row once the process's database sessions
// were gone: the kill landed after B charged and before A committed.
func (h *run) inWindow(ctx context.Context, pool *pgxpool.Pool, a *child, w *aWatch) ([]int, error) {
	<-a.exited // its output is read to the end
	if err := h.sessionsGone(ctx, pool, a.app); err != nil {
		return nil, err
	}
	w.mu.Lock()
	open := make([]int, 0, len(w.open))
	for op := range w.open {
		open = append(open, op)
	}
	w.mu.Unlock()
	if len(open) == 0 {
		return nil, nil
	}
	rows, err := pool.Query(ctx, fmt.Sprintf(`SELECT op FROM unnest($1::int[]) AS o(op)
		WHERE NOT EXISTS (SELECT 1 FROM %s WHERE %[1]s.op = o.op) ORDER BY op`, h.tables.Orders), open)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var missing []int
	for rows.Next() {
		var op int
		if err := rows.Scan(&op); err != nil {
			return nil, err
		}
		missing = append(missing, op)
	}
	return missing, rows.Err()
}

// sessionsGone waits, up to 15 s, until no database session carries one
// of the application names (LIKE patterns): a killed process's open
// transactions are rolled back, and nothing of it can commit after.
func (h *run) sessionsGone(ctx context.Context, pool *pgxpool.Pool, names ...string) error {
	end := time.Now().Add(15 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE ANY($1)`, names).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("%d database sessions of %v outlived their process by 15 s", n, names)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *run) createTables(ctx context.Context, pool *pgxpool.Pool) error {
	// No unique constraint on op: a duplicate must show as a second row,
	// not as an error.
	for _, q := range []string{
		`CREATE TABLE ` + h.tables.Orders + ` (id bigserial PRIMARY KEY, op int NOT NULL, key text NOT NULL, charge_id text)`,
		`CREATE TABLE ` + h.tables.Charges + ` (id text PRIMARY KEY, op int NOT NULL, key text NOT NULL, amount bigint NOT NULL)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("creating the run's tables: %w", err)
		}
	}
	return nil
}

func (h *run) dropTables(pool *pgxpool.Pool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, t := range h.tables.all() {
		if _, err := pool.Exec(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
			fmt.Fprintf(os.Stderr, "twohop: dropping %s: %v\n", t, err)
		}
	}
}

// count reads the rows of A's orders and B's charges per operation.
func (h *run) count(ctx context.Context, pool *pgxpool.Pool) (counts, int, error) {
	per := func(table string) (map[int]int, error) {
		rows, err := pool.Query(ctx, "SELECT op, count(*) FROM "+table+" GROUP BY op")
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		m := make(map[int]int)
		for rows.Next() {
			var op, n int
			if err := rows.Scan(&op, &n); err != nil {
				return nil, err
			}
			m[op] = n
		}
		return m, rows.Err()
	}
	a, err := per(h.tables.Orders)
	if err != nil {
		return counts{}, 0, err
	}
	b, err := per(h.tables.Charges)
	if err != nil {
		return counts{}, 0, err
	}
	var unmatched int
	err = pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s o WHERE NOT EXISTS (SELECT 1 FROM %s c WHERE c.id = o.charge_id AND c.op = o.op)`,
		h.tables.Orders, h.tables.Charges)).Scan(&unmatched)
	return tally(a, b, h.o.ops), unmatched, err
}

// counts is what the databases hold for a run's operations 0 to ops-1.
type counts struct {
	aRows, bCharges int // rows of operations of the run
	duplicates      int // rows beyond the first, at A and at B
	lost            int // operations without an A row or without a B charge
	foreign         int // rows that name no operation of the run
}

// tally counts a run's rows, given A's and B's rows per operation.
func tally(a, b map[int]int, ops int) counts {
	var c counts
	for i := range ops {
		c.aRows += a[i]
		c.bCharges += b[i]
		c.duplicates += max(0, a[i]-1) + max(0, b[i]-1)
		if a[i] == 0 || b[i] == 0 {
			c.lost++
		}
	}
	for _, m := range []map[int]int{a, b} {
		for op, n := range m {
			if op < 0 || op >= ops {
				c.foreign += n
			}
		}
	}
	return c
}

// listen opens a loopback socket on a free port, and a copy of it to pass
// to a child.
func listen() (*net.TCPListener, *os.File, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	tl := ln.(*net.TCPListener)
	f, err := tl.File()
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return tl, f, nil
}

// start starts a child in role with cfg, ln as its file descriptor 3 if
// not nil, and each line of its standard output given to onLine.
func (h *run) start(name, role string, cfg childConfig, ln *os.File, onLine func(string)) (*child, error) {
	cfg.Parent = os.Getpid()
	cfg.Lifetime = time.Until(h.deadline) + time.Minute
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(h.self)
	cmd.Env = append(os.Environ(), roleEnv+"="+role, configEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	if ln != nil {
		cmd.ExtraFiles = []*os.File{ln}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{name: name, app: cfg.AppName, cmd: cmd, exited: make(chan struct{})}
	h.mu.Lock()
	h.children[c] = true
	h.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			onLine(sc.Text())
		}
		io.Copy(io.Discard, out)
		c.err = cmd.Wait()
		h.mu.Lock()
		delete(h.children, c)
		h.mu.Unlock()
		close(c.exited)
	}()
	return c, nil
}

// waitReady waits, up to a minute, for a service to say it serves.
func (h *run) waitReady(c *child, ready <-chan struct{}) error {
	select {
	case <-ready:
		return nil
	case <-c.exited:
		return fmt.Errorf("%s exited before it was ready: %v", c.name, c.err)
	case <-time.After(time.Minute):
		h.kill(c)
		return fmt.Errorf("%s was not ready within a minute", c.name)
	}
}

// kill SIGKILLs c and waits, up to 10 s, for it to be gone.
func (h *run) kill(c *child) error {
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s: %v", c.name, err)
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s outlived SIGKILL by 10 s", c.name)
	}
}

// stop ends a service at the end of the run: SIGTERM, then SIGKILL after
// 5 s.
func (h *run) stop(c *child) error {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return nil
	case <-time.After(5 * time.Second):
		return h.kill(c)
	}
}

// killAll kills every child still running.
func (h *run) killAll() {
	h.mu.Lock()
	cs := make([]*child, 0, len(h.children))
	for c := range h.children {
		cs = append(cs, c)
	}
	h.mu.Unlock()
	for _, c := range cs {
		h.kill(c)
	}
}

// lockedWriter serialises the lines the children's readers print.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
