package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/server"
)

const chargeBody = `{"amount":1000,"currency":"usd","ref":"bench"}`

// tputClients is how many clients (scopes) each round of the throughput
// runs spreads its requests over.
const tputClients = 16

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// roundTrips counts the writes to PostgreSQL's sockets: each is a flush
// of the messages of one round trip (pgx and pgconn write a statement, a
// batch or a pipeline, with its Sync, at once). A tracer would miss what
// goes through pgconn directly.
type roundTrips struct{ n atomic.Int64 }

// dial wraps d so that writes on its connections are counted.
func (r *roundTrips) dial(d pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countedConn{Conn: c, n: &r.n}, nil
	}
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}

func serve(h http.Handler) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/charges", func() { srv.Close() }
}

func newHTTPClient() *http.Client { return &http.Client{Transport: newTransport()} }

// sendCharge sends one charge for a client (the idempotency scope); key ""
// sends none. It returns the time to the whole answer, its status, and
// whether it was a replay.
func sendCharge(hc *http.Client, url, client, key string) (time.Duration, int, bool) {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(chargeBody)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(charges.ClientHeader, client)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	must(err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), resp.StatusCode, resp.Header.Get(server.ReplayedHeader) == "true"
}

// postCharge is sendCharge for client "bench" and a charge that must be
// created: any other answer ends the run, since the figures would not be
// of what they say.
func postCharge(hc *http.Client, url, key string) (time.Duration, bool) {
	d, status, replayed := sendCharge(hc, url, "bench", key)
	if status != http.StatusCreated {
		must(fmt.Errorf("POST /charges: status %d", status))
	}
	return d, replayed
}

func newKey() string { return fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), rand.Uint64()) }

func keyIf(keyed bool, k string) string {
	if keyed {
		return k
	}
	return ""
}

// serverResults is what the server half measured.
type serverResults struct {
	inProcess *inProcessResult
	http      []httpRow
	floors    *pgFloors // nil without PostgreSQL
	// replayFloor is the replay floor over HTTP (floorReplay), measured
	// in the same rounds as the rows; empty without PostgreSQL.
	replayFloor sample
	trips       [][2]string // round trips to PostgreSQL
	// redisTrips are the round trips to Redis; empty without Redis.
	redisTrips [][2]string
	claims     []*claimResult // each store's Store.Claim alone; memstore's is in process
	pileUp     []pileUpRow
}

// httpRow is one way of serving POST /charges over loopback HTTP.
type httpRow struct {
	name  string
	store string // the store's name; "" for a bare handler or a floor
	bare  string // the bare handler it is compared with; "" for a bare handler
	// floor is set on the hand-written floors of a store (see
	// handFloor): they take a key, and have no replays.
	floor  bool
	newKey sample    // a request with a new key (or none, bare)
	replay sample    // a repeat answered from the store; empty for a bare handler
	tput   []float64 // requests created per second at 16 clients, one per round
	// refused counts the throughput runs' answers other than 201 (the
	// middleware refusing work it cannot start in time answers 503): they
	// are not counted in tput.
	refused map[int]int
}

// keyed reports whether the row's requests carry a key.
func (r *httpRow) keyed() bool { return r.store != "" || r.floor }

func (r *serverResults) httpRow(name string) *httpRow {
	for i := range r.http {
		if r.http[i].name == name {
			return &r.http[i]
		}
	}
	return nil
}

// storeRow is the row of the store with this name, and its bare handler's.
func (r *serverResults) storeRow(store string) (row, bare *httpRow) {
	for i := range r.http {
		if r.http[i].store == store {
			return &r.http[i], r.httpRow(r.http[i].bare)
		}
	}
	return nil, nil
}

func benchServer(cfg config) *serverResults {
	res := &serverResults{inProcess: inProcess(cfg)}
	if cfg.inProcessOnly {
		return res
	}
	var e env
	var rt *roundTrips
	if cfg.database != "" {
		pc, err := pgxpool.ParseConfig(cfg.database)
		must(err)
		rt = &roundTrips{}
		pc.ConnConfig.DialFunc = rt.dial(pc.ConnConfig.DialFunc)
		// A ping on acquiring a connection idle for a second would be
		// counted as the request's.
		pc.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
		pc.MaxConns = 32
		e.pool, err = pgxpool.NewWithConfig(context.Background(), pc)
		must(err)
		defer e.pool.Close()
	} else {
		fmt.Println("\n(no -database and no IDEM_TEST_DATABASE: PostgreSQL rows skipped)")
	}
	var trips *redisTrips
	if cfg.redis != "" {
		trips = &redisTrips{}
		e.redis = connectRedis(cfg.redis, trips)
		defer e.redis.Close()
	} else {
		fmt.Println("\n(no -redis and no IDEM_TEST_REDIS: redisstore rows skipped)")
	}
	overHTTP(cfg, e, rt, trips, res)
	if e.pool != nil {
		res.claims = append(res.claims, claims(cfg, e.pool))
	}
	if e.redis != nil {
		res.claims = append(res.claims, redisClaims(cfg, e))
	}
	res.pileUp = pileUp(cfg, e)
	return res
}

// setup is one server of the over-HTTP rows, running.
type setup struct {
	row  httpRow
	url  string
	http *http.Client
	stop func()
}

// setups starts the bare handlers, each followed by the stores compared
// with it.
func setups(e env) []setup {
	ctx := context.Background()
	var out []setup
	start := func(row httpRow, c charges.Config) {
		svc, err := charges.New(ctx, c)
		must(err)
		url, stop := serve(svc.Handler())
		out = append(out, setup{row: row, url: url, http: newHTTPClient(), stop: func() { stop(); e.cleanUp(c) }})
	}
	bares := e.bareConfigs()
	for _, bare := range []string{bareMemory, barePG} {
		config, ok := bares[bare]
		if !ok {
			continue
		}
		start(httpRow{name: bare}, config(charges.Config{}, tableName("bare")))
		for _, k := range e.storeKinds() {
			if k.bare == bare {
				start(httpRow{name: "middleware + " + k.name, store: k.name, bare: bare}, k.config(charges.Config{}, tableName("http")))
			}
		}
		if bare == barePG {
			for _, f := range []struct {
				name  string
				trips int
			}{{floorThree, 3}, {floorTwo, 2}, {floorPipelined, 1}} {
				h, tables := newHandFloor(e.pool, f.trips)
				url, stop := serve(h)
				out = append(out, setup{row: httpRow{name: f.name, bare: barePG, floor: true}, url: url, http: newHTTPClient(), stop: func() {
					stop()
					ctx, cancel := contextWithTimeout(10 * time.Second)
					defer cancel()
					e.pool.Exec(ctx, "DROP TABLE IF EXISTS "+strings.Join(tables, ", "))
				}})
			}
		}
	}
	return out
}

// overHTTP measures new keys, replays and throughput over loopback HTTP,
// with the PostgreSQL floors interleaved in the same rounds.
func overHTTP(cfg config, e env, rt *roundTrips, trips *redisTrips, res *serverResults) {
	ss := setups(e)
	defer func() {
		for _, s := range ss {
			s.stop()
		}
	}()
	var floor *floorConn
	if e.pool != nil {
		floor = openFloor(cfg.database)
		defer floor.close()
		res.floors = &pgFloors{syncCommit: floor.syncCommit}
	}
	var rf *setup
	if e.pool != nil {
		h, table := newReplayFloor(e.pool)
		url, stop := serve(h)
		rf = &setup{row: httpRow{name: floorReplay}, url: url, http: newHTTPClient(), stop: func() {
			stop()
			ctx, cancel := contextWithTimeout(10 * time.Second)
			defer cancel()
			e.pool.Exec(ctx, "DROP TABLE IF EXISTS "+table)
		}}
		defer rf.stop()
		for range 50 {
			postCharge(rf.http, rf.url, floorReplayKey)
		}
	}
	replayKeys := make([]string, len(ss))
	for i, s := range ss {
		keyed := s.row.keyed()
		replayKeys[i] = newKey()
		for range 50 { // warm up: connections, prepared statements
			postCharge(s.http, s.url, keyIf(keyed, newKey()))
		}
		if s.row.store != "" {
			postCharge(s.http, s.url, keyIf(keyed, replayKeys[i]))
		}
	}
	if floor != nil {
		floor.measure(50, &pgFloors{}) // warm up
	}
	var steps []func(int)
	for i := range ss {
		s := &ss[i]
		keyed := s.row.keyed()
		steps = append(steps, func(n int) {
			for range n {
				d, _ := postCharge(s.http, s.url, keyIf(keyed, newKey()))
				s.row.newKey = append(s.row.newKey, d)
			}
			if s.row.store != "" {
				for range n {
					d, replayed := postCharge(s.http, s.url, replayKeys[i])
					if !replayed {
						must(fmt.Errorf("%s: a repeat was not replayed", s.row.name))
					}
					s.row.replay = append(s.row.replay, d)
				}
			}
		})
	}
	if rf != nil {
		steps = append(steps, func(n int) {
			for range n {
				d, replayed := postCharge(rf.http, rf.url, floorReplayKey)
				if !replayed {
					must(fmt.Errorf("%s: not answered as a replay", floorReplay))
				}
				res.replayFloor = append(res.replayFloor, d)
			}
		})
	}
	if floor != nil {
		steps = append(steps, func(n int) { floor.measure(n, res.floors) })
	}
	interleaved(cfg.rounds, cfg.seqOps, steps...)
	// The load comes from many clients, as a service's would: memstore
	// bounds the keys one client (scope) may hold within their retention
	// to a share of the store, and a single client would fill its share.
	var mu sync.Mutex
	for round := range cfg.rounds {
		for i := range ss {
			s := &ss[i]
			keyed := s.row.keyed()
			var created, refused atomic.Int64
			rate := runConcurrent(clientKind{do: func(context.Context) error {
				client := fmt.Sprintf("bench-%d-%d", round, rand.IntN(tputClients))
				_, status, _ := sendCharge(s.http, s.url, client, keyIf(keyed, newKey()))
				if status == http.StatusCreated {
					created.Add(1)
				} else {
					refused.Add(1)
					mu.Lock()
					if s.row.refused == nil {
						s.row.refused = map[int]int{}
					}
					s.row.refused[status]++
					mu.Unlock()
				}
				return nil
			}}, 16, cfg.tputDur)
			// runConcurrent counted every answer: keep the created ones.
			if n := created.Load() + refused.Load(); n > 0 {
				rate *= float64(created.Load()) / float64(n)
			}
			s.row.tput = append(s.row.tput, rate)
		}
	}
	for _, s := range ss {
		res.http = append(res.http, s.row)
	}
	for i, s := range ss {
		if trips != nil && s.row.store == e.redisName() {
			n, r := countRedisTrips(s, trips, replayKeys[i])
			res.redisTrips = append(res.redisTrips, [2]string{"new key, " + s.row.store, n}, [2]string{"replay, " + s.row.store, r})
		}
	}
	if e.pool == nil {
		return
	}
	// count counts the round trips of one request, those the store makes
	// after the answer included (pgstore rolls back a claim that acquired
	// nothing in the background): it returns once the count has stopped
	// growing for 50 ms (2 s at most).
	count := func(s setup, key string) string {
		before := rt.n.Load()
		postCharge(s.http, s.url, key)
		total, still := rt.n.Load()-before, 0
		for range 200 {
			time.Sleep(10 * time.Millisecond)
			if n := rt.n.Load() - before; n != total {
				total, still = n, 0
				continue
			}
			if still++; still == 5 {
				break
			}
		}
		return strconv.FormatInt(total, 10)
	}
	for i, s := range ss {
		switch {
		case s.row.name == barePG:
			res.trips = append(res.trips, [2]string{"bare handler (autocommit insert)", count(s, "")})
		case s.row.floor:
			res.trips = append(res.trips, [2]string{s.row.name, count(s, newKey())})
		case s.row.bare == barePG:
			res.trips = append(res.trips,
				[2]string{"new key, " + s.row.store, count(s, newKey())},
				[2]string{"replay, " + s.row.store, count(s, replayKeys[i])})
		}
	}
}

// printHTTP writes the over-HTTP tables.
func (r *serverResults) printHTTP() {
	if len(r.http) == 0 {
		return
	}
	t := &table{title: "Server: POST /charges over loopback HTTP", head: []string{"setup", "new key p50", "new key p99", "replay p50", "replay p99", "req/s at 16 clients", "vs bare"}}
	for _, row := range r.http {
		rp50, rp99, vs := "", "", ""
		if row.store != "" {
			rp50, rp99 = ms(row.replay.median()), ms(row.replay.p99())
		}
		if b := r.httpRow(row.bare); b != nil && row.bare != "" {
			vs = pct(medianFloat(row.tput) / medianFloat(b.tput))
		}
		t.add(row.name, ms(row.newKey.median()), ms(row.newKey.p99()), rp50, rp99, fmt.Sprintf("%.0f", medianFloat(row.tput)), vs)
	}
	t.notes = append(t.notes, "The bare PostgreSQL handler inserts the same charge row with one autocommit statement; with the middleware the row is written in the transaction that stores the response.",
		"The floors are the charges handler with pgstore's rows written by hand on the same pool, no middleware: the key's advisory lock (its key computed in Go), the charge, and a record in a table of pgstore's schema, committed durably. '3 round trips' is pgstore's design; '2 round trips' is its design with Options.PipelineClaim (the claim sent with the charge, a lock not taken or a record found failing the transaction); '1 pipelined transaction' sends the same rows in one round trip.")
	for _, row := range r.http {
		if len(row.refused) > 0 {
			t.notes = append(t.notes, fmt.Sprintf("%s at 16 clients: answers other than 201, not counted as created: %s.", row.name, statusCounts(row.refused)))
		}
	}
	t.print()
	if len(r.replayFloor) > 0 {
		rt := &table{title: "Server: the floor of a replay over loopback HTTP", head: []string{"setup", "p50", "p99"}}
		rt.add(floorReplay, ms(r.replayFloor.median()), ms(r.replayFloor.p99()))
		rt.notes = append(rt.notes, "One autocommit SELECT of a completed record in a table of pgstore's schema, on the same pool, then the bare in-memory handler: measured in the same rounds as the table above.")
		rt.print()
	}
	if r.floors != nil {
		r.floors.print()
	}
	if len(r.trips) > 0 {
		rtt := &table{title: "Server: round trips to PostgreSQL per request, counted as writes to their sockets", head: []string{"request", "round trips"}}
		for _, tr := range r.trips {
			rtt.add(tr[0], tr[1])
		}
		rtt.notes = append(rtt.notes, "Counted until the store is quiet after the answer. In transactional mode a claim that acquires nothing (a replay, a key in flight) is answered after its first round trip; its transaction's ROLLBACK follows in the background, off the request's path.")
		rtt.print()
	}
	if len(r.redisTrips) > 0 {
		rtt := &table{title: "Server: round trips to Redis per request, counted with a go-redis hook on every node's connections (ten requests each)", head: []string{"request", "round trips"}}
		for _, tr := range r.redisTrips {
			rtt.add(tr[0], tr[1])
		}
		rtt.notes = append(rtt.notes, "A new key is a claim and a completion, one script each; a replay is one read-only script.")
		rtt.print()
	}
}

func (r *serverResults) print() {
	if r.inProcess != nil {
		r.inProcess.print()
	}
	r.printHTTP()
	for _, c := range r.claims {
		c.print()
	}
	printPileUp(r.pileUp)
}

// statusCounts writes {503: 2, 409: 1} as "2 × 503, 1 × 409", by status.
func statusCounts(m map[int]int) string {
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d × %d", m[st], st))
	}
	return strings.Join(parts, ", ")
}
