// This file tests a body key per call (WithBodyKey) through Do, DoNamed
// and the Transport, against the server package's per-route BodyKey.

package idem

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// tokenService is an API whose operations name their key fields each
// their own way, as AWS's do: CreateVolume takes ClientToken,
// StartJob takes IdempotencyToken.
func tokenService(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var runs atomic.Int64
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := runs.Add(1)
		k, _ := server.KeyFrom(r.Context())
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"run":%d,"key":%q}`, n, k.Key)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /volumes", work)
	mux.Handle("POST /jobs", work)
	mw := server.Middleware(memstore.New(memstore.Options{}), server.Options{
		SingleTenant: true,
		Routes: map[string]server.RouteOptions{
			"POST /volumes": {BodyKey: "ClientToken"},
			"POST /jobs":    {BodyKey: "IdempotencyToken"},
		},
	})
	srv := httptest.NewServer(mw(mux))
	t.Cleanup(srv.Close)
	return srv, &runs
}

func TestBodyKeyPerCall(t *testing.T) {
	t.Parallel()
	srv, runs := tokenService(t)
	s := newScripted(t, statuses(http.StatusOK)) // to see the bytes sent
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, "")}))
	call := func(base, path, field, body string) (*Response, error) {
		req := post(t, base+path, body)
		req = req.WithContext(WithBodyKey(req.Context(), field))
		return c.Do(req)
	}

	vol, err := call(s.srv.URL, "/volumes", "ClientToken", `{"Size":8}`)
	require.NoError(t, err)
	job, err := call(s.srv.URL, "/jobs", "IdempotencyToken", `{"Name":"j"}`)
	require.NoError(t, err)
	seen := s.seen()
	assert.Equal(t, `{"ClientToken":"`+vol.Key+`","Size":8}`, string(seen[0].Body))
	assert.Equal(t, `{"IdempotencyToken":"`+job.Key+`","Name":"j"}`, string(seen[1].Body))
	assert.Equal(t, vol.Key, seen[0].Key, "the Client's header is sent too, as on a resumed operation")

	// Against the service: each operation's key is read from its own
	// field, and a repeat with the caller's token is replayed.
	first, err := call(srv.URL, "/volumes", "ClientToken", `{"Size":8,"ClientToken":"vol-417"}`)
	require.NoError(t, err)
	assert.Equal(t, "vol-417", first.Key)
	assert.JSONEq(t, `{"run":1,"key":"vol-417"}`, string(first.Body))
	again, err := call(srv.URL, "/volumes", "ClientToken", `{"ClientToken":"vol-417","Size":8}`)
	require.NoError(t, err)
	assert.True(t, again.FromJournal, "the same request: the journal answers")
	second, err := call(srv.URL, "/jobs", "IdempotencyToken", `{"IdempotencyToken":"job-1","Name":"j"}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"run":2,"key":"job-1"}`, string(second.Body))
	assert.EqualValues(t, 2, runs.Load())

	// A call without WithBodyKey on the same client keys by header, as the
	// Client's options say.
	plain, err := c.Do(post(t, s.srv.URL, `{"Size":8}`))
	require.NoError(t, err)
	assert.Equal(t, `{"Size":8}`, string(s.seen()[2].Body))
	assert.Equal(t, plain.Key, s.seen()[2].Key)
}

func TestBodyKeyPerCallOverridesTheClients(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(http.StatusOK))
	c := newClient(t, quickOptions(Options{BodyKey: "idempotency_key"}))
	req := post(t, s.srv.URL, `{"a":1}`)
	resp, err := c.Do(req.WithContext(WithBodyKey(context.Background(), "request.token")))
	require.NoError(t, err)
	assert.Equal(t, `{"request":{"token":"`+resp.Key+`"},"a":1}`, string(s.seen()[0].Body))
	assert.Empty(t, s.seen()[0].Key, "a Client keying bodies sends no header")
}

func TestBodyKeyPerCallThroughTheTransport(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(http.StatusOK))
	c := newClient(t, quickOptions(Options{Header: "X-Idempotency-Key"}))
	hc := &http.Client{Transport: c.Transport()}
	req := post(t, s.srv.URL, `{"a":1}`)
	resp, err := hc.Do(req.WithContext(WithBodyKey(req.Context(), "ClientToken")))
	require.NoError(t, err)
	resp.Body.Close()
	got := s.seen()[0]
	assert.Contains(t, string(got.Body), `"ClientToken":"`+got.Header.Get("X-Idempotency-Key")+`"`)
}

func TestBodyKeyPerCallRefusals(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(http.StatusOK))
	c := newClient(t, quickOptions(Options{}))
	for _, path := range []string{"", "a..b", "a.\x00"} {
		req := post(t, s.srv.URL, `{}`)
		_, err := c.Do(req.WithContext(WithBodyKey(req.Context(), path)))
		assert.ErrorIs(t, err, ErrInvalidBodyKey, "%q", path)
		var e *Error
		assert.ErrorAs(t, err, &e)
	}
	req := post(t, s.srv.URL, `[1,2]`)
	_, err := c.Do(req.WithContext(WithBodyKey(req.Context(), "ClientToken")))
	assert.Error(t, err, "a body that is no object cannot carry the key")
	assert.Empty(t, s.seen(), "nothing was sent")
}
