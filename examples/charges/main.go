// Command charges is a small payments API behind the idem middleware, to
// read in one sitting and try with curl:
//
//	go run ./examples/charges            # in memory
//	go run ./examples/charges -database postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//
//	curl -i -X POST localhost:8080/charges -H 'X-Client-Id: acme' \
//	     -H 'Idempotency-Key: order-1' -H 'Content-Type: application/json' \
//	     -d '{"amount": 1000, "currency": "usd"}'
//	# run the POST again: the same charge, with Idempotent-Replayed: true
//	# list acme's charges: still one
//	curl -s localhost:8080/charges -H 'X-Client-Id: acme'
//
// POST /charges needs X-Client-Id (the idempotency scope; 401 without it)
// and Idempotency-Key (400 without it). A non-positive amount is a 400, an
// amount of 402 a declined card (402); both are stored and replayed. A ref
// of "panic" makes the handler fail after writing its charge: the charge is
// rolled back, the key released, and the answer is 500. Send JSON with
// Content-Type: application/json: the middleware then compares bodies as
// JSON, so a retry with its keys in another order is the same request;
// without it the body counts byte for byte.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/internal/charges"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	database := flag.String("database", "", "PostgreSQL DSN; empty keeps everything in memory")
	delay := flag.Duration("delay", 50*time.Millisecond, "simulated card-network latency")
	flag.Parse()

	ctx := context.Background()
	cfg := charges.Config{Delay: *delay, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	store, err := withStore(ctx, &cfg, *database)
	if err != nil {
		log.Fatal(err)
	}
	svc, err := charges.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("charges: listening on http://%s (%s)", *addr, store)
	srv := &http.Server{Addr: *addr, Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
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
// PostgreSQL for a DSN, memory otherwise. The pool lives as long as the
// process.
func withStore(ctx context.Context, cfg *charges.Config, database string) (string, error) {
	if database == "" {
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
