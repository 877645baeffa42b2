package idem_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/held"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

func TestStepKey(t *testing.T) {
	t.Parallel()
	plain, err := idem.New(idem.Options{})
	require.NoError(t, err)
	keyed, err := idem.New(idem.Options{DeriveSecret: []byte("s3cret")})
	require.NoError(t, err)
	short, err := idem.New(idem.Options{MaxKeyLen: 26, KeyFormat: idem.ULID})
	require.NoError(t, err)

	in := func(scope, key string) context.Context {
		return held.With(context.Background(), held.Key{Scope: scope, Key: key})
	}
	post := func(ctx context.Context, url string) *http.Request {
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		return r
	}
	key := func(c *idem.Client, ctx context.Context, r *http.Request) string {
		k, ok := c.StepKey(ctx, r)
		require.True(t, ok)
		require.NoError(t, idem.ValidateKey(k))
		return k
	}
	charge := idem.Step(in("acct_1", "order-17"), "charge")
	base := key(plain, charge, nil)

	assert.Equal(t, base, key(plain, idem.Step(in("acct_1", "order-17"), "charge"), nil), "the same step of the same held key: the same key, every run")
	assert.NotEqual(t, base, key(plain, idem.Step(in("acct_1", "order-17"), "refund"), nil), "another step")
	assert.NotEqual(t, base, key(plain, idem.Step(in("acct_2", "order-17"), "charge"), nil), "another scope")
	assert.NotEqual(t, base, key(plain, idem.Step(in("acct_1", "order-18"), "charge"), nil), "another held key")
	assert.NotEqual(t, base, key(keyed, charge, nil), "keyed with the secret")
	assert.NotContains(t, base, "order-17", "the held key is not sent downstream")
	assert.Len(t, base, 36)
	assert.Len(t, key(short, charge, nil), 26, "fits a MaxKeyLen below a UUID's")
	assert.NotEqual(t, idem.DeriveKey("acct_1", "order-17", "charge"), base, "a domain of its own")

	// Without a step, the request's method and path name it: neither the
	// query nor the provider's address (a failover to another host, a
	// service restarted on another port) changes the key.
	unnamed := in("acct_1", "order-17")
	a := key(plain, unnamed, post(unnamed, "https://psp.example/v1/charges?x=1"))
	assert.Equal(t, a, key(plain, unnamed, post(unnamed, "https://psp.example/v1/charges?x=2")))
	assert.Equal(t, a, key(plain, unnamed, post(unnamed, "http://10.0.0.7:8443/v1/charges")), "another address")
	assert.NotEqual(t, a, key(plain, unnamed, post(unnamed, "https://psp.example/v1/refunds")))

	_, ok := plain.StepKey(context.Background(), nil)
	assert.False(t, ok, "no held key: nothing to derive from")
}

// provider is a payment provider behind the idem middleware, counting
// the charges it makes.
type provider struct {
	url     string
	charges atomic.Int64
	calls   atomic.Int64
	keys    chan string
}

func newProvider(t *testing.T) *provider {
	p := &provider{keys: make(chan string, 100)}
	mw := server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.calls.Add(1)
		p.keys <- r.Header.Get("Idempotency-Key")
		mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := p.charges.Add(1)
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "ch_%d", n)
		})).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// TestHandlerDerivesTheProviderKey: service A's handler charges through
// provider B, then fails before answering (its commit failed, say), so
// its key is released and the client's retry runs the handler again. The
// retry derives the same key for B, which replays: one charge. The naive
// handler, which mints a fresh key per call, charges twice. Two named
// steps are two charges.
func TestHandlerDerivesTheProviderKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		call    func(ctx context.Context, c *idem.Client, url string) (*idem.Response, error)
		steps   int
		charges int64
	}{
		{"derived", func(ctx context.Context, c *idem.Client, url string) (*idem.Response, error) {
			req, _ := http.NewRequestWithContext(idem.Step(ctx, "charge"), http.MethodPost, url+"/charges", strings.NewReader(`{"amount":1000}`))
			return c.Do(req)
		}, 1, 1},
		{"naive fresh key", func(ctx context.Context, c *idem.Client, url string) (*idem.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/charges", strings.NewReader(`{"amount":1000}`))
			req.Header.Set("Idempotency-Key", idem.NewKey())
			return c.Do(req)
		}, 1, 2},
		{"two steps", func(ctx context.Context, c *idem.Client, url string) (*idem.Response, error) {
			for _, step := range []string{"charge", "fee"} {
				req, _ := http.NewRequestWithContext(idem.Step(ctx, step), http.MethodPost, url+"/charges", strings.NewReader(`{"amount":1000}`))
				if _, err := c.Do(req); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newProvider(t)
			journal, err := idem.OpenJournal(filepath.Join(t.TempDir(), "a.journal"), idem.JournalOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { journal.Close() })
			toB, err := idem.New(idem.Options{Journal: journal, DeriveSecret: []byte("a's secret")})
			require.NoError(t, err)

			var runs atomic.Int64
			a := server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true})(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if _, err := tc.call(r.Context(), toB, b.url); err != nil {
						http.Error(w, "provider failed", http.StatusBadGateway)
						return
					}
					if runs.Add(1) == 1 {
						http.Error(w, "commit failed", http.StatusInternalServerError) // released: the retry runs again
						return
					}
					w.WriteHeader(http.StatusCreated)
				}))
			srvA := httptest.NewServer(a)
			t.Cleanup(srvA.Close)

			toA, err := idem.New(idem.Options{BaseDelay: 1, MaxDelay: 1})
			require.NoError(t, err)
			req, _ := http.NewRequest(http.MethodPost, srvA.URL+"/orders", strings.NewReader(`{"order":17}`))
			req.Header.Set("Idempotency-Key", "order-17")
			resp, err := toA.Do(req)
			require.NoError(t, err)
			assert.Equal(t, http.StatusCreated, resp.StatusCode)
			assert.Equal(t, int64(2), runs.Load(), "A's handler ran twice")
			assert.Equal(t, tc.charges, b.charges.Load(), "charges at the provider")

			if tc.name == "derived" {
				// The re-run was answered from A's journal: the provider saw
				// the key once, and it is the derived one.
				assert.Equal(t, int64(1), b.calls.Load(), "the second run's call was answered from the journal")
				k := <-b.keys
				want, _ := toB.StepKey(idem.Step(held.With(context.Background(), held.Key{Key: "order-17"}), "charge"), nil)
				assert.Equal(t, want, k)
				op, ok, err := journal.Lookup(k)
				require.NoError(t, err)
				require.True(t, ok)
				assert.Equal(t, idem.Completed, op.State, "journaled like any operation")
			}
		})
	}
}

// A handler calls a payment provider with a key derived from the one its
// request holds. Its first run fails after the provider charged (its own
// write failed, say), so its key is released and the client's retry runs
// it again: the provider sees the same key and replays instead of
// charging twice.
func ExampleStep() {
	// The provider, behind idem's middleware, as any API that honours keys.
	var charges atomic.Int64
	psp := httptest.NewServer(server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"id":"ch_%d"}`, charges.Add(1))
		})))
	defer psp.Close()

	toPSP, _ := idem.New(idem.Options{DeriveSecret: []byte("from your secret store")})
	var runs atomic.Int64
	order := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// r.Context() carries the key this request holds, and is not
		// cancelled if the client goes away. Step names the call; Do
		// derives the provider's key from both.
		ctx := idem.Step(r.Context(), "charge")
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, psp.URL+"/v1/charges", strings.NewReader(`{"amount":1000}`))
		if _, err := toPSP.Do(req); err != nil {
			http.Error(w, "payment provider unavailable", http.StatusBadGateway)
			return
		}
		if runs.Add(1) == 1 {
			http.Error(w, "database write failed", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	svc := httptest.NewServer(server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true})(order))
	defer svc.Close()

	client, _ := idem.New(idem.Options{BaseDelay: time.Millisecond})
	req, _ := http.NewRequest(http.MethodPost, svc.URL+"/orders", strings.NewReader(`{"order":17}`))
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, "after", runs.Load(), "runs;", "provider charges:", charges.Load())
	// Output: 201 after 2 runs; provider charges: 1
}

// The README's section on calling a provider quotes ExampleStep whole.
func TestReadmeQuotesExampleStep(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("steps_test.go")
	require.NoError(t, err)
	s := string(src)
	i := strings.Index(s, "// A handler calls a payment provider with a key derived")
	j := strings.Index(s[i:], "\n}\n") + i + 3
	require.Positive(t, i)
	assert.Contains(t, string(readme), "```go\n"+s[i:j]+"```\n", "README.md must quote ExampleStep whole")
}
