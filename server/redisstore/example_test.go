package redisstore_test

import (
	"context"
	"log"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// The store on a Redis Cluster, checked at start, behind the middleware.
// (Compiled, not run: it needs a cluster.)
func ExampleNew() {
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103"},
	})
	defer rdb.Close()

	store, err := redisstore.New(rdb, redisstore.Options{WaitReplicas: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Check(ctx); err != nil {
		log.Printf("idempotency records can be evicted: %v", err)
	}

	protect := server.Middleware(store, server.Options{
		Scope: func(r *http.Request) (string, error) { return r.Header.Get("X-Account"), nil },
	})
	http.Handle("POST /charges", protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
}
