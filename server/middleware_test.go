package server_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// step is one request of a contract case and what must come back.
type step struct {
	call
	status   int    // -1: the connection is dropped
	problem  string // the problem type, when the middleware answers itself
	replayed bool
	calls    int64 // handler executions after this step
	sameAs   int   // 1-based index of an earlier step whose body this one repeats
}

// status makes the handler answer with s.
func status(s int) map[string]string { return map[string]string{"X-Status": strconv.Itoa(s)} }

const jsonType = "application/json"

func TestWireContract(t *testing.T) {
	t.Parallel()
	const k = "{key}" // replaced by a fresh key in each case
	long := strings.Repeat("k", 256)
	tests := []struct {
		name  string
		opts  server.Options
		steps []step
	}{
		{"missing key", server.Options{}, []step{
			{call: call{}, status: 400, problem: server.ProblemKeyMissing},
		}},
		{"missing key, optional", server.Options{Optional: true}, []step{
			{call: call{}, status: 201, calls: 1},
			{call: call{}, status: 201, calls: 2},
		}},
		{"GET passes through", server.Options{}, []step{
			{call: call{method: "GET", key: k}, status: 201, calls: 1},
			{call: call{method: "GET", key: k}, status: 201, calls: 2},
		}},
		{"PUT passes through by default", server.Options{}, []step{
			{call: call{method: "PUT", key: k}, status: 201, calls: 1},
			{call: call{method: "PUT", key: k}, status: 201, calls: 2},
		}},
		{"PUT handled when listed", server.Options{Methods: []string{"PUT"}}, []step{
			{call: call{method: "PUT", key: k}, status: 201, calls: 1},
			{call: call{method: "PUT", key: k}, status: 201, replayed: true, calls: 1, sameAs: 1},
			{call: call{method: "POST"}, status: 201, calls: 2},
		}},
		{"key too long", server.Options{}, []step{
			{call: call{key: long}, status: 400, problem: server.ProblemKeyInvalid},
		}},
		{"key badly quoted", server.Options{}, []step{
			{call: call{key: `"` + k}, status: 400, problem: server.ProblemKeyInvalid},
		}},
		{"key sent twice", server.Options{}, []step{
			{call: call{keys: []string{k, k}}, status: 400, problem: server.ProblemKeyInvalid},
		}},
		{"first runs, repeat replays", server.Options{}, []step{
			{call: call{key: k}, status: 201, calls: 1},
			{call: call{key: k}, status: 201, replayed: true, calls: 1, sameAs: 1},
			{call: call{key: k}, status: 201, replayed: true, calls: 1, sameAs: 1},
		}},
		{"quoted and bare are one key", server.Options{}, []step{
			{call: call{key: `"` + k + `"`}, status: 201, calls: 1},
			{call: call{key: k}, status: 201, replayed: true, calls: 1, sameAs: 1},
		}},
		{"scopes are separate", server.Options{}, []step{
			{call: call{key: k, tenant: "t1"}, status: 201, calls: 1},
			{call: call{key: k, tenant: "t2"}, status: 201, calls: 2},
			{call: call{key: k, tenant: "t1"}, status: 201, replayed: true, calls: 2, sameAs: 1},
			{call: call{key: k, tenant: "t2"}, status: 201, replayed: true, calls: 2, sameAs: 2},
		}},
		{"single tenant", server.Options{SingleTenant: true}, []step{
			{call: call{key: k, tenant: "-"}, status: 201, calls: 1},
			{call: call{key: k, tenant: "other"}, status: 201, replayed: true, calls: 1, sameAs: 1},
		}},
		{"no scope", server.Options{}, []step{
			{call: call{key: k, tenant: "-"}, status: 401, problem: server.ProblemScopeUnavailable},
		}},
		{"JSON member order and whitespace", server.Options{}, []step{
			{call: call{key: k, contentType: jsonType, body: `{"a":1,"b":[1,2]}`}, status: 201, calls: 1},
			{call: call{key: k, contentType: jsonType, body: "{ \"b\": [1, 2],\n \"a\": 1 }"}, status: 201, replayed: true, calls: 1, sameAs: 1},
			{call: call{key: k, contentType: jsonType, body: `{"a":1,"b":[2,1]}`}, status: 422, problem: server.ProblemKeyReused, calls: 1},
		}},
		{"query in fingerprint", server.Options{}, []step{
			{call: call{key: k, path: "/orders?a=1&b=2"}, status: 201, calls: 1},
			{call: call{key: k, path: "/orders?b=2&a=1"}, status: 201, replayed: true, calls: 1, sameAs: 1},
			{call: call{key: k, path: "/orders?a=1&b=3"}, status: 422, problem: server.ProblemKeyReused, calls: 1},
		}},
		{"path in fingerprint", server.Options{}, []step{
			{call: call{key: k, path: "/orders/1"}, status: 201, calls: 1},
			{call: call{key: k, path: "/orders/2"}, status: 422, problem: server.ProblemKeyReused, calls: 1},
		}},
		{"method in fingerprint", server.Options{}, []step{
			{call: call{key: k, method: "POST"}, status: 201, calls: 1},
			{call: call{key: k, method: "PATCH"}, status: 422, problem: server.ProblemKeyReused, calls: 1},
		}},
		{"body in fingerprint", server.Options{}, []step{
			{call: call{key: k, body: "a"}, status: 201, calls: 1},
			{call: call{key: k, body: "b"}, status: 422, problem: server.ProblemKeyReused, calls: 1},
		}},
		{"body over the limit", server.Options{}, []step{
			{call: call{key: k, body: strings.Repeat("x", 1025)}, status: 413, problem: server.ProblemBodyTooLarge},
			{call: call{key: k, body: strings.Repeat("x", 1024)}, status: 201, calls: 1},
		}},
		{"5xx released", server.Options{}, []step{
			{call: call{key: k, header: status(500)}, status: 500, calls: 1},
			{call: call{key: k}, status: 201, calls: 2},
			{call: call{key: k}, status: 201, replayed: true, calls: 2, sameAs: 2},
		}},
		{"5xx stored with StoreServerErrors", server.Options{StoreServerErrors: true}, []step{
			{call: call{key: k, header: status(500)}, status: 500, calls: 1},
			{call: call{key: k}, status: 500, replayed: true, calls: 1, sameAs: 1},
		}},
		{"503 released even with StoreServerErrors", server.Options{StoreServerErrors: true}, []step{
			{call: call{key: k, header: status(503)}, status: 503, calls: 1},
			{call: call{key: k}, status: 201, calls: 2},
		}},
		{"408 released", server.Options{}, []step{
			{call: call{key: k, header: status(408)}, status: 408, calls: 1},
			{call: call{key: k}, status: 201, calls: 2},
		}},
		{"425 released", server.Options{}, []step{
			{call: call{key: k, header: status(425)}, status: 425, calls: 1},
			{call: call{key: k}, status: 201, calls: 2},
		}},
		{"429 released", server.Options{}, []step{
			{call: call{key: k, header: status(429)}, status: 429, calls: 1},
			{call: call{key: k}, status: 201, calls: 2},
		}},
		{"4xx stored", server.Options{}, []step{
			{call: call{key: k, header: status(404)}, status: 404, calls: 1},
			{call: call{key: k}, status: 404, replayed: true, calls: 1, sameAs: 1},
		}},
		{"handler's 422 stored", server.Options{}, []step{
			{call: call{key: k, header: status(422)}, status: 422, calls: 1},
			{call: call{key: k}, status: 422, replayed: true, calls: 1, sameAs: 1},
		}},
		{"3xx stored", server.Options{}, []step{
			{call: call{key: k, header: status(303)}, status: 303, calls: 1},
			{call: call{key: k}, status: 303, replayed: true, calls: 1, sameAs: 1},
		}},
		{"200 stored", server.Options{}, []step{
			{call: call{key: k, header: status(200)}, status: 200, calls: 1},
			{call: call{key: k}, status: 200, replayed: true, calls: 1, sameAs: 1},
		}},
		{"panic released", server.Options{}, []step{
			{call: call{key: k, header: map[string]string{"X-Behave": "panic"}}, status: 500, problem: server.ProblemHandlerFailed, calls: 1},
			{call: call{key: k}, status: 201, calls: 2},
			{call: call{key: k}, status: 201, replayed: true, calls: 2, sameAs: 2},
		}},
		{"abort released", server.Options{}, []step{
			{call: call{key: k, header: map[string]string{"X-Behave": "abort"}}, status: -1, calls: 1},
			{call: call{key: k}, status: 201, calls: 2},
		}},
		{"custom header name", server.Options{Header: "x-idempotency-key"}, []step{
			{call: call{key: k}, status: 400, problem: server.ProblemKeyMissing},
			{call: call{header: map[string]string{"X-Idempotency-Key": k}}, status: 201, calls: 1},
			{call: call{header: map[string]string{"X-Idempotency-Key": k}}, status: 201, replayed: true, calls: 1, sameAs: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.opts, nil)
			key := newKey()
			var replies []reply
			for i, s := range tt.steps {
				c := s.call
				c.key = strings.ReplaceAll(c.key, k, key)
				for j := range c.keys {
					c.keys[j] = strings.ReplaceAll(c.keys[j], k, key)
				}
				for name, v := range c.header {
					if v == k {
						c.header = map[string]string{name: key}
					}
				}
				r := h.do(c)
				replies = append(replies, r)
				switch {
				case s.status == -1:
					require.Error(t, r.err, "step %d", i+1)
				case s.problem != "":
					requireProblem(t, r, s.status, s.problem)
				default:
					require.NoError(t, r.err)
					require.Equal(t, s.status, r.status, "step %d: %s", i+1, r.body)
					assert.Equal(t, s.replayed, r.replayed(), "step %d replayed", i+1)
				}
				if s.sameAs > 0 {
					assert.Equal(t, replies[s.sameAs-1].body, r.body, "step %d replays step %d", i+1, s.sameAs)
				}
				assert.Equal(t, s.calls, h.app.calls.Load(), "handler executions after step %d", i+1)
			}
		})
	}
}

func TestReplayHeaders(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{}, nil)
	key := newKey()
	first := h.do(call{key: key, body: "hello"})
	second := h.do(call{key: key, body: "hello"})
	require.Equal(t, 201, first.status)
	require.Equal(t, 201, second.status)

	assert.Equal(t, "session=secret", first.header.Get("Set-Cookie"), "the first answer is the handler's own")
	assert.Empty(t, second.header.Values("Set-Cookie"), "a cookie is never replayed")
	assert.Empty(t, first.header.Get(server.ReplayedHeader))
	assert.Equal(t, "true", second.header.Get(server.ReplayedHeader))
	for _, name := range []string{"Content-Type", "X-Call", "Location"} {
		assert.Equal(t, first.header.Values(name), second.header.Values(name), name)
	}
	assert.Equal(t, []string{"a", "b"}, second.header.Values("X-Multi"))
	assert.Equal(t, strconv.Itoa(len(first.body)), second.header.Get("Content-Length"))
	assert.NotEmpty(t, second.header.Get("Date"), "Date is the replay's own")
	assert.Equal(t, first.body, second.body)
}

func TestHandlerSeesBody(t *testing.T) {
	t.Parallel()
	var got []byte
	var gotLen int64
	mw := server.Middleware(newMemstore(), server.Options{SingleTenant: true})
	srv := newServer(t, mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 100)
		n, _ := r.Body.Read(b)
		got, gotLen = b[:n], r.ContentLength
		w.WriteHeader(http.StatusAccepted)
	})))
	req, err := http.NewRequest("POST", srv.URL, strings.NewReader("payload"))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "k")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, "payload", string(got))
	assert.Equal(t, int64(7), gotLen)
}

func TestBodyOfUnknownLengthOverLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{SingleTenant: true}, nil)
	for _, size := range []int{1024, 1025, 4096} {
		req, err := http.NewRequest("POST", h.srv.URL, struct{ *strings.Reader }{strings.NewReader(strings.Repeat("x", size))})
		require.NoError(t, err)
		require.Equal(t, int64(0), req.ContentLength, "a body of unknown length is sent chunked")
		req.Header.Set("Idempotency-Key", newKey())
		resp, err := h.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if size <= 1024 {
			assert.Equal(t, 201, resp.StatusCode, "size %d", size)
		} else {
			assert.Equal(t, 413, resp.StatusCode, "size %d", size)
		}
	}
}

func TestMiddlewarePanicsOnBadOptions(t *testing.T) {
	t.Parallel()
	scope := func(*http.Request) (string, error) { return "s", nil }
	tests := []struct {
		name  string
		store server.Store
		opts  server.Options
	}{
		{"nil store", nil, server.Options{SingleTenant: true}},
		{"no scope", newMemstore(), server.Options{}},
		{"scope and single tenant", newMemstore(), server.Options{Scope: scope, SingleTenant: true}},
		{"negative lease", newMemstore(), server.Options{SingleTenant: true, Lease: -1}},
		{"negative body limit", newMemstore(), server.Options{SingleTenant: true, MaxBody: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Panics(t, func() { server.Middleware(tt.store, tt.opts) })
		})
	}
	assert.NotPanics(t, func() { server.Middleware(newMemstore(), server.Options{SingleTenant: true}) })
}

// TestProblemsNameTheHeaderAndTheLimit: the answers to a missing or
// malformed key name the configured header field, and the answer to a
// body over the limit names the limit, in fixed texts.
func TestProblemsNameTheHeaderAndTheLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		opts              server.Options
		header, limit     string
		bodySize, maxBody int
	}{
		{"defaults", server.Options{SingleTenant: true}, "Idempotency-Key", "over 1 MiB", 1<<20 + 1, 0},
		{"configured", server.Options{SingleTenant: true, Header: "x-request-id", MaxBody: 1536}, "X-Request-Id", "over 1536 bytes", 1537, 1536},
		{"KiB", server.Options{SingleTenant: true, MaxBody: 64 << 10}, "Idempotency-Key", "over 64 KiB", 64<<10 + 1, 64 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := server.Middleware(newMemstore(), tt.opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
			}))
			serve := func(key, body string) *httptest.ResponseRecorder {
				req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
				if key != "" {
					req.Header.Set(tt.header, key)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec
			}
			missing := serve("", "x")
			require.Equal(t, http.StatusBadRequest, missing.Code)
			assert.Contains(t, missing.Body.String(), "must carry an "+tt.header+" header")
			invalid := serve(strings.Repeat("k", server.MaxKeyLen+1), "x")
			require.Equal(t, http.StatusBadRequest, invalid.Code)
			assert.Contains(t, invalid.Body.String(), "The "+tt.header+" header must hold 1 to 255 printable ASCII characters")
			assert.NotContains(t, invalid.Body.String(), "kkkk", "the text is fixed: no request data")
			large := serve("k", strings.Repeat("a", tt.bodySize))
			require.Equal(t, http.StatusRequestEntityTooLarge, large.Code)
			assert.Contains(t, large.Body.String(), "The request body is "+tt.limit+", the limit for idempotent requests.")
		})
	}
}
