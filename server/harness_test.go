package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// app is the handler behind the middleware in these tests. It counts its
// executions (the side effects) and behaves as the request's test headers
// say:
//
//	X-Status: the status to answer (default 201)
//	X-Behave: "panic", "abort" (panic with http.ErrAbortHandler), or
//	          "block" (wait until the test closes app.release)
//	X-Sleep:  a duration to sleep first
type app struct {
	calls       atomic.Int64
	release     chan struct{}
	releaseOnce sync.Once
	entered     chan struct{} // receives once per blocking execution
}

// unblock lets every blocked execution finish.
func (a *app) unblock() { a.releaseOnce.Do(func() { close(a.release) }) }

func newApp() *app {
	return &app{release: make(chan struct{}), entered: make(chan struct{}, 16)}
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := a.calls.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(err)
	}
	if d, err := time.ParseDuration(r.Header.Get("X-Sleep")); err == nil {
		time.Sleep(d)
	}
	switch r.Header.Get("X-Behave") {
	case "panic":
		panic("boom: secret internal state")
	case "abort":
		panic(http.ErrAbortHandler)
	case "block":
		a.entered <- struct{}{}
		<-a.release
	}
	status := http.StatusCreated
	if s := r.Header.Get("X-Status"); s != "" {
		status, _ = strconv.Atoi(s)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Set-Cookie", "session=secret")
	h.Set("X-Call", strconv.FormatInt(n, 10))
	h.Add("X-Multi", "a")
	h.Add("X-Multi", "b")
	if status/100 == 3 {
		h.Set("Location", "/elsewhere")
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"call":%d,"method":%q,"len":%d}`, n, r.Method, len(body))
}

// harness is a test server: app behind the middleware, over real HTTP.
type harness struct {
	t      *testing.T
	app    *app
	store  server.Store
	srv    *httptest.Server
	client *http.Client
	logs   *syncBuffer
}

// tenantScope reads the scope from X-Tenant; a request without one has
// none.
func tenantScope(r *http.Request) (string, error) {
	if s := r.Header.Get("X-Tenant"); s != "" {
		return s, nil
	}
	return "", errors.New("no tenant: secret detail")
}

// newHarness starts a server. opts.Scope defaults to tenantScope (unless
// SingleTenant), opts.MaxBody to 1 KiB and the store to a fresh memstore.
func newHarness(t *testing.T, opts server.Options, store server.Store) *harness {
	t.Helper()
	if opts.Scope == nil && !opts.SingleTenant {
		opts.Scope = tenantScope
	}
	if opts.MaxBody == 0 {
		opts.MaxBody = 1024
	}
	if store == nil {
		store = memstore.New(memstore.Options{})
	}
	logs := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h := &harness{t: t, app: newApp(), store: store, logs: logs}
	h.srv = httptest.NewServer(server.Middleware(store, opts)(h.app))
	// A fresh connection per request: net/http silently resends a request
	// with an Idempotency-Key once on a reused connection that broke,
	// which would make execution counts inexact.
	h.client = &http.Client{
		Transport:     &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(func() {
		h.app.unblock()
		h.srv.Close()
	})
	return h
}

// call is one request.
type call struct {
	method      string // default POST
	path        string // default /orders
	key         string // sent as is; "" sends none
	keys        []string
	tenant      string // default "t1"; "-" sends none
	body        string
	contentType string
	header      map[string]string
}

// reply is a response with its body read.
type reply struct {
	status int
	header http.Header
	body   string
	err    error
}

func (r reply) replayed() bool { return r.header.Get(server.ReplayedHeader) == "true" }

// problemType returns the problem document's type, or "".
func (r reply) problemType() string {
	if r.header.Get("Content-Type") != server.ProblemContentType {
		return ""
	}
	_, rest, _ := strings.Cut(r.body, `"type":"`)
	typ, _, _ := strings.Cut(rest, `"`)
	return typ
}

func (h *harness) do(c call) reply {
	h.t.Helper()
	if c.method == "" {
		c.method = http.MethodPost
	}
	if c.path == "" {
		c.path = "/orders"
	}
	req, err := http.NewRequest(c.method, h.srv.URL+c.path, strings.NewReader(c.body))
	require.NoError(h.t, err)
	if c.key != "" {
		req.Header.Set("Idempotency-Key", c.key)
	}
	for _, k := range c.keys {
		req.Header.Add("Idempotency-Key", k)
	}
	switch c.tenant {
	case "":
		req.Header.Set("X-Tenant", "t1")
	case "-":
	default:
		req.Header.Set("X-Tenant", c.tenant)
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// async sends c in the background.
func (h *harness) async(c call) <-chan reply {
	out := make(chan reply, 1)
	go func() { out <- h.do(c) }()
	return out
}

// waitEntered waits until a blocking execution has started.
func (h *harness) waitEntered() {
	h.t.Helper()
	select {
	case <-h.app.entered:
	case <-time.After(5 * time.Second):
		h.t.Fatal("the handler never started")
	}
}

// requireProblem checks a problem answer: status, type, fixed texts, no
// internal detail.
func requireProblem(t *testing.T, r reply, status int, typ string) {
	t.Helper()
	require.NoError(t, r.err)
	require.Equal(t, status, r.status, "body: %s", r.body)
	assert.Equal(t, typ, r.problemType(), "body: %s", r.body)
	assert.Contains(t, r.body, `"status":`+strconv.Itoa(status))
	assert.Contains(t, r.body, `"title":`)
	assert.Contains(t, r.body, `"detail":`)
	assert.NotContains(t, r.body, "secret")
	assert.False(t, r.replayed())
	switch {
	case typ == server.ProblemStoreFull:
		assert.Equal(t, "30", r.header.Get("Retry-After"))
	case status == http.StatusConflict || status == http.StatusServiceUnavailable:
		assert.Equal(t, "1", r.header.Get("Retry-After"))
	}
}

var keySeq atomic.Int64

// newKey returns a key no other test uses.
func newKey() string { return fmt.Sprintf("key-%d-%d", time.Now().UnixNano(), keySeq.Add(1)) }

// syncBuffer is a bytes.Buffer safe for concurrent writes, for logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newMemstore() *memstore.Store { return memstore.New(memstore.Options{}) }

// newServer serves handler until the test ends.
func newServer(t *testing.T, handler http.Handler) *httptest.Server {
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

// replyOf is the reply rec recorded.
func replyOf(rec *httptest.ResponseRecorder) reply {
	return reply{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

// serveDirect serves a POST with key and body through handler, without a
// network.
func serveDirect(handler http.Handler, key, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec
}
