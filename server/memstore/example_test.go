package memstore_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

func ExampleNew() {
	store := memstore.New(memstore.Options{MaxKeys: 10_000})
	ctx := context.Background()
	k := server.Key{Scope: "acct_1", Key: "order-7"}

	first, _ := store.Claim(ctx, k, "fingerprint", 30*time.Second)
	fmt.Println("first acquired:", first.Acquired)

	again, _ := store.Claim(ctx, k, "fingerprint", 30*time.Second)
	fmt.Println("repeat acquired:", again.Acquired, "completed:", again.Record.Completed)

	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte(`{"order":7}`)}
	if err := store.Complete(ctx, k, first.Token, resp, 24*time.Hour); err != nil {
		fmt.Println(err)
	}
	again, _ = store.Claim(ctx, k, "fingerprint", 30*time.Second)
	fmt.Println("replay:", again.Record.Response.Status, string(again.Record.Response.Body))
	// Output:
	// first acquired: true
	// repeat acquired: false completed: false
	// replay: 201 {"order":7}
}

// A full store refuses new keys, and never forgets a key inside its
// retention to make room; each scope has a share of the store.
func Example_full() {
	store := memstore.New(memstore.Options{MaxKeys: 8}) // two keys a scope
	ctx := context.Background()
	for i := range 3 {
		k := server.Key{Scope: "acct_1", Key: fmt.Sprint("order-", i)}
		_, err := store.Claim(ctx, k, "fingerprint", 30*time.Second)
		fmt.Printf("acct_1 key %d: %v\n", i, err)
	}
	_, err := store.Claim(ctx, server.Key{Scope: "acct_2", Key: "order-0"}, "fingerprint", 30*time.Second)
	fmt.Println("acct_2 key 0:", err)
	// Output:
	// acct_1 key 0: <nil>
	// acct_1 key 1: <nil>
	// acct_1 key 2: idem/memstore: store full: idem/server: store full: the scope holds its share
	// acct_2 key 0: <nil>
}
