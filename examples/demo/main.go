// Command demo shows idem's promise in one run: the same batch of charges
// goes through a lossy network twice, once from a plain retrying client
// that sends no keys and once from idem. The plain client's retries charge
// customers twice; idem's do not.
//
//	go run ./examples/demo
//	go run ./examples/demo -n 500 -drop 0.2 -seed 7
//	go run ./examples/demo -database postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//	go run ./examples/demo -plot docs/demo.svg   # also draw the charges per customer
//
// Everything runs in this process, on loopback: the example charges service
// (in memory, or PostgreSQL with -database), a fault-injecting proxy in
// front of it, and the two clients. At the end the demo prints what the
// service's own metrics (package otelidem) counted: the idem client's
// requests by how the middleware answered them (the plain client sends no
// keys, which the middleware lets through uncounted).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/internal/faultproxy"
)

type result struct {
	name       string
	ops        int
	attempts   int64
	replays    int64
	failed     int64 // operations the client gave up on
	charges    int
	duplicates int   // charges beyond one per operation
	twice      int   // operations charged more than once
	missing    int   // operations answered 201 that have no charge
	perOp      []int // charges per operation (per customer), by operation
}

func main() {
	n := flag.Int("n", 300, "charges in the batch")
	conc := flag.Int("c", 8, "charges in flight at once")
	drop := flag.Float64("drop", 0.15, "share of answers dropped after the server charged")
	reset := flag.Float64("reset", 0.05, "share of connections reset before forwarding")
	unavailable := flag.Float64("503", 0.05, "share of requests answered 503 by the proxy")
	delay := flag.Duration("delay", 5*time.Millisecond, "most delay the proxy adds to a request")
	card := flag.Duration("card", 2*time.Millisecond, "the service's simulated card-network latency")
	seed := flag.Uint64("seed", 1, "seed for the proxy's faults")
	database := flag.String("database", "", "PostgreSQL DSN; empty keeps the service in memory")
	plotFile := flag.String("plot", "", "also draw the charges per customer of both clients to this SVG file")
	flag.Parse()

	ctx := context.Background()
	cfg := charges.Config{Delay: *card, Optional: true, Wait: 2 * time.Second}
	store := "in memory"
	if *database != "" {
		pool, err := pgxpool.New(ctx, *database)
		check(err)
		defer pool.Close()
		cfg.Pool, store = pool, "in PostgreSQL"
	}
	metrics, err := withMetrics(&cfg)
	check(err)
	svc, err := charges.New(ctx, cfg)
	check(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go http.Serve(ln, svc.Handler())
	proxy, err := faultproxy.Start(faultproxy.Config{
		Upstream: "http://" + ln.Addr().String(),
		Drop:     *drop, Reset: *reset, Unavailable: *unavailable, MaxDelay: *delay, Seed: *seed,
	})
	check(err)
	defer proxy.Close()

	fmt.Printf("idem demo: %d charges, %d at a time, through a lossy proxy to the charges service (%s).\n", *n, *conc, store)
	fmt.Printf("The proxy drops %.0f%% of answers after the service charged, resets %.0f%% of connections and answers %.0f%% with 503 (seed %d).\n\n",
		100**drop, 100**reset, 100**unavailable, *seed)

	run := fmt.Sprintf("%d", rand.Uint32())
	results := []result{
		plainRun(ctx, svc, proxy, *n, *conc, "plain-"+run),
		idemRun(ctx, svc, proxy, *n, *conc, "idem-"+run),
	}
	fmt.Printf("%-34s %10s %9s %8s %8s %8s %11s\n", "client", "operations", "attempts", "replays", "gave up", "charges", "duplicates")
	for _, r := range results {
		fmt.Printf("%-34s %10d %9d %8d %8d %8d %11d\n", r.name, r.ops, r.attempts, r.replays, r.failed, r.charges, r.duplicates)
	}
	fmt.Println()
	for _, r := range results {
		fmt.Printf("%-34s %s\n", r.name+":", verdict(r))
	}
	printServerCounts(ctx, metrics, proxy.Stats())
	if *plotFile != "" {
		settings := fmt.Sprintf("%d charges, %d at a time, service %s; the proxy drops %.0f%% of answers after the charge, resets %.0f%% of connections, answers %.0f%% with 503; seed %d.",
			*n, *conc, store, 100**drop, 100**reset, 100**unavailable, *seed)
		check(drawCharges(*plotFile, results, settings, commandLine()))
		fmt.Printf("\nChart: %s\n", *plotFile)
	}
	if idem := results[1]; idem.duplicates > 0 || idem.failed > 0 || idem.missing > 0 {
		os.Exit(1)
	}
}

func verdict(r result) string {
	switch {
	case r.missing > 0:
		return fmt.Sprintf("%d operations answered as done have no charge.", r.missing)
	case r.duplicates > 0:
		return fmt.Sprintf("%d customers paid more than once (%d extra charges): each retry after a lost answer charged again.", r.twice, r.duplicates)
	case r.failed > 0:
		return fmt.Sprintf("no duplicates, but %d operations have no answer yet; they are still pending.", r.failed)
	}
	return "every charge made exactly once; lost answers were replayed, not re-executed."
}

// body is operation i's charge. Amounts start at 1000, clear of the
// amount the example service declines (402).
func body(i int) []byte {
	return fmt.Appendf(nil, `{"amount":%d,"currency":"usd","ref":"op-%d"}`, 1000+i, i)
}

// batch runs send for operations 0..n-1, conc at a time.
func batch(n, conc int, send func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				send(i)
			}
		}()
	}
	wg.Wait()
}

// plainRun sends the batch with go-retryablehttp and no keys: it retries
// transport errors and 5xx, as it does out of the box.
func plainRun(ctx context.Context, svc *charges.Service, proxy *faultproxy.Proxy, n, conc int, client string) result {
	rc := &retryablehttp.Client{
		HTTPClient:   &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		RetryMax:     10,
		RetryWaitMin: 5 * time.Millisecond,
		RetryWaitMax: 100 * time.Millisecond,
		CheckRetry:   retryablehttp.DefaultRetryPolicy,
		Backoff:      retryablehttp.DefaultBackoff,
	}
	var failed atomic.Int64
	answered := make([]atomic.Bool, n)
	batch(n, conc, func(i int) {
		req, _ := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, proxy.URL()+"/charges", body(i))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(charges.ClientHeader, client)
		resp, err := rc.Do(req)
		if err != nil {
			failed.Add(1)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			failed.Add(1)
			return
		}
		answered[i].Store(true)
	})
	return tally(ctx, svc, proxy, "plain retries (go-retryablehttp)", client, answered, 0, failed.Load())
}

// idemRun sends the batch with idem: one key per charge, journaled.
func idemRun(ctx context.Context, svc *charges.Service, proxy *faultproxy.Proxy, n, conc int, client string) result {
	dir, err := os.MkdirTemp("", "idem-demo")
	check(err)
	defer os.RemoveAll(dir)
	j, err := idem.OpenJournal(filepath.Join(dir, "client.journal"), idem.JournalOptions{})
	check(err)
	defer j.Close()
	c, err := idem.New(idem.Options{Journal: j, MaxAttempts: 10, BaseDelay: 5 * time.Millisecond, MaxDelay: 100 * time.Millisecond})
	check(err)
	var replays, failed atomic.Int64
	answered := make([]atomic.Bool, n)
	batch(n, conc, func(i int) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, proxy.URL()+"/charges", bytes.NewReader(body(i)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(charges.ClientHeader, client)
		resp, err := c.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			failed.Add(1)
			return
		}
		answered[i].Store(true)
		if resp.Replayed {
			replays.Add(1)
		}
	})
	return tally(ctx, svc, proxy, "idem", client, answered, replays.Load(), failed.Load())
}

// tally counts, from the service's own records, what the batch did.
// answered[i] tells whether operation i was answered 201.
func tally(ctx context.Context, svc *charges.Service, proxy *faultproxy.Proxy, name, client string, answered []atomic.Bool, replays, failed int64) result {
	n := len(answered)
	cs, err := svc.Charges(ctx, client)
	check(err)
	refs := make(map[string]int)
	for _, c := range cs {
		refs[c.Ref]++
	}
	twice := 0
	for _, k := range refs {
		if k > 1 {
			twice++
		}
	}
	// An operation answered 201 whose charge is not in the records was
	// lost; one that gave up may or may not have been charged.
	missing := 0
	for i := range answered {
		if answered[i].Load() && refs[fmt.Sprintf("op-%d", i)] == 0 {
			missing++
		}
	}
	return result{
		name: name, ops: n, attempts: proxy.By(client), replays: replays, failed: failed,
		charges: len(cs), duplicates: len(cs) - len(refs), twice: twice, missing: missing,
		perOp: perOp(refs, n),
	}
}

// perOp is the number of charges of each operation 0..n-1.
func perOp(refs map[string]int, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = refs[fmt.Sprintf("op-%d", i)]
	}
	return out
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
