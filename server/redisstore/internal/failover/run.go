package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/internal/faultproxy"
	"github.com/idemhq/idem/internal/history"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// result is what one run measured.
type result struct {
	seed                 uint64
	wait                 int
	ops                  int
	executed, duplicates int
	lost, forgotten      int
	attempts, replays    int64
	statuses             map[int]int64
	dropped              int64
	killed               string
	failover, healed     time.Duration
	logged               map[string]int64
	elapsed              time.Duration
	// history: the keys whose answers and runs are not linearizable to
	// an idempotency record, and the summary with a shortest failing
	// history.
	violations int
	history    string
}

func (r result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed=%d wait=%d ops=%d executed=%d duplicates=%d lost=%d forgotten=%d attempts=%d replays=%d dropped=%d",
		r.seed, r.wait, r.ops, r.executed, r.duplicates, r.lost, r.forgotten, r.attempts, r.replays, r.dropped)
	for _, s := range []int{http.StatusConflict, http.StatusServiceUnavailable, http.StatusInternalServerError} {
		fmt.Fprintf(&b, " http%d=%d", s, r.statuses[s])
	}
	if r.killed != "" {
		fmt.Fprintf(&b, " killed=%s failover=%s", r.killed, r.failover.Round(time.Millisecond))
		if r.healed > 0 {
			fmt.Fprintf(&b, " replica-back=%s", r.healed.Round(time.Millisecond))
		}
	}
	fmt.Fprintf(&b, " not-recorded=%d store-failed=%d took=%s",
		r.logged["idem: outcome not recorded"], r.logged["idem: store failed"], r.elapsed.Round(100*time.Millisecond))
	return b.String()
}

// service is the handler behind the middleware: its work is a counted
// side effect per key, and its answer names which run of the key it was.
type service struct {
	work time.Duration
	mu   sync.Mutex
	runs map[string]int
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	time.Sleep(s.work)
	s.mu.Lock()
	s.runs[key]++
	n := s.runs[key]
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"key":%q,"run":%d}`+"\n", key, n)
}

func (s *service) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.runs))
	for k, v := range s.runs {
		out[k] = v
	}
	return out
}

// logCounter is a slog.Handler counting the middleware's messages.
type logCounter struct {
	verbose bool
	mu      sync.Mutex
	n       map[string]int64
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.n[r.Message]++
	first := l.n[r.Message] == 1
	l.mu.Unlock()
	if first && l.verbose {
		var b strings.Builder
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" || a.Key == "op" {
				fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			}
			return true
		})
		fmt.Fprintf(os.Stderr, "failover: first %q:%s\n", r.Message, b.String())
	}
	return nil
}
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCounter) WithGroup(string) slog.Handler      { return l }

// run is one measured run: heal the cluster, drive the workload, kill a
// master once enough operations are answered, re-send every operation.
func run(ctx context.Context, o options, seed uint64, wait int) (result, error) {
	r := result{seed: seed, wait: wait, ops: o.ops, statuses: map[int]int64{}}
	if err := script(ctx, o.script, "heal"); err != nil {
		return r, err
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: o.addrs})
	defer rdb.Close()
	prefix := fmt.Sprintf("idemfailover:%d:%d:%s:", seed, wait, rand.Text()[:8])
	store, err := redisstore.New(rdb, redisstore.Options{Prefix: prefix, WaitReplicas: wait})
	if err != nil {
		return r, err
	}
	logs := &logCounter{verbose: o.verbose, n: map[string]int64{}}
	svc := &service{work: o.work, runs: map[string]int{}}
	mw := server.Middleware(store, server.Options{SingleTenant: true, Lease: o.lease, Logger: slog.New(logs)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	srv := &http.Server{Handler: mw(svc)}
	go srv.Serve(ln)
	defer srv.Close()
	proxy, err := faultproxy.Start(faultproxy.Config{Upstream: "http://" + ln.Addr().String(), Drop: o.drop, Seed: seed})
	if err != nil {
		return r, err
	}
	defer proxy.Close()
	c := &client{
		hist:   &ops{},
		http:   &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.conc}},
		url:    proxy.URL(),
		budget: o.budget,
		status: map[int]int64{},
	}
	defer c.http.CloseIdleConnections()

	start := time.Now()
	rng := mrand.New(mrand.NewPCG(seed, 1))
	killAt := int64(float64(o.ops) * (o.killFrom + 0.3*rng.Float64()))
	var answered atomic.Int64
	killed := make(chan error, 1)
	if o.noKill {
		killed <- nil
	} else {
		go func() { killed <- killMaster(ctx, o, rng, &answered, killAt, &r) }()
	}

	// The workload: every operation retried until it gets a final answer.
	final := make([]int, o.ops) // the run each operation's final answer named; 0: none
	stop := progress(o, &answered, c)
	each(o.ops, o.conc, func(i int) {
		if n, ok := c.do(ctx, i); ok {
			final[i] = n
		}
		answered.Add(1)
	})
	stop()
	if err := <-killed; err != nil {
		return r, err
	}

	// The re-send: a client that lost its answer retries; each must be
	// replayed, not run again.
	before := svc.snapshot()
	each(o.ops, o.conc, func(i int) { c.do(ctx, i) })
	after := svc.snapshot()
	r.elapsed = time.Since(start)
	c.hist.effects(after, start.UnixNano(), history.Now())
	r.violations, r.history = c.hist.check()

	for i := range o.ops {
		key := opKey(i)
		n := after[key]
		if n > 0 {
			r.executed++
			r.duplicates += n - 1
		}
		if final[i] == 0 {
			r.lost++
		} else if after[key] > before[key] {
			r.forgotten++
		}
	}
	r.attempts, r.replays = c.attempts.Load(), c.replays.Load()
	c.mu.Lock()
	r.statuses = c.status
	c.mu.Unlock()
	r.dropped = proxy.Stats().Dropped
	logs.mu.Lock()
	r.logged = logs.n
	logs.mu.Unlock()
	return r, nil
}

// killMaster waits until killAt operations are answered, SIGKILLs a master
// chosen by rng through the cluster script (with -lag, after holding its
// replica back for that long), waits for its replica to be promoted and, with -restart, restarts the killed node and waits until it
// is the new master's replica.
func killMaster(ctx context.Context, o options, rng *mrand.Rand, answered *atomic.Int64, killAt int64, r *result) error {
	for answered.Load() < killAt {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	m, err := pickMaster(ctx, o.addrs, rng)
	if err != nil {
		return err
	}
	_, port, _ := strings.Cut(m.addr, ":")
	resume := func() error { return nil }
	if o.lag > 0 {
		if resume, err = holdBack(ctx, o, m); err != nil {
			return err
		}
	}
	at := time.Now()
	err = script(ctx, o.script, "kill", port)
	if rerr := resume(); err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	r.killed = m.addr
	if r.failover, err = promoted(ctx, o.addrs, m, at); err != nil {
		return err
	}
	if !o.restart {
		return nil
	}
	// A supervisor restarts the dead process; it rejoins as the new
	// master's replica and resynchronises.
	if err := script(ctx, o.script, "heal"); err != nil {
		return err
	}
	r.healed = time.Since(at)
	return nil
}

// progress reports, with -v, how far the workload got every two seconds,
// until the returned function is called.
func progress(o options, answered *atomic.Int64, c *client) func() {
	if !o.verbose {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Second):
				c.mu.Lock()
				fmt.Fprintf(os.Stderr, "failover: answered %d of %d, attempts %d, statuses %v\n", answered.Load(), o.ops, c.attempts.Load(), c.status)
				c.mu.Unlock()
			}
		}
	}()
	return func() { close(done) }
}

// each runs f(0..n-1) on conc goroutines.
func each(n, conc int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func opKey(i int) string { return fmt.Sprintf("op-%d", i) }

// client sends operations and retries them until a final answer.
type client struct {
	hist     *ops
	http     *http.Client
	url      string
	budget   time.Duration
	attempts atomic.Int64
	replays  atomic.Int64
	mu       sync.Mutex
	status   map[int]int64
}

// do sends operation i until it is answered 201 (or replayed) and returns
// the run its answer names, or false once the budget is spent.
func (c *client) do(ctx context.Context, i int) (int, bool) {
	body := fmt.Sprintf(`{"op":%d}`, i)
	deadline := time.Now().Add(c.budget)
	rng := mrand.New(mrand.NewPCG(uint64(i), 2))
	for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
		if n > 0 {
			ceiling := min(10*time.Millisecond<<min(n, 5), 250*time.Millisecond)
			time.Sleep(time.Duration(rng.Int64N(int64(ceiling))) + time.Millisecond)
		}
		c.attempts.Add(1)
		call := history.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/ops", strings.NewReader(body))
		if err != nil {
			return 0, false
		}
		req.Header.Set("Idempotency-Key", opKey(i))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.http.Do(req)
		if err != nil {
			continue // a reset or a dropped answer: send again
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.mu.Lock()
		c.status[resp.StatusCode]++
		c.mu.Unlock()
		if err != nil || resp.StatusCode != http.StatusCreated {
			continue // 409 in flight or lease lost, 5xx: send again
		}
		var answer struct{ Run int }
		if json.Unmarshal(data, &answer) != nil || answer.Run == 0 {
			continue
		}
		replayed := resp.Header.Get(server.ReplayedHeader) == "true"
		if replayed {
			c.replays.Add(1)
		}
		c.hist.answer(opKey(i), answer.Run, replayed, call)
		return answer.Run, true
	}
	return 0, false
}
