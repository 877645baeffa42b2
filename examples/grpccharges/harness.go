package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/pgstore"
)

type config struct {
	ops, kills       int
	seed             int64
	database         string
	naive            bool
	expectDuplicates bool
}

// run serves the Charges service, runs client processes until one
// finishes, killing them at the planned executions, and checks the
// ledger.
func run(ctx context.Context, cfg config) error {
	if cfg.ops < 1 || cfg.kills < 0 {
		return errors.New("-ops must be positive and -kills not negative")
	}
	store, led, cleanup, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	defer cleanup()

	// The kills: cfg.kills executions among the first, chosen by the seed,
	// each before or after its charge (the naive client only after).
	rng := mrand.New(mrand.NewPCG(uint64(cfg.seed), 0))
	plan := map[int64]bool{} // execution -> after the charge
	for len(plan) < cfg.kills {
		n := 1 + rng.Int64N(int64(cfg.ops))
		if _, ok := plan[n]; !ok {
			plan[n] = cfg.naive || rng.IntN(2) == 1
		}
	}
	var (
		mu     sync.Mutex
		pid    int
		killed atomic.Int64
	)
	svc := &service{ledger: led, kill: func(n int64, after bool) {
		if a, ok := plan[n]; !ok || a != after {
			return
		}
		mu.Lock()
		p := pid
		mu.Unlock()
		if p != 0 && syscall.Kill(p, syscall.SIGKILL) == nil {
			killed.Add(1)
		}
	}}
	var chain []grpc.UnaryServerInterceptor
	if !cfg.naive {
		chain = append(chain, grpcidem.UnaryServerInterceptor(store, grpcidem.ServerOptions{SingleTenant: true}))
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(chain...))
	srv.RegisterService(&serviceDesc, svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go srv.Serve(ln)
	defer srv.Stop()

	dir, err := os.MkdirTemp("", "grpccharges")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kills := 0
	for runs := 0; ; runs++ {
		if runs > cfg.kills+1 {
			return fmt.Errorf("no client process finished in %d runs", runs)
		}
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), "GRPCCHARGES_ROLE=client", "GRPCCHARGES_ADDR="+ln.Addr().String(),
			"GRPCCHARGES_DIR="+dir, "GRPCCHARGES_OPS="+strconv.Itoa(cfg.ops), "GRPCCHARGES_NAIVE="+strconv.FormatBool(cfg.naive))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return err
		}
		mu.Lock()
		pid = cmd.Process.Pid
		mu.Unlock()
		err := cmd.Wait()
		mu.Lock()
		pid = 0
		mu.Unlock()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			kills++
			continue
		}
		if err != nil {
			return fmt.Errorf("client process: %v\n%s", err, out.String())
		}
		break
	}
	counts, err := led.counts(ctx)
	if err != nil {
		return err
	}
	charges, duplicates, lost := 0, 0, 0
	for op := range cfg.ops {
		n := counts[op]
		charges += n
		if n == 0 {
			lost++
		}
		if n > 1 {
			duplicates += n - 1
		}
	}
	resumed, _ := os.ReadFile(filepath.Join(dir, "resumed"))
	fmt.Printf("kills=%d resumed=%d\n", kills, sumLines(string(resumed)))
	fmt.Printf("operations=%d charges=%d duplicates=%d lost=%d\n", cfg.ops, charges, duplicates, lost)
	switch {
	case kills != cfg.kills:
		return fmt.Errorf("%d kills planned, %d made: the run proves less than it claims", cfg.kills, kills)
	case lost > 0:
		return fmt.Errorf("%d operations were never charged", lost)
	case cfg.expectDuplicates && duplicates == 0:
		return errors.New("no duplicates: the naive run should have shown them")
	case !cfg.expectDuplicates && duplicates > 0:
		return fmt.Errorf("%d duplicate charges", duplicates)
	}
	return nil
}

func sumLines(s string) int {
	n := 0
	for _, l := range strings.Fields(s) {
		v, _ := strconv.Atoi(l)
		n += v
	}
	return n
}

// open returns the service's store and ledger: memstore and a ledger in
// memory, or pgstore in transactional mode on tables of their own and the
// charges as rows in the record's transaction.
func open(ctx context.Context, cfg config) (server.Store, ledger, func(), error) {
	if cfg.database == "" {
		return memstore.New(memstore.Options{}), &memLedger{}, func() {}, nil
	}
	pool, err := pgxpool.New(ctx, cfg.database)
	if err != nil {
		return nil, nil, nil, err
	}
	suffix, err := rand.Int(rand.Reader, big.NewInt(1<<40))
	if err != nil {
		return nil, nil, nil, err
	}
	table := fmt.Sprintf("grpccharges_%d", suffix)
	st, err := pgstore.New(pool, pgstore.Options{Table: table + "_keys", Transactional: true})
	if err == nil {
		err = st.Migrate(ctx)
	}
	if err == nil {
		_, err = pool.Exec(ctx, "CREATE TABLE "+table+" (operation int NOT NULL)")
	}
	cleanup := func() {
		pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+table)
		pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+table+"_keys")
		st.Close()
		pool.Close()
	}
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	var l ledger = &pgLedger{pool: pool, table: table}
	if cfg.naive {
		l = &memLedger{} // no store, so no transaction to write the row in
	}
	return st, l, cleanup, nil
}
