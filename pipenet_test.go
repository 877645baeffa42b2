// This file holds pipeNet, an in-memory network for tests that run an
// http.Server and an http.Transport under testing/synctest.

package idem

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// pipeNet is a net.Listener whose connections are net.Pipe pairs. Inside a
// synctest bubble a goroutine waiting on a pipe is durably blocked, as one
// waiting on a real socket is not, so the bubble's clock advances while
// the server and the client wait on each other: attempt timeouts and
// stalls play out in virtual time, exactly, whatever the machine's load.
type pipeNet struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func (l *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeNet) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeNet) Addr() net.Addr { return pipeAddr{} }

// dial connects to the server, for http.Transport.DialContext.
func (l *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// servePipes serves h on an in-memory network and returns an
// *http.Transport that reaches it at any http:// URL. Call it inside a
// synctest bubble; the server and the transport's connections are closed
// when the test ends, inside the bubble.
func servePipes(t *testing.T, h http.Handler) *http.Transport {
	t.Helper()
	l := &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	tr := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
		// The server lingers half a second over a connection whose request
		// body it did not read (net/http's closeWriteAndWait); let that run
		// out in the bubble's time, before the bubble ends.
		time.Sleep(time.Second)
	})
	return tr
}
