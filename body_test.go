// This file tests reading request bodies: a body whose Read blocks does
// not hold Do past its context.

package idem

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stalledBody is a request body whose Read blocks until release is
// closed, as a pipe whose writer stalls does. With unblockOnClose, Close
// ends a blocked Read, as it does for a pipe or a connection; without, it
// does not, as for a reader that ignores Close.
type stalledBody struct {
	release        chan struct{}
	unblockOnClose bool
	closed         atomic.Int32
	reading        atomic.Int32
}

func newStalledBody(unblockOnClose bool) *stalledBody {
	return &stalledBody{release: make(chan struct{}), unblockOnClose: unblockOnClose}
}

func (b *stalledBody) Read([]byte) (int, error) {
	b.reading.Add(1)
	defer b.reading.Add(-1)
	<-b.release
	return 0, io.ErrClosedPipe
}

func (b *stalledBody) Close() error {
	if b.closed.Add(1) == 1 && b.unblockOnClose {
		close(b.release)
	}
	return nil
}

// end releases a blocked Read for good, whatever Close did.
func (b *stalledBody) end() {
	if !b.unblockOnClose {
		close(b.release)
	}
}

// TestDoStopsAtContextWhileBodyBlocks: a body whose Read never returns
// holds Do no longer than the request's context: at the deadline, or at
// once when it is cancelled, Do returns an *Error wrapping the context's
// error, sends nothing, and closes the body. A naive read of the body on
// the caller's goroutine (what Do did, and what net/http does) is still
// blocked after the deadline.
func TestDoStopsAtContextWhileBodyBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		unblockOnClose bool
		cancel         bool
	}{
		{"deadline, Close ends the Read", true, false},
		{"deadline, Close does not end the Read", false, false},
		{"cancelled, Close ends the Read", true, true},
		{"cancelled, Close does not end the Read", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var sent atomic.Int32
				c := newClient(t, Options{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
					sent.Add(1)
					return nil, io.EOF
				})})
				body := newStalledBody(tc.unblockOnClose)
				defer body.end()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/charges", body)
				require.NoError(t, err)
				start := time.Now()
				want := context.DeadlineExceeded
				if tc.cancel {
					want = context.Canceled
					go func() {
						time.Sleep(time.Second)
						cancel()
					}()
				}
				_, err = c.Do(req)
				require.ErrorIs(t, err, want)
				var e *Error
				require.ErrorAs(t, err, &e)
				if tc.cancel {
					assert.Equal(t, time.Second, time.Since(start), "Do returned when the context was cancelled")
				} else {
					assert.Equal(t, time.Minute, time.Since(start), "Do returned at the deadline")
				}
				assert.Zero(t, sent.Load(), "nothing was sent")
				assert.Equal(t, int32(1), body.closed.Load(), "Do closed the body")
			})
		})
	}

	t.Run("naive read blocks past the deadline", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			body := newStalledBody(true)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				readAtMost(body, -1, 1<<20) // the caller's goroutine, blind to ctx
			}()
			time.Sleep(time.Hour)
			synctest.Wait()
			require.Error(t, ctx.Err(), "the deadline has passed")
			select {
			case <-done:
				t.Fatal("the naive read returned")
			default:
			}
			assert.Equal(t, int32(1), body.reading.Load(), "still blocked in Read an hour on")
			body.Close()
			<-done
		})
	})
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkReadBody reads a 1 KiB request body as Do does: with a
// context that never ends (read on the caller's goroutine) and with one
// that can (read on a goroutine of its own, watched against the context).
func BenchmarkReadBody(b *testing.B) {
	c, err := New(Options{})
	require.NoError(b, err)
	payload := make([]byte, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{{"background", context.Background()}, {"cancellable", ctx}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequestWithContext(bc.ctx, http.MethodPost, "http://api.test/", bytes.NewReader(payload))
				if _, err := c.readBody(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
