package etcdstore_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
)

// A charge endpoint behind the middleware on an etcd cluster: the first
// request runs the handler, its retry is replayed from the record.
func ExampleNew() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	defer cli.Close()
	store, err := etcdstore.New(cli, etcdstore.Options{Prefix: "example/" + fmt.Sprint(time.Now().UnixNano()) + "/"})
	if err != nil {
		panic(err)
	}
	charges := 0
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%d}`, charges)
	})
	h := server.Middleware(store, server.Options{SingleTenant: true})(charge)

	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{"amount":100}`))
		req.Header.Set("Idempotency-Key", "order-42")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body, "replayed:", rec.Header().Get(server.ReplayedHeader) == "true")
	}
	fmt.Println("charges:", charges)
	// Output:
	// 201 {"charge":1} replayed: false
	// 201 {"charge":1} replayed: true
	// charges: 1
}
