package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

func ExampleMiddleware() {
	orders := 0
	createOrder := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		orders++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"order":%d}`, orders)
	})

	once := server.Middleware(memstore.New(memstore.Options{}), server.Options{
		// Keys belong to the caller's account, so two accounts never share one.
		Scope: func(r *http.Request) (string, error) {
			if account := r.Header.Get("X-Account"); account != "" {
				return account, nil
			}
			return "", errors.New("unauthenticated")
		},
	})
	srv := httptest.NewServer(once(createOrder))
	defer srv.Close()

	post := func(key, body string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Account", "acct_1")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), string(b))
	}

	post("order-7", `{"sku":"tea","qty":2}`)
	post("order-7", `{"qty": 2, "sku": "tea"}`) // the same request: replayed
	post("order-7", `{"sku":"tea","qty":3}`)    // another request under the key
	fmt.Println("orders created:", orders)
	// Output:
	// 201  {"order":1}
	// 201 true {"order":1}
	// 422  {"type":"https://idem.dev/problems/key-reused","title":"Idempotency key reused","status":422,"detail":"This idempotency key was used with a different request. Use a new key for a new operation."}
	// orders created: 1
}

func ExampleRunOnce() {
	store := memstore.New(memstore.Options{})
	charge := func(ctx context.Context) ([]byte, error) {
		fmt.Println("charging card")
		return []byte("charge ch_1"), nil
	}

	// A queue delivers the same message twice.
	for range 2 {
		k := server.Key{Scope: "payments", Key: "msg-42"}
		result, replayed, err := server.RunOnce(context.Background(), store, k, "charge:100:EUR", charge, server.RunOptions{})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s (replayed: %v)\n", result, replayed)
	}
	// Output:
	// charging card
	// charge ch_1 (replayed: false)
	// charge ch_1 (replayed: true)
}

func ExampleParseKey() {
	for _, v := range []string{`order-7`, `"order-7"`, `"a\"b"`, ``} {
		k, err := server.ParseKey(v)
		fmt.Printf("%-10s %q %v\n", v, k, err)
	}
	// Output:
	// order-7    "order-7" <nil>
	// "order-7"  "order-7" <nil>
	// "a\"b"     "a\"b" <nil>
	//            "" idem: invalid idempotency key "": empty
}
