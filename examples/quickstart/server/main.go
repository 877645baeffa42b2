// Command server is idem's server quick start: POST /charges behind the
// idem middleware, on PostgreSQL when DATABASE_URL (or -database) names
// one, in memory otherwise.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/pgstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	database := flag.String("database", os.Getenv("DATABASE_URL"), "PostgreSQL DSN; empty: in memory")
	flag.Parse()
	store, err := newStore(context.Background(), *database)
	if err != nil {
		log.Fatal(err)
	}
	protect := server.Middleware(store, server.Options{
		Scope: accountOf, // keys are scoped: one client never replays another's response
	})
	mux := http.NewServeMux()
	mux.Handle("POST /charges", protect(http.HandlerFunc(charge)))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on http://%s", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// newStore returns pgstore in transactional mode, or, without a database,
// memstore: another type, nothing to migrate, one process's memory.
func newStore(ctx context.Context, dsn string) (server.Store, error) {
	if dsn == "" {
		return memstore.New(memstore.Options{}), nil
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	// A running request holds a connection for its transaction, and a
	// repeat needs one briefly to read the record: size the pool above the
	// requests that run at once (pgxpool's default is 4, or the CPU count).
	cfg.MaxConns = 32
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	store, err := pgstore.New(pool, pgstore.Options{Transactional: true})
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx); err != nil { // the embedded schema; safe to run on every start
		return nil, err
	}
	_, err = pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS quickstart_charges
		(id text PRIMARY KEY, account text NOT NULL, amount bigint NOT NULL)`)
	return store, err
}

// accountOf stands in for authentication: the bearer token names the account.
func accountOf(r *http.Request) (string, error) {
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token != "" {
		return token, nil
	}
	return "", errors.New("no bearer token")
}

func charge(w http.ResponseWriter, r *http.Request) {
	var in struct{ Amount int64 }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Amount <= 0 {
		http.Error(w, "want a JSON body with a positive amount", http.StatusBadRequest) // stored and replayed
		return
	}
	id := "ch_" + rand.Text()
	account, _ := accountOf(r) // the middleware has checked it
	// With pgstore the charge commits together with the stored response,
	// or not at all. memstore has no transaction: Tx reports false.
	if tx, ok := pgstore.Tx(r.Context()); ok {
		_, err := tx.Exec(r.Context(), "INSERT INTO quickstart_charges VALUES ($1, $2, $3)", id, account, in.Amount)
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable) // released: a retry runs again
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{"id": id, "amount": in.Amount})
}
