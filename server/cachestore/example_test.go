package cachestore_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/cachestore"
	"github.com/idemhq/idem/server/memstore"
)

// A cache in front of a shared store (memstore stands in for pgstore or
// redisstore here): the first repeat of a key reads the store, the later
// ones are answered from memory.
func ExampleNew() {
	shared := memstore.New(memstore.Options{})
	store, err := cachestore.New(shared, cachestore.Options{MaxEntries: 50_000, MaxBytes: 128 << 20})
	if err != nil {
		panic(err)
	}
	h := server.Middleware(store, server.Options{SingleTenant: true})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	for range 4 {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "order-7")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	st := store.Stats()
	fmt.Printf("store claims %d, answered from the cache %d\n", st.Misses, st.Hits)
	// Output:
	// store claims 2, answered from the cache 2
}
