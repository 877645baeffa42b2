// Package faultproxy is a lossy HTTP proxy for loopback tests and demos. It
// forwards requests to one upstream server and, by seeded chance, resets
// the client's connection before forwarding, answers 503 without
// forwarding, or forwards and then drops the answer after the upstream has
// done the work, which is the failure idempotency keys exist for. It can
// also delay requests.
package faultproxy

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Config says what the proxy forwards to and how often it misbehaves.
// Probabilities are per request, between 0 and 1.
type Config struct {
	// Upstream is the server's base URL, such as "http://127.0.0.1:8080".
	Upstream string
	// Reset: close the client's connection with a TCP reset, before
	// forwarding anything.
	Reset float64
	// Unavailable: answer 503 without forwarding.
	Unavailable float64
	// Drop: forward, read the upstream's whole answer, then reset the
	// client's connection instead of passing the answer on.
	Drop float64
	// MaxDelay: wait a uniform random time up to this before forwarding.
	MaxDelay time.Duration
	// Seed makes the sequence of faults repeatable (for one order of
	// requests).
	Seed uint64
	// CountBy names a request header whose values the proxy counts
	// requests by, for Stats.By. Default "X-Client-Id".
	CountBy string
}

// Stats counts what the proxy did.
type Stats struct {
	Requests    int64 // requests received
	Resets      int64 // connections reset before forwarding
	Unavailable int64 // answered 503 without forwarding
	Dropped     int64 // answers dropped after the upstream answered
	Forwarded   int64 // requests the upstream received
	Replayed    int64 // answers marked Idempotent-Replayed that reached the client
	// DroppedReplayed counts the dropped answers (of Dropped) that were
	// marked Idempotent-Replayed: replays the upstream served that never
	// reached the client. Replayed + DroppedReplayed is every replay the
	// upstream answered through the proxy (but for an answer the proxy
	// failed to read, which it resets without counting).
	DroppedReplayed int64
}

// Proxy is a running fault-injecting proxy. Safe for concurrent use.
type Proxy struct {
	cfg      Config
	upstream *url.URL
	client   *http.Client
	srv      *http.Server
	url      string

	mu  sync.Mutex
	rng *rand.Rand
	by  map[string]int64

	requests, resets, unavailable, dropped, forwarded, replayed, droppedReplayed atomic.Int64
}

// Start listens on a free loopback port and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	up, err := url.Parse(cfg.Upstream)
	if err != nil || up.Host == "" {
		return nil, fmt.Errorf("faultproxy: bad upstream %q", cfg.Upstream)
	}
	if ip := net.ParseIP(up.Hostname()); up.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("faultproxy: upstream %q is not on loopback", cfg.Upstream)
	}
	if cfg.CountBy == "" {
		cfg.CountBy = "X-Client-Id"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	p := &Proxy{
		cfg:      cfg,
		upstream: up,
		client:   &http.Client{Transport: t, Timeout: time.Minute},
		url:      "http://" + ln.Addr().String(),
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		by:       make(map[string]int64),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go p.srv.Serve(ln)
	return p, nil
}

// URL is the proxy's base URL.
func (p *Proxy) URL() string { return p.url }

// Close stops the proxy and drops its connections.
func (p *Proxy) Close() error {
	p.client.CloseIdleConnections()
	return p.srv.Close()
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	return Stats{
		Requests:    p.requests.Load(),
		Resets:      p.resets.Load(),
		Unavailable: p.unavailable.Load(),
		Dropped:     p.dropped.Load(),
		Forwarded:   p.forwarded.Load(),
		Replayed:    p.replayed.Load(),

		DroppedReplayed: p.droppedReplayed.Load(),
	}
}

// By returns how many requests carried value in the CountBy header.
func (p *Proxy) By(value string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.by[value]
}

type fault int

const (
	pass fault = iota
	reset
	unavailable
	drop
)

func (p *Proxy) roll(r *http.Request) (fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.by[r.Header.Get(p.cfg.CountBy)]++
	var delay time.Duration
	if p.cfg.MaxDelay > 0 {
		delay = time.Duration(p.rng.Int64N(int64(p.cfg.MaxDelay)))
	}
	x := p.rng.Float64()
	switch {
	case x < p.cfg.Reset:
		return reset, delay
	case x < p.cfg.Reset+p.cfg.Unavailable:
		return unavailable, delay
	case x < p.cfg.Reset+p.cfg.Unavailable+p.cfg.Drop:
		return drop, delay
	}
	return pass, delay
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		resetConn(w) // no answer rather than an empty 200
		return
	}
	f, delay := p.roll(r)
	if delay > 0 {
		time.Sleep(delay)
	}
	switch f {
	case reset:
		p.resets.Add(1)
		resetConn(w)
		return
	case unavailable:
		p.unavailable.Add(1)
		w.Header().Set("Retry-After", "0")
		http.Error(w, "injected by faultproxy", http.StatusServiceUnavailable)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream.JoinPath(r.URL.Path).String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.URL.RawQuery = r.URL.RawQuery
	out.Header = r.Header.Clone()
	p.forwarded.Add(1)
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, "upstream unreachable", http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if err != nil {
		resetConn(w)
		return
	}
	replayed := resp.Header.Get("Idempotent-Replayed") == "true"
	if f == drop {
		p.dropped.Add(1)
		if replayed {
			p.droppedReplayed.Add(1) // a replay the client never received
		}
		resetConn(w)
		return
	}
	if replayed {
		p.replayed.Add(1) // a replay the client received
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// maxBody bounds the request and answer bodies the proxy holds.
const maxBody = 8 << 20

// resetConn closes the client's connection with a TCP reset.
func resetConn(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}
