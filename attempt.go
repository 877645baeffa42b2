// This file holds attemptTransport, the RoundTripper under the retry
// engine that gives each attempt its own deadline.

package idem

import (
	"context"
	"io"
	"net/http"
	"time"
)

// attemptTransport bounds each attempt with its own deadline: the dial,
// writing the request, waiting for the headers and reading the body (it
// ends when the body is closed). It does not pass CloseIdleConnections on:
// retryablehttp calls it whenever a call gives up, and the pool is shared
// by every call of the Client (see the retry engine's departures, in
// retry.go).
//
// A response that comes with an error (http.RoundTripper forbids it, and
// some transports do it all the same) is a transport error: its body is
// closed, so its connection is not leaked, and the response is dropped.
// net/http's Client, under the retry engine, would only log and ignore it.
type attemptTransport struct {
	rt      http.RoundTripper
	timeout time.Duration
}

func (t attemptTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(r.Context(), t.timeout)
	resp, err := t.rt.RoundTrip(r.WithContext(ctx))
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
