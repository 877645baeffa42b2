// Package h2fault is a lossy TCP proxy for gRPC (HTTP/2 over cleartext) in
// loopback tests. It forwards bytes between clients and one upstream
// server and reads the HTTP/2 frame boundaries as they pass, so that, by
// count, it resets a client's connection just before every n-th new call
// reaches the server, or just after the server answered every m-th call
// (the server's first HEADERS frame on a stream), which is the failure
// idempotency keys exist for: the server acted, and its answer is lost.
// Faults come by counted events, not chance or time, so a test knows how
// many there were.
//
// It never drops or changes a single frame: a fault closes the client's
// connection with a TCP reset and the upstream connection with it, so no
// HPACK state is left inconsistent. Every call on that connection fails
// with Unavailable (or, if the server answered it already, arrives).
// (internal/faultproxy in the core module does the same for HTTP/1.1;
// gRPC's streams and trailers need this one.)
package h2fault

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
)

// Config says where the proxy forwards to and how often it misbehaves.
type Config struct {
	// Upstream is the server's address, such as "127.0.0.1:50051"; it
	// must be on loopback.
	Upstream string
	// ResetEvery: reset the client's connection when the first frame of
	// every ResetEvery-th call arrives, before forwarding it. The server
	// never sees that call. 0: never.
	ResetEvery int64
	// DropEvery: reset the client's connection when the server's answer
	// to every DropEvery-th call begins, instead of passing it on. The
	// server has acted. 0: never.
	DropEvery int64
}

// Stats counts what the proxy did.
type Stats struct {
	Conns     int64 // client connections accepted
	Calls     int64 // calls begun by clients (new streams)
	Resets    int64 // calls whose connection was reset before forwarding
	Forwarded int64 // calls forwarded to the upstream
	Answers   int64 // answers the upstream began
	Dropped   int64 // answers whose connection was reset instead
}

// Proxy is a running proxy. Safe for concurrent use.
type Proxy struct {
	cfg Config
	ln  net.Listener

	mu    sync.Mutex
	conns map[*link]struct{}

	stats struct{ conns, calls, resets, forwarded, answers, dropped atomic.Int64 }
	wg    sync.WaitGroup
}

// Start listens on a free loopback port and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	host, _, err := net.SplitHostPort(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("h2fault: bad upstream %q: %w", cfg.Upstream, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("h2fault: upstream %q is not on loopback", cfg.Upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if cfg.ResetEvery < 0 || cfg.DropEvery < 0 {
		return nil, errors.New("h2fault: negative ResetEvery or DropEvery")
	}
	p := &Proxy{cfg: cfg, ln: ln, conns: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	return Stats{
		Conns: p.stats.conns.Load(), Calls: p.stats.calls.Load(), Resets: p.stats.resets.Load(),
		Forwarded: p.stats.forwarded.Load(), Answers: p.stats.answers.Load(), Dropped: p.stats.dropped.Load(),
	}
}

// Close stops listening, resets every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for l := range p.conns {
		l.kill()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.cfg.Upstream)
		if err != nil {
			reset(c)
			continue
		}
		p.stats.conns.Add(1)
		l := &link{client: c, upstream: up}
		p.mu.Lock()
		p.conns[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(l, c, up, true)
		go p.pipe(l, up, c, false)
	}
}

// link is one client connection and its upstream connection.
type link struct {
	client, upstream net.Conn
	once             sync.Once
}

// kill resets the client's connection and closes the upstream's.
func (l *link) kill() {
	l.once.Do(func() {
		reset(l.client)
		l.upstream.Close()
	})
}

// HTTP/2 framing (RFC 9113, section 4.1): a 9-byte header, then the
// payload. The client's side starts with the connection preface.
const (
	frameHeaderLen = 9
	frameHeaders   = 0x1
	prefaceLen     = 24 // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	maxFrame       = 1 << 24
)

// pipe copies src to dst frame by frame. fromClient says which side src
// is; the first HEADERS frame of a stream is a new call from the client's
// side and the beginning of an answer from the server's.
func (p *Proxy) pipe(l *link, src, dst net.Conn, fromClient bool) {
	defer p.wg.Done()
	defer func() {
		l.kill()
		p.mu.Lock()
		delete(p.conns, l)
		p.mu.Unlock()
	}()
	if fromClient {
		var preface [prefaceLen]byte
		if _, err := io.ReadFull(src, preface[:]); err != nil {
			return
		}
		if _, err := dst.Write(preface[:]); err != nil {
			return
		}
	}
	seen := map[uint32]bool{}
	var hdr [frameHeaderLen]byte
	buf := make([]byte, 0, 16<<10)
	for {
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		if n > maxFrame {
			return
		}
		buf = slices.Grow(buf[:0], frameHeaderLen+n)[:frameHeaderLen+n]
		copy(buf, hdr[:])
		if _, err := io.ReadFull(src, buf[frameHeaderLen:]); err != nil {
			return
		}
		stream := binary.BigEndian.Uint32(hdr[5:9]) & (1<<31 - 1)
		if hdr[3] == frameHeaders && stream != 0 && !seen[stream] {
			seen[stream] = true
			if p.fault(fromClient) {
				return
			}
		}
		if _, err := dst.Write(buf); err != nil {
			return
		}
	}
}

// fault counts a new call (fromClient) or answer, and reports whether
// its connection is to be reset.
func (p *Proxy) fault(fromClient bool) bool {
	if fromClient {
		if n := p.stats.calls.Add(1); p.cfg.ResetEvery > 0 && n%p.cfg.ResetEvery == 0 {
			p.stats.resets.Add(1)
			return true
		}
		p.stats.forwarded.Add(1)
		return false
	}
	if n := p.stats.answers.Add(1); p.cfg.DropEvery > 0 && n%p.cfg.DropEvery == 0 {
		p.stats.dropped.Add(1)
		return true
	}
	return false
}

// reset closes c with a TCP reset.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
