// Package drill measures what leader failovers of an etcd cluster do to
// idempotency through etcdstore. A counting handler is served through
// server.Middleware on an etcdstore, on a three-member cluster in the
// process, behind a proxy that drops some answers after the work (so
// clients retry and need replays). An idem client drives keyed
// operations at it, each retried until it gets a final answer, while the
// cluster's leader is killed again and again (stopped without a word to
// its peers, then restarted on its data). Afterwards every operation is
// sent once more, as a client that lost its answer would, and must be
// replayed.
//
// It counts duplicates (runs of an operation's work beyond the first),
// lost operations (no final answer within the client's retries),
// forgotten ones (answered, yet run again by the re-send: their outcome
// was lost) and the time each election took, from the kill until the live
// members' own status names a new leader. Shared by the command in
// internal/failover and the package's TestFailover.
package drill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/faultproxy"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/etcdstore/internal/cluster"
)

// Config is one drill's settings; zero fields take the defaults named.
type Config struct {
	// Dir holds the members' data, a directory per seed, removed after
	// the seed's run. Default: a temporary directory.
	Dir string
	// Ops is how many operations a seed's run sends at least; it goes on
	// sending new ones until its kills are done. Default 1000.
	Ops int
	// Conc is how many operations are in flight. Default 16.
	Conc int
	// Kills is how many times a seed's run kills the leader. Default 4.
	Kills int
	// Work is how long the handler's work takes. Default 2 ms.
	Work time.Duration
	// Drop is the share of answers the proxy drops after the work.
	// Default 0.05.
	Drop float64
	// Lease is the middleware's lease. Default server.DefaultLease (30 s).
	Lease time.Duration
	// Naive serves the handler without the middleware: the baseline that
	// shows the drill can count duplicates.
	Naive bool
	// Log, if set, receives progress lines.
	Log io.Writer
}

func (c Config) withDefaults() Config {
	if c.Ops == 0 {
		c.Ops = 1000
	}
	if c.Conc == 0 {
		c.Conc = 16
	}
	if c.Kills == 0 {
		c.Kills = 4
	}
	if c.Work == 0 {
		c.Work = 2 * time.Millisecond
	}
	if c.Drop == 0 {
		c.Drop = 0.05
	}
	return c
}

// Result is what one seed's run measured.
type Result struct {
	Seed       uint64
	Ops        int             // operations sent
	Executed   int             // operations whose work ran at least once
	Duplicates int             // runs of the work beyond the first, the re-send included
	Lost       int             // operations without a final answer
	Forgotten  int             // answered, and run again by the re-send
	Kills      int             // leader kills
	ToLeader   []time.Duration // from each kill until the members named a new leader
	Attempts   int64           // attempts the client sent
	Dropped    int64           // answers the proxy dropped
	Logged     map[string]int64
	Elapsed    time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("seed=%d operations=%d duplicates=%d lost=%d leader_kills=%d forgotten=%d executed=%d median_to_leader=%s attempts=%d dropped=%d not_recorded=%d store_failed=%d took=%s",
		r.Seed, r.Ops, r.Duplicates, r.Lost, r.Kills, r.Forgotten, r.Executed, Median(r.ToLeader).Round(time.Millisecond),
		r.Attempts, r.Dropped, r.Logged["idem: outcome not recorded"], r.Logged["idem: store failed"], r.Elapsed.Round(100*time.Millisecond))
}

// Median returns the median of ds (the mean of the middle two for an
// even count), or 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Run runs one seed: a fresh cluster, the workload with cfg.Kills leader
// kills spread over it, then the re-send. Every wait is bounded; ctx
// bounds the whole.
func Run(ctx context.Context, cfg Config, seed uint64) (Result, error) {
	cfg = cfg.withDefaults()
	r := Result{Seed: seed}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "idem-etcd-drill-")
		if err != nil {
			return r, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	dir = filepath.Join(dir, fmt.Sprintf("seed-%d", seed))
	defer os.RemoveAll(dir)
	c, err := cluster.Start(dir, 3, cluster.Options{})
	if err != nil {
		return r, err
	}
	defer c.Close()
	cli, err := c.Client()
	if err != nil {
		return r, err
	}
	defer cli.Close()
	store, err := etcdstore.New(cli, etcdstore.Options{Prefix: fmt.Sprintf("drill/%d/", seed)})
	if err != nil {
		return r, err
	}

	logs := &logCounter{log: cfg.Log, n: map[string]int64{}}
	svc := &service{work: cfg.Work, runs: map[string]int{}}
	var h http.Handler = svc
	if !cfg.Naive {
		h = server.Middleware(store, server.Options{SingleTenant: true, Lease: cfg.Lease, Logger: slog.New(logs)})(svc)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String()
	proxy, err := faultproxy.Start(faultproxy.Config{Upstream: url, Drop: cfg.Drop, Seed: seed})
	if err != nil {
		return r, err
	}
	defer proxy.Close()
	client, err := idem.New(idem.Options{
		Transport:      &http.Transport{MaxIdleConnsPerHost: cfg.Conc},
		AttemptTimeout: 3 * time.Second,
		MaxAttempts:    100,
		BaseDelay:      20 * time.Millisecond,
		MaxDelay:       500 * time.Millisecond,
		MaxRetryAfter:  250 * time.Millisecond,
		Budget:         idem.BudgetOptions{Capacity: -1},
	})
	if err != nil {
		return r, err
	}

	start := time.Now()
	var (
		answered atomic.Int64
		kerr     error
		killed   = make(chan struct{}) // closed once the kills are over
	)
	go func() {
		defer close(killed)
		kerr = killLeaders(ctx, cfg, c, cli, seed, &answered, &r)
	}()

	// The workload: operations until at least cfg.Ops are sent and the
	// kills are over, each retried until it has a final answer.
	var (
		mu       sync.Mutex
		final    = map[int]bool{} // operations with a final answer
		next     atomic.Int64
		attempts atomic.Int64
		wg       sync.WaitGroup
	)
	over := func() bool {
		select {
		case <-killed:
			return true
		default:
			return false
		}
	}
	for range cfg.Conc {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= cfg.Ops && over() {
					next.Add(-1)
					return
				}
				ok, n := send(ctx, client, proxy.URL(), seed, i)
				attempts.Add(int64(n))
				mu.Lock()
				final[i] = ok
				mu.Unlock()
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	<-killed
	if kerr != nil {
		return r, kerr
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	r.Ops = int(next.Load())

	// The re-send: a client that lost its answer sends again, straight to
	// the service; each must be replayed, not run again.
	before := svc.snapshot()
	plain := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Conc}}
	resend := make(chan int)
	for range cfg.Conc {
		wg.Go(func() {
			for i := range resend {
				resendOnce(ctx, plain, url, seed, i)
			}
		})
	}
	for i := range r.Ops {
		resend <- i
	}
	close(resend)
	wg.Wait()
	after := svc.snapshot()
	r.Elapsed = time.Since(start)

	for i := range r.Ops {
		key := opKey(seed, i)
		if n := after[key]; n > 0 {
			r.Executed++
			r.Duplicates += n - 1
		}
		switch {
		case !final[i]:
			r.Lost++
		case after[key] > before[key]:
			r.Forgotten++
		}
	}
	r.Attempts = attempts.Load()
	r.Dropped = proxy.Stats().Dropped
	r.Logged = logs.snapshot()
	return r, nil
}

func opKey(seed uint64, i int) string { return fmt.Sprintf("op-%d-%d", seed, i) }

// send runs operation i through the idem client and reports whether it
// got a final 201, and how many attempts it took.
func send(ctx context.Context, client *idem.Client, url string, seed uint64, i int) (bool, int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/ops", bytes.NewReader(fmt.Appendf(nil, `{"op":%d}`, i)))
	if err != nil {
		return false, 0
	}
	req.Header.Set("Idempotency-Key", opKey(seed, i))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ierr *idem.Error
		if errors.As(err, &ierr) {
			return false, ierr.Attempts
		}
		return false, 0
	}
	return resp.StatusCode == http.StatusCreated, resp.Attempts
}

// resendOnce sends operation i once more, with its key and body.
func resendOnce(ctx context.Context, c *http.Client, url string, seed uint64, i int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/ops", bytes.NewReader(fmt.Appendf(nil, `{"op":%d}`, i)))
	if err != nil {
		return
	}
	req.Header.Set("Idempotency-Key", opKey(seed, i))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := c.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// killLeaders kills the leader cfg.Kills times, the k-th once k/(Kills+1)
// of cfg.Ops are answered (shifted by up to half a step, by seed): each
// time it asks the members who leads, kills that member, times the
// election from the members' status, restarts the member on its data and
// waits until every member answers again.
func killLeaders(ctx context.Context, cfg Config, c *cluster.Cluster, cli *clientv3.Client, seed uint64, answered *atomic.Int64, r *Result) error {
	rng := mrand.New(mrand.NewPCG(seed, 7))
	step := float64(cfg.Ops) / float64(cfg.Kills+1)
	for k := range cfg.Kills {
		at := int64(step*float64(k+1) + step*0.5*(rng.Float64()-0.5))
		if err := until(ctx, 10*time.Minute, func() bool { return answered.Load() >= at }); err != nil {
			return fmt.Errorf("waiting for operation %d: %w", at, err)
		}
		var before cluster.Status
		if err := until(ctx, 30*time.Second, func() bool {
			before = status(ctx, c, cli)
			return before.Leader >= 0
		}); err != nil {
			return fmt.Errorf("kill %d: no leader to kill: %w", k+1, err)
		}
		killedAt := time.Now()
		c.Kill(before.Leader)
		r.Kills++
		if err := until(ctx, 30*time.Second, func() bool {
			st := status(ctx, c, cli)
			return st.Leader >= 0 && st.Leader != before.Leader && st.Term > before.Term
		}); err != nil {
			return fmt.Errorf("kill %d: no new leader: %w", k+1, err)
		}
		r.ToLeader = append(r.ToLeader, time.Since(killedAt))
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "drill: seed %d kill %d: member %d was leader in term %d; a new leader after %s; %d answered\n",
				seed, k+1, before.Leader, before.Term, r.ToLeader[k].Round(time.Millisecond), answered.Load())
		}
		if err := c.Restart(before.Leader); err != nil {
			return fmt.Errorf("kill %d: %w", k+1, err)
		}
		if err := until(ctx, 30*time.Second, func() bool { return status(ctx, c, cli).Answered == c.Len() }); err != nil {
			return fmt.Errorf("kill %d: the restarted member does not answer: %w", k+1, err)
		}
	}
	return nil
}

func status(ctx context.Context, c *cluster.Cluster, cli *clientv3.Client) cluster.Status {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	return c.Status(ctx, cli)
}

// until polls cond every 5 ms until it holds, for at most bound.
func until(ctx context.Context, bound time.Duration, cond func() bool) error {
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", bound)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// service is the handler: its work is a counted side effect per key.
type service struct {
	work time.Duration
	mu   sync.Mutex
	runs map[string]int
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	_, _ = io.Copy(io.Discard, r.Body)
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
	log io.Writer // the first of each message and its error, if set
	mu  sync.Mutex
	n   map[string]int64
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.n[r.Message]++
	first := l.n[r.Message] == 1
	l.mu.Unlock()
	if first && l.log != nil {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				fmt.Fprintf(l.log, "drill: first %q: %v\n", r.Message, a.Value)
			}
			return true
		})
	}
	return nil
}
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCounter) WithGroup(string) slog.Handler      { return l }

func (l *logCounter) snapshot() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int64, len(l.n))
	for k, v := range l.n {
		out[k] = v
	}
	return out
}
