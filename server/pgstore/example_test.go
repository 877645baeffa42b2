package pgstore_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// A payment API whose charges commit together with the stored response.
// The database comes from IDEM_TEST_DATABASE here; a service would use its
// own DSN and the default table.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("IDEM_TEST_DATABASE"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	// Fresh tables, so that this example and the tests never meet.
	table, charges := tableName(), tableName()+"_charges"
	store, err := pgstore.New(pool, pgstore.Options{Table: table, Transactional: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close() // before the pool: deferred calls run last first
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	defer pool.Exec(ctx, "DROP TABLE "+table+", "+charges)
	if _, err := pool.Exec(ctx, "CREATE TABLE "+charges+" (key text, amount integer)"); err != nil {
		log.Fatal(err)
	}

	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, _ := pgstore.Tx(r.Context()) // commits with the stored response
		_, err := tx.Exec(r.Context(), "INSERT INTO "+charges+" VALUES ($1, 1000)", r.Header.Get("Idempotency-Key"))
		if err != nil {
			http.Error(w, "charge failed", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"charged":1000}`)
	})
	idem := server.Middleware(store, server.Options{SingleTenant: true})
	srv := httptest.NewServer(idem(charge))
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":1000}`))
		req.Header.Set("Idempotency-Key", "order-7-payment")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body), "replayed:", resp.Header.Get("Idempotent-Replayed") == "true")
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+charges).Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println("charges:", n)
	// Output:
	// 201 {"charged":1000} replayed: false
	// 201 {"charged":1000} replayed: true
	// charges: 1
}
