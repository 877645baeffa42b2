package otelidem_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemhq/idem/otelidem"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// charges is a handler that counts its executions and answers 201, or
// blocks until release is closed when the body asks it to.
type charges struct {
	runs    atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func newCharges() *charges {
	return &charges{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (c *charges) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.runs.Add(1)
	body, _ := io.ReadAll(r.Body)
	if strings.Contains(string(body), "block") {
		c.entered <- struct{}{}
		<-c.release
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":"ch_%d"}`, c.runs.Load())
}

// post sends a POST /charges with key (none if empty) and a JSON body
// through h, and returns the status.
func post(h http.Handler, key, body string) int {
	req := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Client-Id", "secret-client")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func clientScope(r *http.Request) (string, error) { return r.Header.Get("X-Client-Id"), nil }

// TestServerRequests drives requests through the middleware on memstore,
// behind a ServeMux pattern, and reads exact counts of each result, the
// claims, and the store's operations.
func TestServerRequests(t *testing.T) {
	t.Parallel()
	tel := newTelemetry()
	app := newCharges()
	mux := http.NewServeMux()
	mux.Handle("POST /charges", server.Middleware(newMemory(), server.Options{
		Scope: clientScope, Observer: tel.observer(t, false),
	})(app))

	const body = `{"amount":1000,"currency":"usd"}`
	steps := []struct {
		key, body string
		status    int
	}{
		{"secret-key-1", body, 201},                                  // executed
		{"secret-key-1", body, 201},                                  // replayed
		{"secret-key-1", `{ "currency":"usd", "amount":1000 }`, 201}, // replayed: the same JSON
		{"secret-key-1", `{"amount":2000,"currency":"usd"}`, 422},    // key_reused
		{"", body, 400},             // key_missing
		{"secret-key-2", body, 201}, // executed
	}
	for i, s := range steps {
		require.Equal(t, s.status, post(mux, s.key, s.body), "step %d", i)
	}
	// A repeat while the first request with its key still runs.
	done := make(chan int, 1)
	go func() { done <- post(mux, "secret-key-3", `{"block":true}`) }()
	<-app.entered
	require.Equal(t, http.StatusConflict, post(mux, "secret-key-3", `{"block":true}`))
	got := tel.collect(t)
	assert.Equal(t, points{"": 1}, got[otelidem.ServerClaimsActive], "one claim running")
	close(app.release)
	require.Equal(t, http.StatusCreated, <-done)

	got = tel.collect(t)
	const attrs = "http.request.method=POST,http.route=/charges,idem.result="
	assert.Equal(t, points{
		attrs + "executed":    3,
		attrs + "replayed":    2,
		attrs + "key_reused":  1,
		attrs + "key_missing": 1,
		attrs + "in_flight":   1,
	}, got[otelidem.ServerRequests])
	assert.Equal(t, int64(3), app.runs.Load(), "executions counted are the handler's")
	assert.Equal(t, points{"": 0}, got[otelidem.ServerClaimsActive], "every claim ended")
	assert.Equal(t, points{
		"db.operation.name=claim,db.system.name=memory":    7,
		"db.operation.name=complete,db.system.name=memory": 3,
	}, got[otelidem.StoreOperationDuration])
	assert.NotContains(t, got, otelidem.ServerTakeovers, "no takeover, no point")
	assert.NotContains(t, fmt.Sprint(got), "secret", "no key or scope in any attribute")
}

// memory is memstore, naming its database system.
type memory struct{ *memstore.Store }

func newMemory() memory { return memory{memstore.New(memstore.Options{})} }

func (memory) StoreSystem() string { return "memory" }

// outage is a transient store failure of a type of its own.
type outage struct{}

func (*outage) Error() string { return "store: connection reset" }

// renewFailing is memstore with a Renew that fails with err. If err is
// ErrLeaseLost, the key is released first, as if another worker had
// taken it over and finished, so the store's fencing agrees.
type renewFailing struct {
	*memstore.Store
	err error
}

func (s renewFailing) Renew(ctx context.Context, k server.Key, token string, _ time.Duration) error {
	if errors.Is(s.err, server.ErrLeaseLost) {
		s.Release(ctx, k, token)
	}
	return s.err
}

// TestServerLeaseRenewalsFail runs a request for longer than its lease on
// synctest's clock while the store fails its renewals: the renewals are
// counted with their error type, and the request is counted lease_lost.
// When the store says the lease is lost, the handler is stopped at the
// first renewal. When renewals fail for another reason and the handler
// is stuck (it does not heed its context), a retry takes the lapsed key
// over and is executed, and the first request's fenced completion finds
// the key gone.
func TestServerLeaseRenewalsFail(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	tests := []struct {
		name      string
		renewErr  error
		errType   string
		renewals  int64
		stuck     bool // the handler does not heed its context; a retry takes the key over
		takeovers int64
		results   points
	}{
		{"the store says the lease is lost", fmt.Errorf("memstore: %w", server.ErrLeaseLost), "lease_lost", 1, false, 0,
			points{"http.request.method=POST,idem.result=lease_lost": 1}},
		{"the store fails", &outage{}, "*otelidem_test.outage", 6, true, 1,
			points{"http.request.method=POST,idem.result=lease_lost": 1, "http.request.method=POST,idem.result=executed": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				tel := newTelemetry()
				var runs atomic.Int64
				store := renewFailing{memstore.New(memstore.Options{}), tt.renewErr}
				h := server.Middleware(store, server.Options{SingleTenant: true, Lease: lease, Observer: tel.observer(t, false)})(
					http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						switch {
						case runs.Add(1) > 1:
						case tt.stuck:
							time.Sleep(2 * lease)
						default:
							select {
							case <-r.Context().Done():
							case <-time.After(2 * lease):
							}
						}
						w.WriteHeader(http.StatusCreated)
					}))
				first := make(chan int, 1)
				go func() { first <- post(h, "k", "{}") }()
				if tt.stuck {
					time.Sleep(lease + lease/2) // the first's lease has lapsed, unrenewed
					assert.Equal(t, http.StatusCreated, post(h, "k", "{}"), "the retry takes the key over")
				}
				assert.Equal(t, http.StatusConflict, <-first, "the first request's outcome is not recorded")
				synctest.Wait()

				got := tel.collect(t)
				assert.Equal(t, tt.results, got[otelidem.ServerRequests])
				assert.Equal(t, points{"error.type=" + tt.errType: tt.renewals}, got[otelidem.ServerLeaseRenewals])
				if tt.takeovers > 0 {
					assert.Equal(t, points{"": tt.takeovers}, got[otelidem.ServerTakeovers])
				}
				assert.Equal(t, points{"": 0}, got[otelidem.ServerClaimsActive])
				time.Sleep(time.Hour) // the middleware's renewer ends at a tick that finds nothing to renew
				synctest.Wait()
			})
		})
	}
}

// fullStore refuses every new key, as a full store does.
type fullStore struct{ memory }

func (fullStore) Claim(context.Context, server.Key, string, time.Duration) (server.Claim, error) {
	return server.Claim{}, fmt.Errorf("teststore: store full: %w", server.ErrStoreFull)
}

// TestServerStoreFull: a full store's refusals are counted store_full,
// and its claims carry error.type store_full.
func TestServerStoreFull(t *testing.T) {
	t.Parallel()
	tel := newTelemetry()
	h := server.Middleware(fullStore{newMemory()}, server.Options{SingleTenant: true, Observer: tel.observer(t, false)})(newCharges())
	for i := range 3 {
		require.Equal(t, http.StatusServiceUnavailable, post(h, fmt.Sprint("k", i), "{}"))
	}
	got := tel.collect(t)
	assert.Equal(t, points{"http.request.method=POST,idem.result=store_full": 3}, got[otelidem.ServerRequests], "no route: no ServeMux pattern")
	assert.Equal(t, points{"db.operation.name=claim,db.system.name=memory,error.type=store_full": 3},
		got[otelidem.StoreOperationDuration])
}

// TestServerRunOnce: RunOnce's calls are counted with their result alone.
func TestServerRunOnce(t *testing.T) {
	t.Parallel()
	tel := newTelemetry()
	store := memstore.New(memstore.Options{})
	opts := server.RunOptions{Observer: tel.observer(t, false)}
	k := server.Key{Scope: "queue", Key: "msg-1"}
	work := func(context.Context) ([]byte, error) { return []byte("ok"), nil }
	fail := func(context.Context) ([]byte, error) { return nil, errors.New("work failed") }
	server.RunOnce(context.Background(), store, k, "fp", fail, opts)
	server.RunOnce(context.Background(), store, k, "fp", work, opts)
	server.RunOnce(context.Background(), store, k, "fp", work, opts)
	server.RunOnce(context.Background(), store, k, "other", work, opts)
	assert.Equal(t, points{
		"idem.result=released":   1,
		"idem.result=executed":   1,
		"idem.result=replayed":   1,
		"idem.result=key_reused": 1,
	}, tel.collect(t)[otelidem.ServerRequests])
}

// TestServerSpans: each claimed request gets one idem.claim span, a child
// of the span in the request's context; the key is on it only when asked
// for; a failed request's span is an error.
func TestServerSpans(t *testing.T) {
	t.Parallel()
	for _, keyOnSpans := range []bool{false, true} {
		t.Run(fmt.Sprint("KeyOnSpans=", keyOnSpans), func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry()
			var inner trace.SpanContext
			h := server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true, Observer: tel.observer(t, keyOnSpans)})(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					inner = trace.SpanContextFromContext(r.Context())
					if r.Header.Get("X-Panic") != "" {
						panic("boom")
					}
					w.WriteHeader(http.StatusCreated)
				}))
			serve := func(key string, panics bool) trace.SpanContext {
				ctx, outer := tel.traces.Tracer("test").Start(context.Background(), "POST /charges") // as otelhttp would
				defer outer.End()
				req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/charges", strings.NewReader("{}"))
				req.Header.Set("Idempotency-Key", key)
				if panics {
					req.Header.Set("X-Panic", "1")
				}
				h.ServeHTTP(httptest.NewRecorder(), req)
				return outer.SpanContext()
			}
			parent := serve("key-1", false)
			serve("key-1", false) // a replay: no claim, no span
			serve("key-2", true)

			var claims []attribute.Set
			for _, s := range tel.spans.Ended() {
				if s.Name() != otelidem.ServerClaimSpan {
					continue
				}
				claims = append(claims, attribute.NewSet(s.Attributes()...))
				if len(claims) == 1 {
					assert.Equal(t, parent.SpanID(), s.Parent().SpanID(), "a child of the request's span")
					assert.Equal(t, codes.Unset, s.Status().Code)
				} else {
					assert.Equal(t, codes.Error, s.Status().Code)
				}
				assert.Equal(t, trace.SpanKindInternal, s.SpanKind())
			}
			require.Len(t, claims, 2)
			assert.NotEqual(t, parent.SpanID(), inner.SpanID(), "the handler runs inside the claim's span")

			enc := attribute.DefaultEncoder()
			want := []string{"idem.result=executed,idem.takeover=false", "error.type=handler_failed,idem.result=handler_failed,idem.takeover=false"}
			if keyOnSpans {
				want = []string{"idem.key=key-1,idem.result=executed,idem.takeover=false", "error.type=handler_failed,idem.key=key-2,idem.result=handler_failed,idem.takeover=false"}
			}
			assert.Equal(t, want, []string{claims[0].Encoded(enc), claims[1].Encoded(enc)})
		})
	}
}
