package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// Routes of one service take options of their own: payments are the same
// request by amount and currency whatever timestamp the client puts in a
// retry, and their customer must not change; notes keep the default.
func ExampleOptions_routes() {
	runs := 0
	created := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"run":%d}`, runs)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /payments", created)
	mux.Handle("POST /notes", created)

	mw := server.Middleware(memstore.New(memstore.Options{}), server.Options{
		SingleTenant: true,
		Routes: map[string]server.RouteOptions{
			"POST /payments": {
				Fingerprint: server.FingerprintRule{
					Select: []string{"/amount", "/currency"},
					Check:  []string{"/customer"},
				},
				Retention: 7 * 24 * time.Hour,
			},
		},
	})
	srv := httptest.NewServer(mw(mux))
	defer srv.Close()

	post := func(path, key, body string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusUnprocessableEntity {
			var p struct{ Detail string }
			json.Unmarshal(b, &p)
			b = []byte(p.Detail)
		}
		fmt.Println(path, resp.StatusCode, resp.Header.Get(server.ReplayedHeader), string(b))
	}
	post("/payments", "p1", `{"amount":100,"currency":"eur","customer":"c1","sent_at":"10:00:00"}`)
	post("/payments", "p1", `{"amount":100,"currency":"eur","customer":"c1","sent_at":"10:00:04"}`)
	post("/payments", "p1", `{"amount":100,"currency":"eur","customer":"c2"}`)
	post("/notes", "n1", `{"text":"hi","sent_at":"10:00:00"}`)
	post("/notes", "n1", `{"text":"hi","sent_at":"10:00:04"}`)
	// Output:
	// /payments 201  {"run":1}
	// /payments 201 true {"run":1}
	// /payments 422  This idempotency key was used with the same request but for a field that must not change on a retry. Send the first request's value, or use a new key for a new operation.
	// /notes 201  {"run":2}
	// /notes 422  This idempotency key was used with a different request. Use a new key for a new operation.
}
