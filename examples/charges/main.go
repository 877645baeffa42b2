// Command charges is a small payments API behind the idem middleware, to
// read in one sitting and try with curl:
//
//	go run ./examples/charges            # in memory
//	go run ./examples/charges -database postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//	go run ./examples/charges -redis 127.0.0.1:6379      # records in Redis
//	go run ./examples/charges -redis "$(scripts/redis-cluster.sh start | tail -n 1)"  # a cluster
//
//	curl -i -X POST localhost:8080/charges -H 'X-Client-Id: acme' \
//	     -H 'Idempotency-Key: order-1' -H 'Content-Type: application/json' \
//	     -d '{"amount": 1000, "currency": "usd"}'
//	# run the POST again: the same charge, with Idempotent-Replayed: true
//	# list acme's charges: still one
//	curl -s localhost:8080/charges -H 'X-Client-Id: acme'
//	# what idem did, in the Prometheus text format
//	curl -s localhost:8080/metrics | grep idem_
//
// POST /charges needs X-Client-Id (the idempotency scope; 401 without it)
// and Idempotency-Key (400 without it). A non-positive amount is a 400, an
// amount of 402 a declined card (402); both are stored and replayed. A ref
// of "panic" makes the handler fail after writing its charge: the charge is
// rolled back, the key released, and the answer is 500. Send JSON with
// Content-Type: application/json: the middleware then compares bodies as
// JSON, so a retry with its keys in another order is the same request;
// without it the body counts byte for byte.
//
// With -database the service keeps two tables, which it creates if they
// are missing: the charges in idem_example_charges, and the idempotency
// records (pgstore, transactional mode, committed with each charge) in
// idem_example_charges_keys. To look at the records:
//
//	idem keys ls --database "$DSN" --table idem_example_charges_keys
//
// (idem's default table, idem_keys, is not this service's.)
//
// With -redis the idempotency records are kept in Redis (package
// redisstore; comma-separated addresses are a cluster's seeds) and the
// charges in this process's memory, each kept once Redis has recorded its
// request's outcome under the lease's fence. The records are kept under a
// key prefix of this process's own, idem:charges:<random>:, so that a
// restarted service, whose memory starts empty, never replays a charge it
// does not hold; they expire with their retention (24 h).
//
// GET /metrics serves the middleware's OpenTelemetry instruments (package
// otelidem) in the Prometheus text format, through OpenTelemetry's
// Prometheus exporter: idem_server_requests_total by idem_result, the
// claims running, lease renewals and the store's operation durations.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/otelidem"
	"github.com/idemhq/idem/server/redisstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	database := flag.String("database", "", "PostgreSQL DSN; empty keeps everything in memory")
	redisAddr := flag.String("redis", "", "Redis address for the idempotency records (comma-separated: a cluster's seeds); the charges stay in memory")
	delay := flag.Duration("delay", 50*time.Millisecond, "simulated card-network latency")
	flag.Parse()

	ctx := context.Background()
	cfg := charges.Config{Delay: *delay, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	store, err := withStore(ctx, &cfg, *database, *redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	metrics, err := withMetrics(&cfg)
	if err != nil {
		log.Fatal(err)
	}
	svc, err := charges.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.Handle("/", svc.Handler())
	log.Printf("charges: listening on http://%s (%s); metrics on /metrics", *addr, store)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// withMetrics gives cfg's middleware an OpenTelemetry observer whose
// instruments are read by a Prometheus exporter into a registry of their
// own, and returns the handler that serves that registry. The points
// leave out the otel_scope_* labels: every instrument here is idem's.
func withMetrics(cfg *charges.Config) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	obs, err := otelidem.NewServerObserver(otelidem.Options{
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)),
	})
	if err != nil {
		return nil, err
	}
	cfg.Observer = obs
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// maxConns is the PostgreSQL pool's size. In transactional mode every
// running request holds a connection for its transaction until it
// commits, and its claim, lease renewals and release need connections of
// their own (see the Transactional mode section of server/pgstore's doc).
// pgxpool's default, the larger of 4 and the CPU count, lets four slow
// requests take every connection and starve their own renewals, so the
// service sizes the pool for the requests it expects to run at once.
const maxConns = 32

// withStore points cfg at the store the flags name and says which it is:
// PostgreSQL for a DSN, Redis for addresses, memory otherwise. The pool or
// client lives as long as the process.
func withStore(ctx context.Context, cfg *charges.Config, database, redisAddr string) (string, error) {
	switch {
	case database != "" && redisAddr != "":
		return "", errors.New("-database and -redis are exclusive")
	case redisAddr != "":
		return withRedis(ctx, cfg, redisAddr)
	case database == "":
		return "memory", nil
	}
	pc, err := pgxpool.ParseConfig(database)
	if err != nil {
		return "", err
	}
	pc.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return "", err
	}
	cfg.Pool = pool
	return fmt.Sprintf("PostgreSQL, pool of %d", maxConns), nil
}

// withRedis keeps cfg's idempotency records in the Redis at addrs (more
// than one address: a cluster), under a prefix of this process's own, and
// warns if Redis would evict them.
func withRedis(ctx context.Context, cfg *charges.Config, addrs string) (string, error) {
	seeds := strings.Split(addrs, ",")
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: seeds})
	if err := rdb.Ping(ctx).Err(); err != nil {
		return "", fmt.Errorf("redis %s: %v", addrs, err)
	}
	prefix := "idem:charges:" + rand.Text()[:8] + ":"
	store, err := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	if err != nil {
		return "", err
	}
	// Every setting that lets Redis lose records, most severe first.
	findings, err := store.Findings(ctx)
	if err != nil {
		log.Printf("charges: cannot read Redis's settings: %v", err)
	}
	for _, f := range findings {
		log.Printf("charges: %s: %v", f.Severity, f)
	}
	cfg.Store = store
	kind := "Redis"
	if len(seeds) > 1 {
		kind = "Redis Cluster"
	}
	return fmt.Sprintf("%s at %s, keys %s*; charges in memory", kind, addrs, prefix), nil
}
