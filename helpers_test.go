// This file holds the client tests' helpers: scripted and idempotent test
// servers, request builders and a client constructor.

package idem

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/internal/key"
)

// seen is one request as a test server received it.
type seen struct {
	Method string
	Host   string
	Query  url.Values
	Key    string
	Body   []byte
	Header http.Header
}

// scripted is a test server that records every request and answers the
// n-th one (from 0) with reply(n, r).
type scripted struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []seen
	reply func(n int, w http.ResponseWriter, r *http.Request)
}

func newScripted(t *testing.T, reply func(n int, w http.ResponseWriter, r *http.Request)) *scripted {
	t.Helper()
	s := &scripted{reply: reply}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, seen{Method: r.Method, Host: r.Host, Query: r.URL.Query(), Key: r.Header.Get("Idempotency-Key"), Body: body, Header: r.Header.Clone()})
	s.mu.Unlock()
	s.reply(n, w, r)
}

func (s *scripted) seen() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

// statuses answers the n-th request with codes[n], repeating the last.
func statuses(codes ...int) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		code := codes[min(n, len(codes)-1)]
		w.WriteHeader(code)
		io.WriteString(w, http.StatusText(code))
	}
}

// quickOptions retries fast enough for tests driven by real time.
func quickOptions(o Options) Options {
	if o.BaseDelay == 0 {
		o.BaseDelay = time.Millisecond
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = 2 * time.Millisecond
	}
	return o
}

func newClient(t *testing.T, o Options) *Client {
	t.Helper()
	c, err := New(o)
	require.NoError(t, err)
	return c
}

func post(t *testing.T, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// onceServer is a minimal idempotent server: it executes each key once,
// keeps its response, and answers repeats from it with Idempotent-Replayed.
// It counts executions per key and checks every attempt of a key carries
// the same body.
type onceServer struct {
	t         *testing.T
	mu        sync.Mutex
	executed  map[string]int
	bodies    map[string][]byte
	responses map[string]string
	attempts  int
	mismatch  int
	last      map[*http.Request][]byte
	// before, if set, runs first on every request; returning false means
	// it answered on its own.
	before func(w http.ResponseWriter, r *http.Request) bool
	// after, if set, runs once the work is done and before the answer;
	// returning false drops the connection instead of answering.
	after func(r *http.Request) bool
}

func newOnceServer(t *testing.T) *onceServer {
	return &onceServer{t: t, executed: map[string]int{}, bodies: map[string][]byte{}, responses: map[string]string{}, last: map[*http.Request][]byte{}}
}

func (s *onceServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	s.attempts++
	if prev, ok := s.bodies[key]; ok && !bytes.Equal(prev, body) {
		s.mismatch++
		s.mu.Unlock()
		writeKeyReused(w)
		return
	}
	s.bodies[key] = body
	s.last[r] = body
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.last, r)
		s.mu.Unlock()
	}()
	if s.before != nil && !s.before(w, r) {
		return
	}
	s.mu.Lock()
	resp, done := s.responses[key]
	if !done {
		s.executed[key]++
		resp = `{"charged":` + string(body) + `}`
		s.responses[key] = resp
	}
	s.mu.Unlock()
	if s.after != nil && !s.after(r) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	if done {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, resp)
}

func (s *onceServer) executions() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.executed))
	for k, v := range s.executed {
		out[k] = v
	}
	return out
}

// lastBody returns the body of r, for a before hook.
func (s *onceServer) lastBody(r *http.Request) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[r]
}

func (s *onceServer) mismatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mismatch
}

// syncBuffer is a bytes.Buffer safe for a child's stdout and stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func stringsReader(s string) io.Reader { return bytes.NewReader([]byte(s)) }

// downUntilUp is a test server that answers 503 until up is set, then
// 201.
func downUntilUp(t *testing.T) (s *scripted, up *atomic.Bool) {
	up = new(atomic.Bool)
	s = newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if !up.Load() {
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(201)
	})
	return s, up
}

// childEnv returns the environment for a child process re-executing the
// test binary: this one's, plus vars, plus a GORACE that spares a
// race-enabled child the second it idles on exit by default.
func childEnv(vars ...string) []string {
	env := append(os.Environ(), vars...)
	return append(env, "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// writeKeyReused answers as the server package does when a key is reused
// for a different request.
func writeKeyReused(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusUnprocessableEntity)
	fmt.Fprintf(w, `{"type":%q,"title":"Idempotency key reused","status":422}`, key.ReusedProblemType)
}
