// Command charges is a small payments API behind the idem middleware, to
// read in one sitting and try with curl:
//
//	go run ./examples/charges            # in memory
//	go run ./examples/charges -database postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//
//	curl -i -X POST localhost:8080/charges -H 'X-Client-Id: acme' \
//	     -H 'Idempotency-Key: order-1' -d '{"amount": 1000, "currency": "usd"}'
//	# run the POST again: the same charge, with Idempotent-Replayed: true
//	# list acme's charges: still one
//	curl -s localhost:8080/charges -H 'X-Client-Id: acme'
//
// POST /charges needs X-Client-Id (the idempotency scope; 401 without it)
// and Idempotency-Key (400 without it). A non-positive amount is a 400, an
// amount of 402 a declined card (402); both are stored and replayed. A ref
// of "panic" makes the handler fail after writing its charge: the charge is
// rolled back, the key released, and the answer is 500.
package main

import (
	"context"
	"flag"
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
	store := "memory"
	if *database != "" {
		pool, err := pgxpool.New(ctx, *database)
		if err != nil {
			log.Fatal(err)
		}
		defer pool.Close()
		cfg.Pool, store = pool, "PostgreSQL"
	}
	svc, err := charges.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("charges: listening on http://%s (%s)", *addr, store)
	srv := &http.Server{Addr: *addr, Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
