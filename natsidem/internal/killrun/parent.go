package main

// This file holds the parent: it sets the run up, publishes, starts and
// kills consumers, waits for the stream to drain, counts and cleans up.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemhq/idem/natsidem"
	"github.com/idemhq/idem/server/pgstore"
)

// Bounds of one run: every wait ends.
const (
	childLimit = time.Minute     // one consumer's life before the parent gives up on it
	drainLimit = 2 * time.Minute // the last consumer's time to drain the stream
	ackWait    = time.Second
)

// runParent runs the whole proof and returns the exit code.
func runParent(c config, n, kills int, expect string, seed uint64) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "killrun: "+format+"\n", args...)
		return 2
	}
	switch {
	case c.dsn == "":
		return fail("no database: set IDEM_TEST_DATABASE or -db")
	case kills < 10:
		return fail("-kills %d: at least 10", kills)
	case n < 1:
		return fail("-n %d: at least 1", n)
	case c.ackFirst && c.noIdem:
		return fail("-ack-first and -no-idem are two variants: choose one")
	case expect != "exact" && expect != "loss" && expect != "duplicates":
		return fail("-expect %q: exact, loss or duplicates", expect)
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, uint64(os.Getpid())))
	ctx := context.Background()

	if c.natsURL == "embedded" {
		url, shutdown, err := embedded()
		if err != nil {
			return fail("embedded NATS server: %v", err)
		}
		defer shutdown()
		c.natsURL = url
	}
	run := fmt.Sprintf("%d_%d", os.Getpid(), rng.Uint32())
	c.stream = "KILLRUN_" + run
	c.effects = "killrun_effects_" + run
	c.keys = "killrun_keys_" + run

	nc, err := nats.Connect(c.natsURL)
	if err != nil {
		return fail("connect to NATS at %s: %v", c.natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fail("jetstream: %v", err)
	}
	subject := "killrun." + run
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: c.stream, Subjects: []string{subject + ".>"}}); err != nil {
		return fail("create stream: %v", err)
	}
	defer js.DeleteStream(context.Background(), c.stream)
	cons, err := js.CreateOrUpdateConsumer(ctx, c.stream, jetstream.ConsumerConfig{
		Durable: consumerName, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: 32,
	})
	if err != nil {
		return fail("create consumer: %v", err)
	}

	pool, err := pgxpool.New(ctx, c.dsn)
	if err != nil {
		return fail("database: %v", err)
	}
	defer pool.Close()
	effects := pgx.Identifier{c.effects}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE TABLE "+effects+" (msg_id text NOT NULL, delivered bigint NOT NULL, pid int NOT NULL)"); err != nil {
		return fail("create effects table: %v", err)
	}
	defer pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+effects)
	store, err := pgstore.New(pool, pgstore.Options{Table: c.keys, Transactional: true})
	if err != nil {
		return fail("pgstore: %v", err)
	}
	defer store.Close()
	defer pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{c.keys}.Sanitize())
	if err := store.Migrate(ctx); err != nil {
		return fail("migrate: %v", err)
	}

	for i := range n {
		id := fmt.Sprintf("m-%06d", i)
		if _, err := natsidem.Publish(ctx, js, subject+".order", id, fmt.Appendf(nil, `{"order":%d}`, i), natsidem.PublishOptions{}); err != nil {
			return fail("publish %s: %v", id, err)
		}
	}
	fmt.Fprintf(os.Stderr, "killrun: variant=%s seed=%d stream=%s nats=%s: %d messages published\n", c.variant(), seed, c.stream, c.natsURL, n)

	killed := 0
	for _, k := range planKills(rng, kills) {
		ok, err := runKilled(c, k)
		if err != nil {
			return fail("consumer: %v", err)
		}
		if ok {
			killed++
		}
	}
	if err := drain(ctx, c, cons); err != nil {
		return fail("%v", err)
	}

	var total, distinct int
	if err := pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT msg_id) FROM "+effects).Scan(&total, &distinct); err != nil {
		return fail("count effects: %v", err)
	}
	dups, lost := total-distinct, n-distinct
	fmt.Printf("messages=%d effects=%d duplicates=%d lost=%d kills=%d\n", n, total, dups, lost, killed)

	var ok bool
	switch expect {
	case "exact":
		ok = dups == 0 && lost == 0 && total == n
	case "loss":
		ok = lost > 0
	case "duplicates":
		ok = dups > 0
	}
	if killed < 10 {
		fmt.Fprintf(os.Stderr, "killrun: only %d kills landed\n", killed)
		ok = false
	}
	if !ok {
		fmt.Fprintf(os.Stderr, "killrun: FAIL: expected %s (variant %s)\n", expect, c.variant())
		return 1
	}
	fmt.Fprintf(os.Stderr, "killrun: as expected (%s)\n", expect)
	return 0
}

// kill is one planned kill: by the parent after messages done and a
// delay, or by the consumer itself at a stage of its after-th message.
type kill struct {
	stage string // "": by the parent
	after int
	delay time.Duration
}

// planKills returns n kills in a random order, half of them at stages:
// every stage at least once (when there are enough), then random ones.
func planKills(rng *rand.Rand, n int) []kill {
	var ks []kill
	for i := range n {
		k := kill{after: 1 + rng.IntN(30)}
		if i%2 == 0 {
			k.delay = time.Duration(rng.IntN(3000)) * time.Microsecond
		} else if j := i / 2; j < len(stages) {
			k.stage = stages[j]
		} else {
			k.stage = stages[rng.IntN(len(stages))]
		}
		ks = append(ks, k)
	}
	rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	return ks
}

// consumer starts a consumer process with extra flags; its "done" lines
// arrive on the returned channel, closed when its output ends.
func consumer(c config, extra ...string) (*exec.Cmd, <-chan string, error) {
	args := []string{"-child", "-nats", c.natsURL, "-db", c.dsn, "-stream", c.stream, "-effects", c.effects, "-keys", c.keys}
	if c.ackFirst {
		args = append(args, "-ack-first")
	}
	if c.noIdem {
		args = append(args, "-no-idem")
	}
	cmd := exec.Command(os.Args[0], append(args, extra...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines, nil
}

// runKilled runs one consumer until k kills it, and reports whether it
// died of SIGKILL.
func runKilled(c config, k kill) (bool, error) {
	var extra []string
	if k.stage != "" {
		extra = []string{"-kill-stage", k.stage, "-kill-after", strconv.Itoa(k.after)}
	}
	cmd, lines, err := consumer(c, extra...)
	if err != nil {
		return false, err
	}
	limit := time.NewTimer(childLimit)
	defer limit.Stop()
	done := 0
	for waiting := true; waiting; {
		select {
		case _, open := <-lines:
			if !open {
				waiting = false // the consumer died (its own kill) or exited
				break
			}
			done++
			if k.stage == "" && done == k.after {
				time.Sleep(k.delay) // a random point inside the next message
				cmd.Process.Kill()
			}
		case <-limit.C:
			cmd.Process.Kill()
			cmd.Wait()
			return false, fmt.Errorf("a consumer ran %s without its kill (%d messages done): is the stream empty already? raise -n", childLimit, done)
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true, nil
		}
	}
	return false, fmt.Errorf("the consumer ended without its kill: %v", err)
}

// drain runs a last consumer, unkilled, until the consumer has nothing
// pending or unacknowledged, then stops it.
func drain(ctx context.Context, c config, cons jetstream.Consumer) error {
	cmd, lines, err := consumer(c)
	if err != nil {
		return err
	}
	go func() {
		for range lines {
		}
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	deadline := time.Now().Add(drainLimit)
	for time.Now().Before(deadline) {
		info, err := cons.Info(ctx)
		if err != nil {
			return fmt.Errorf("consumer info: %w", err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the stream did not drain within %s", drainLimit)
}

// embedded runs a JetStream server in this process on a free loopback
// port, storing in a temporary directory, and returns its URL.
func embedded() (string, func(), error) {
	dir, err := os.MkdirTemp("", "killrun-js-")
	if err != nil {
		return "", nil, err
	}
	s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		os.RemoveAll(dir)
		return "", nil, errors.New("not ready")
	}
	return s.ClientURL(), func() { s.Shutdown(); s.WaitForShutdown(); os.RemoveAll(dir) }, nil
}
