package server_test

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// TestBodyKeptPastTheHandlerReadsNothing: the middleware reuses the
// storage of the bodies it reads, so a handler that (against net/http's
// rule) keeps its request body and reads it after returning reads nothing,
// never a later request's body (here each handler reads the first bytes
// of its body and keeps the rest unread); and every handler reads its own
// body, however the bodies before it were sized.
func TestBodyKeptPastTheHandlerReadsNothing(t *testing.T) {
	t.Parallel()
	var kept []io.Reader
	var got []string
	h := server.Middleware(newMemstore(), server.Options{SingleTenant: true})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b := make([]byte, 5)
			_, err := io.ReadFull(r.Body, b)
			require.NoError(t, err)
			got = append(got, string(b))
			kept = append(kept, r.Body)
			w.WriteHeader(http.StatusCreated)
		}))
	bodies := []string{"first, a long one: " + string(make([]byte, 600)), "second", "third, a little longer"}
	for i, body := range bodies {
		kept = append(kept, nil)[:i] // a handler that ran keeps its body only
		require.Equal(t, http.StatusCreated, serveDirect(h, newKey(), body).Code)
		for _, r := range kept {
			n, err := r.Read(make([]byte, 1024))
			assert.Equal(t, 0, n, "a kept body reads nothing of request %d's", i)
			assert.ErrorIs(t, err, io.EOF)
		}
	}
	assert.Equal(t, []string{"first", "secon", "third"}, got)
}

// heldWriter is a writer that holds the bytes its first Write is given
// until it is let go, as a transport that sends a proxied request body
// in the background after RoundTrip returned does: it reports held, waits
// for let, then copies them (and those of later Writes) into got.
type heldWriter struct {
	held, let chan struct{}
	first     bool
	got       []byte
}

func (w *heldWriter) Write(p []byte) (int, error) {
	if !w.first {
		w.first = true
		close(w.held)
		<-w.let
	}
	w.got = append(w.got, p...)
	return len(p), nil
}

// TestBodyReadAfterTheHandlerNeverLeaks: a handler that hands its body
// to a goroutine that reads it after the response (an asynchronous copy,
// a transport that writes a proxied body in the background) never reads
// another request's bytes while later requests run, whether it reads
// through WriteTo (which io.Copy prefers, and which hands the writer the
// body's storage) or through Read: storage still being read is not
// reused. Each body is one byte repeated; a byte of another is a leak.
// (Under -race, the detector also reports a read that overlaps the
// storage's reuse.)
func TestBodyReadAfterTheHandlerNeverLeaks(t *testing.T) {
	t.Parallel()
	const size, requests = 4 << 10, 40
	type late struct {
		want byte
		w    *heldWriter   // WriteTo
		done chan struct{} // closed when the copy is over
		read chan []byte   // Read, a byte at a time
	}
	lates := make([]late, 0, requests)
	h := server.Middleware(newMemstore(), server.Options{SingleTenant: true})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := r.Body
			first := make([]byte, 1)
			_, err := io.ReadFull(body, first)
			require.NoError(t, err)
			l := late{want: first[0]}
			if len(lates)%2 == 0 {
				l.w, l.done = &heldWriter{held: make(chan struct{}), let: make(chan struct{})}, make(chan struct{})
				go func() {
					defer close(l.done)
					io.Copy(l.w, body)
				}()
				<-l.w.held // the copy holds the storage as the handler returns
			} else {
				l.read = make(chan []byte, 1)
				go func() {
					var got []byte
					b := make([]byte, 1)
					for range size { // bounded: one read per byte at most
						n, err := body.Read(b)
						got = append(got, b[:n]...)
						if err != nil {
							break
						}
						runtime.Gosched() // let the next requests run meanwhile
					}
					l.read <- got
				}()
			}
			lates = append(lates, l)
			w.WriteHeader(http.StatusCreated)
		}))
	for i := range requests {
		body := bytes.Repeat([]byte{byte('A' + i)}, size)
		require.Equal(t, http.StatusCreated, serveDirect(h, newKey(), string(body)).Code)
	}
	for i, l := range lates {
		var got []byte
		if l.w != nil {
			close(l.w.let)
			<-l.done
			got = l.w.got
			assert.Len(t, got, size-1, "request %d: WriteTo's writer was given the whole rest of its body", i)
		} else {
			got = <-l.read
		}
		assert.Zero(t, len(got)-bytes.Count(got, []byte{l.want}), "request %d read bytes of another request's", i)
	}
}
