// This file holds the reading of request and response bodies, bounded by
// the client's limits.

package idem

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// readBody reads req's body whole and closes it. It returns when the
// request's context ends, even while a Read of the body blocks (a pipe
// whose writer stalls, a slow upload): the body is read by a goroutine of
// its own, and on the context's end readBody closes the body, which ends
// the Read of most bodies (pipes, files, connections), and leaves that
// goroutine to end with the Read, whenever it does. Close is called then
// while a Read may be in progress, as net/http's Transport calls it.
// The error wraps the context's error.
func (c *Client) readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	body, ctx := req.Body, req.Context()
	if ctx.Done() == nil { // it never ends: nothing to stop the Read for
		defer body.Close()
		return c.readRequest(body, req.ContentLength)
	}
	if err := ctx.Err(); err != nil {
		body.Close()
		return nil, fmt.Errorf("idem: reading request body: %w", err)
	}
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1) // the goroutine never waits to hand over
	go func() {
		b, err := c.readRequest(body, req.ContentLength)
		done <- read{b, err}
	}()
	select {
	case r := <-done:
		body.Close()
		return r.b, r.err
	case <-ctx.Done():
		body.Close()
		return nil, fmt.Errorf("idem: reading request body: %w", ctx.Err())
	}
}

// readRequest reads a request body of size bytes (-1: unknown), up to
// Options.MaxRequestBody.
func (c *Client) readRequest(body io.Reader, size int64) ([]byte, error) {
	b, err := readAtMost(body, size, c.opts.MaxRequestBody)
	if errors.Is(err, ErrBodyTooLarge) {
		return nil, fmt.Errorf("%w: request body over %d bytes", ErrBodyTooLarge, c.opts.MaxRequestBody)
	}
	if err != nil {
		return nil, fmt.Errorf("idem: reading request body: %w", err)
	}
	return b, nil
}

// readAtMost reads r to its end, refusing more than limit bytes with
// ErrBodyTooLarge. size is the expected length if known (else -1): a body
// of known size is read into one exact allocation.
func readAtMost(r io.Reader, size, limit int64) ([]byte, error) {
	if size < 0 || size > limit {
		b, err := io.ReadAll(io.LimitReader(r, limit+1))
		if err == nil && int64(len(b)) > limit {
			err = ErrBodyTooLarge
		}
		return b, err
	}
	b := make([]byte, size, size+1) // the spare byte: see below
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	// The body must end where its length said. The byte that says whether
	// it does is read into b's spare capacity: a [1]byte of its own would
	// escape to the heap through the interface call.
	one := b[size : size+1]
	if n, err := r.Read(one); n > 0 {
		rest, err := readAtMost(io.MultiReader(bytes.NewReader(one[:n]), r), -1, limit-size)
		if err != nil {
			return nil, err
		}
		return append(b, rest...), nil
	} else if err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}

// readResponse reads resp's body whole. A response that has no body
// whatever its Content-Length says (to HEAD, or 1xx, 204, 304) reads as
// empty.
func (c *Client) readResponse(resp *http.Response) ([]byte, error) {
	size := resp.ContentLength
	if !bodyAllowed(resp) {
		size = 0
	}
	return readAtMost(resp.Body, size, c.opts.MaxResponseBody)
}

// bodyAllowed reports whether resp may carry a body (RFC 9110, 6.4.1).
func bodyAllowed(resp *http.Response) bool {
	s := resp.StatusCode
	return !(resp.Request != nil && resp.Request.Method == http.MethodHead) &&
		s >= 200 && s != http.StatusNoContent && s != http.StatusNotModified
}
