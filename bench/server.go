package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

const chargeBody = `{"amount":1000,"currency":"usd","ref":"bench"}`

// roundTrips counts statements and batches sent to PostgreSQL: each is one
// round trip (a pgx batch is pipelined).
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// serverSetup is one way of serving POST /charges over loopback HTTP.
type serverSetup struct {
	name  string
	url   string
	svc   *charges.Service
	keyed bool // requests carry a key (the middleware is in play)
	http  *http.Client
	stop  func()
}

func serve(h http.Handler) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/charges", func() { srv.Close() }
}

func newHTTPClient() *http.Client { return &http.Client{Transport: newTransport()} }

// postCharge sends one charge; key "" sends none.
func postCharge(hc *http.Client, url, key string) (time.Duration, bool) {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(chargeBody)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(charges.ClientHeader, "bench")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	must(err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != http.StatusCreated {
		must(fmt.Errorf("POST /charges: status %d", resp.StatusCode))
	}
	return d, resp.Header.Get(server.ReplayedHeader) == "true"
}

func newKey() string { return fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), rand.Uint64()) }

func benchServer(cfg config) {
	inProcess(cfg)
	if cfg.inProcessOnly {
		return
	}
	var pool *pgxpool.Pool
	var rt *roundTrips
	if cfg.database != "" {
		pc, err := pgxpool.ParseConfig(cfg.database)
		must(err)
		rt = &roundTrips{}
		pc.ConnConfig.Tracer = rt
		pc.MaxConns = 32
		pool, err = pgxpool.NewWithConfig(context.Background(), pc)
		must(err)
		defer pool.Close()
	} else {
		fmt.Println("\n(no -database and no IDEM_TEST_DATABASE: PostgreSQL rows skipped)")
	}
	overHTTP(cfg, pool, rt)
	if pool != nil {
		claims(cfg, pool)
	}
	pileUp(cfg, pool)
}

// inProcess measures what the middleware adds to the charges handler, in
// process (ServeHTTP on a recorder), with the in-memory store.
func inProcess(cfg config) {
	svc, err := charges.New(context.Background(), charges.Config{Optional: true})
	must(err)
	h := svc.Handler()
	run := func(n int, key func(i int) string) (time.Duration, float64) {
		var before, after runtime.MemStats
		reqs := make([]*http.Request, n)
		for i := range reqs {
			r := httptest.NewRequest(http.MethodPost, "/charges", bytes.NewReader([]byte(chargeBody)))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set(charges.ClientHeader, "bench")
			if k := key(i); k != "" {
				r.Header.Set("Idempotency-Key", k)
			}
			reqs[i] = r
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		for _, r := range reqs {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				must(fmt.Errorf("status %d", w.Code))
			}
		}
		d := time.Since(start)
		runtime.ReadMemStats(&after)
		return d / time.Duration(n), float64(after.Mallocs-before.Mallocs) / float64(n)
	}
	// Blocks of each kind alternate, so the in-memory ledger, which grows
	// with every charge, costs all kinds alike.
	const block = 100
	replayKey := newKey()
	run(1, func(int) string { return replayKey })
	var bare, first, replay []float64
	var bareA, firstA, replayA []float64
	for r := range cfg.rounds * 10 {
		d, a := run(block, func(int) string { return "" })
		bare, bareA = append(bare, float64(d)), append(bareA, a)
		prefix := fmt.Sprintf("inproc-%d-", r)
		d, a = run(block, func(i int) string { return prefix + strconv.Itoa(i) })
		first, firstA = append(first, float64(d)), append(firstA, a)
		d, a = run(block, func(int) string { return replayKey })
		replay, replayA = append(replay, float64(d)), append(replayA, a)
	}
	t := &table{title: "Server: the charges handler in process (ServeHTTP), middleware + memstore", head: []string{"request", "time/op (median)", "allocs/op", "added over bare"}}
	b, ba := medianFloat(bare), medianFloat(bareA)
	t.add("bare handler (no key: the middleware passes it through)", us(time.Duration(b)), fmt.Sprintf("%.0f", ba), "")
	t.add("first execution (new key)", us(time.Duration(medianFloat(first))), fmt.Sprintf("%.0f", medianFloat(firstA)),
		fmt.Sprintf("%s, %+.0f allocs", us(time.Duration(medianFloat(first)-b)), medianFloat(firstA)-ba))
	t.add("replay", us(time.Duration(medianFloat(replay))), fmt.Sprintf("%.0f", medianFloat(replayA)),
		fmt.Sprintf("%s, %+.0f allocs", us(time.Duration(medianFloat(replay)-b)), medianFloat(replayA)-ba))
	t.print()
}

func setups(pool *pgxpool.Pool, delay time.Duration) []serverSetup {
	ctx := context.Background()
	var out []serverSetup
	add := func(name string, svcCfg charges.Config, keyed bool) {
		svc, err := charges.New(ctx, svcCfg)
		must(err)
		url, stop := serve(svc.Handler())
		out = append(out, serverSetup{name: name, url: url, svc: svc, keyed: keyed, http: newHTTPClient(), stop: stop})
	}
	add("bare handler, memory", charges.Config{Optional: true, Delay: delay}, false)
	add("middleware + memstore", charges.Config{Delay: delay}, true)
	if pool != nil {
		tbl := fmt.Sprintf("bench_charges_%d", rand.Uint32())
		pc := charges.Config{Pool: pool, Table: tbl, Optional: true, Delay: delay}
		add("bare handler, PostgreSQL insert", pc, false)
		add("middleware + pgstore (transactional)", pc, true)
		last := out[len(out)-1].stop
		out[len(out)-1].stop = func() {
			last()
			pool.Exec(ctx, "DROP TABLE IF EXISTS "+tbl+", "+tbl+"_keys")
		}
	}
	return out
}

// overHTTP measures new keys, replays and throughput over loopback HTTP.
func overHTTP(cfg config, pool *pgxpool.Pool, rt *roundTrips) {
	ss := setups(pool, 0)
	defer func() {
		for _, s := range ss {
			s.stop()
		}
	}()
	replayKeys := make([]string, len(ss))
	for i, s := range ss {
		replayKeys[i] = newKey()
		for range 50 { // warm up: connections, prepared statements
			postCharge(s.http, s.url, keyIf(s.keyed, newKey()))
		}
		postCharge(s.http, s.url, keyIf(s.keyed, replayKeys[i]))
	}
	first := make([]sample, len(ss))
	replay := make([]sample, len(ss))
	for range cfg.rounds {
		for i, s := range ss {
			for range cfg.seqOps {
				d, _ := postCharge(s.http, s.url, keyIf(s.keyed, newKey()))
				first[i] = append(first[i], d)
			}
			if s.keyed {
				for range cfg.seqOps {
					d, replayed := postCharge(s.http, s.url, replayKeys[i])
					if !replayed {
						must(fmt.Errorf("%s: a repeat was not replayed", s.name))
					}
					replay[i] = append(replay[i], d)
				}
			}
		}
	}
	tput := make([][]float64, len(ss))
	for range cfg.rounds {
		for i, s := range ss {
			tput[i] = append(tput[i], runConcurrent(clientKind{do: func(context.Context) error {
				postCharge(s.http, s.url, keyIf(s.keyed, newKey()))
				return nil
			}}, 16, cfg.tputDur))
		}
	}
	t := &table{title: "Server: POST /charges over loopback HTTP", head: []string{"setup", "new key p50", "new key p99", "replay p50", "replay p99", "req/s at 16 clients", "vs bare"}}
	for i, s := range ss {
		rp50, rp99 := "", ""
		if s.keyed {
			rp50, rp99 = ms(replay[i].median()), ms(replay[i].p99())
		}
		vs := ""
		if s.keyed {
			vs = pct(medianFloat(tput[i]) / medianFloat(tput[i-1]))
		}
		t.add(s.name, ms(first[i].median()), ms(first[i].p99()), rp50, rp99, fmt.Sprintf("%.0f", medianFloat(tput[i])), vs)
	}
	t.notes = append(t.notes, "The bare PostgreSQL handler inserts the same charge row with one autocommit statement; with the middleware the row is written in the transaction that stores the response.")
	t.print()

	if pool == nil {
		return
	}
	s := ss[len(ss)-1]
	count := func(key string) int64 {
		before := rt.n.Load()
		postCharge(s.http, s.url, key)
		return rt.n.Load() - before
	}
	newRT := count(newKey())
	repRT := count(replayKeys[len(ss)-1])
	bareRT := func() int64 {
		before := rt.n.Load()
		postCharge(ss[2].http, ss[2].url, "")
		return rt.n.Load() - before
	}()
	rtt := &table{title: "Server: round trips to PostgreSQL per request, counted with a pgx tracer", head: []string{"request", "round trips"}}
	rtt.add("bare handler (autocommit insert)", strconv.FormatInt(bareRT, 10))
	rtt.add("new key, transactional (claim, begin, insert, fenced update + commit)", strconv.FormatInt(newRT, 10))
	rtt.add("replay", strconv.FormatInt(repRT, 10))
	rtt.print()
}

func keyIf(keyed bool, k string) string {
	if keyed {
		return k
	}
	return ""
}

// claims measures pgstore's SQL claim alone.
func claims(cfg config, pool *pgxpool.Pool) {
	ctx := context.Background()
	tbl := fmt.Sprintf("bench_claims_%d", rand.Uint32())
	st, err := pgstore.New(pool, pgstore.Options{Table: tbl})
	must(err)
	must(st.Migrate(ctx))
	defer pool.Exec(ctx, "DROP TABLE IF EXISTS "+tbl)
	done := server.Key{Scope: "bench", Key: "replayed"}
	c, err := st.Claim(ctx, done, "fp", time.Minute)
	must(err)
	must(st.Complete(ctx, done, c.Token, server.Response{Status: 201, Body: []byte(`{"id":"ch_1"}`)}, time.Hour))
	var fresh, replay sample
	for range cfg.rounds {
		for range cfg.seqOps {
			k := server.Key{Scope: "bench", Key: newKey()}
			start := time.Now()
			c, err := st.Claim(ctx, k, "fp", time.Minute)
			fresh = append(fresh, time.Since(start))
			must(err)
			if !c.Acquired {
				must(fmt.Errorf("a new key was not acquired"))
			}
			start = time.Now()
			c, err = st.Claim(ctx, done, "fp", time.Minute)
			replay = append(replay, time.Since(start))
			must(err)
			if !c.Record.Completed {
				must(fmt.Errorf("the completed key was not reported"))
			}
		}
	}
	t := &table{title: "Server: pgstore SQL claim (one statement, one round trip)", head: []string{"claim", "p50", "p99"}}
	t.add("new key (asynchronous commit)", ms(fresh.median()), ms(fresh.p99()))
	t.add("replay (read-only: no transaction ID, no WAL)", ms(replay.median()), ms(replay.p99()))
	t.print()
}

// pileUp sends one request to a 50 ms handler, then 99 duplicates while it
// runs, and times how long until all 100 are answered. It also checks that
// a crashed worker's key is still taken over once its lease lapses.
func pileUp(cfg config, pool *pgxpool.Pool) {
	ctx := context.Background()
	const handler = 50 * time.Millisecond
	type result struct{ all, first, alone sample }
	t := &table{title: "Server: pile-up, one request to a 50 ms handler then 99 duplicates while it runs", head: []string{"store", "all 100 answered p50", "p99", "first request p50 with duplicates", "first request p50 alone", "crashed-worker takeover"}}
	type store struct {
		name string
		cfg  charges.Config
	}
	stores := []store{{"memstore", charges.Config{Delay: handler, Wait: 2 * time.Second, Lease: 300 * time.Millisecond}}}
	if pool != nil {
		tbl := fmt.Sprintf("bench_pileup_%d", rand.Uint32())
		defer pool.Exec(ctx, "DROP TABLE IF EXISTS "+tbl+", "+tbl+"_keys")
		stores = append(stores, store{"pgstore (transactional)", charges.Config{Pool: pool, Table: tbl, Delay: handler, Wait: 2 * time.Second, Lease: 300 * time.Millisecond}})
	}
	for _, st := range stores {
		svc, err := charges.New(ctx, st.cfg)
		must(err)
		url, stop := serve(svc.Handler())
		hc := newHTTPClient()
		var r result
		for round := range cfg.rounds*4 + 1 {
			// The first round only warms up: it opens the connections a
			// hundred concurrent requests need.
			warm := round == 0
			d, _ := postCharge(hc, url, newKey())
			if !warm {
				r.alone = append(r.alone, d)
			}

			key := newKey()
			start := time.Now()
			var wg sync.WaitGroup
			var firstDone time.Duration
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, _ := postCharge(hc, url, key)
				firstDone = d
			}()
			time.Sleep(5 * time.Millisecond) // the first is running
			for range 99 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					postCharge(hc, url, key)
				}()
			}
			wg.Wait()
			if !warm {
				r.all = append(r.all, time.Since(start))
				r.first = append(r.first, firstDone)
			}
		}
		t.add(st.name, ms(r.all.median()), ms(r.all.p99()), ms(r.first.median()), ms(r.alone.median()), takeover(ctx, url, hc, st.cfg))
		stop()
	}
	t.notes = append(t.notes, "Duplicates wait (Options.Wait) for the first request's outcome and replay it; duplicates in the same process wake as soon as it is stored.")
	t.print()
}

// takeover plays a worker that claimed a key and died: a retry must get the
// key once the 300 ms lease lapses. It reports how long that took.
func takeover(ctx context.Context, url string, hc *http.Client, cfg charges.Config) string {
	if cfg.Pool == nil {
		return "see server tests (memstore)"
	}
	st, err := pgstore.New(cfg.Pool, pgstore.Options{Table: cfg.Table + "_keys", Transactional: true})
	must(err)
	key := newKey()
	req := httptest.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(chargeBody)))
	req.Header.Set("Content-Type", "application/json")
	fp := server.Fingerprint(req, []byte(chargeBody))
	c, err := st.Claim(ctx, server.Key{Scope: "bench", Key: key}, fp, 300*time.Millisecond)
	must(err)
	if !c.Acquired {
		return "claim failed"
	}
	start := time.Now()
	for time.Since(start) < 5*time.Second {
		r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(chargeBody)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(charges.ClientHeader, "bench")
		r.Header.Set("Idempotency-Key", key)
		resp, err := hc.Do(r)
		must(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			return fmt.Sprintf("yes, after %s (lease 300 ms)", ms(time.Since(start)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "NO: the key stayed locked"
}
