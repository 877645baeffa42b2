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
	"time"

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

// An operator's view of a store from a DSN alone: the counts by state,
// the running keys, and a purge with progress. The database comes from
// IDEM_TEST_DATABASE here, and the table is a fresh one.
func ExampleOpen() {
	ctx := context.Background()
	table := tableName()
	store, err := pgstore.Open(ctx, os.Getenv("IDEM_TEST_DATABASE"), pgstore.Options{Table: table})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close() // closes the Store's own pool
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	defer dropNow(table) // the example's cleanup

	// Three claims: one running, one completed, one completed whose
	// retention is already over.
	for i, retention := range []time.Duration{0, time.Hour, -time.Second} {
		k := server.Key{Scope: "tenant-1", Key: fmt.Sprint("order-", i)}
		c, err := store.Claim(ctx, k, "fp", time.Minute)
		if err != nil {
			log.Fatal(err)
		}
		if retention != 0 {
			if err := store.Complete(ctx, k, c.Token, server.StoredResponse{Status: 201}, retention); err != nil {
				log.Fatal(err)
			}
		}
	}

	st, err := store.Stats(ctx, "tenant-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("running %d, lapsed %d, completed %d, expired %d, purgeable %d\n",
		st.Running, st.Lapsed, st.Completed, st.Expired, st.Purgeable)
	running, err := store.Running(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range running {
		fmt.Println("running:", r.Key.Scope, r.Key.Key, "lapsed:", r.Lapsed)
	}
	n, err := store.PurgeWithProgress(ctx, 100, func(deleted int) { fmt.Println("purged so far:", deleted) })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("purged:", n)
	// Output:
	// running 1, lapsed 0, completed 1, expired 1, purgeable 1
	// running: tenant-1 order-0 lapsed: false
	// purged so far: 1
	// purged: 1
}
