package server_test

import (
	"fmt"
	"io"
	"net/http"
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

// Cookies and links whose values hold commas: joined into one line, they
// could not be told apart again.
var (
	twoCookies = []string{"a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Path=/", "b=2; HttpOnly"}
	twoLinks   = []string{`</orders/42>; rel="self"`, `</orders?page=2>; rel="next", </docs>; rel="help"`}
)

// headerApp answers 201 with fields of every kind, counting its calls.
type headerApp struct{ calls atomic.Int64 }

func (a *headerApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := a.calls.Add(1)
	io.Copy(io.Discard, r.Body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Location", "/orders/42")
	h.Set("X-Keep", "kept")
	h.Set("X-Drop", "dropped")
	h["Set-Cookie"] = twoCookies
	h["Link"] = twoLinks
	h.Add("X-Multi", "a")
	h.Add("X-Multi", "b")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"call":%d}`, n)
}

// replayServer serves headerApp behind the middleware over store and
// returns a function that posts with a key.
func replayServer(t *testing.T, store server.Store, opts server.Options) (func(key string) *http.Response, *headerApp) {
	t.Helper()
	opts.SingleTenant = true
	app := &headerApp{}
	srv := newServer(t, server.Middleware(store, opts)(app))
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return func(key string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}, app
}

func TestReplayKeepsRepeatedFieldsApart(t *testing.T) {
	t.Parallel()
	post, app := replayServer(t, newMemstore(), server.Options{})
	key := newKey()
	first, again := post(key), post(key)
	require.Equal(t, "true", again.Header.Get(server.ReplayedHeader))
	assert.Equal(t, twoLinks, again.Header.Values("Link"), "one line per value, as the handler sent them")
	assert.Equal(t, first.Header.Values("Link"), again.Header.Values("Link"))
	assert.Equal(t, []string{"a", "b"}, again.Header.Values("X-Multi"))
	assert.Equal(t, "/orders/42", again.Header.Get("Location"))
	assert.Equal(t, "dropped", again.Header.Get("X-Drop"), "the default replays what it does not deny")
	assert.Empty(t, again.Header.Values("Set-Cookie"), "the default never replays a cookie")
	assert.EqualValues(t, 1, app.calls.Load())
}

func TestReplayHeadersAllowList(t *testing.T) {
	t.Parallel()
	post, app := replayServer(t, newMemstore(), server.Options{ReplayHeaders: []string{"x-keep", "Set-Cookie", "Link"}})
	key := newKey()
	first, again := post(key), post(key)
	assert.Equal(t, "dropped", first.Header.Get("X-Drop"), "the first answer is the handler's own")
	require.Equal(t, "true", again.Header.Get(server.ReplayedHeader))
	assert.Equal(t, "kept", again.Header.Get("X-Keep"))
	assert.Equal(t, twoCookies, again.Header.Values("Set-Cookie"), "named, a cookie is replayed, line by line")
	assert.Equal(t, twoLinks, again.Header.Values("Link"))
	assert.Equal(t, "/orders/42", again.Header.Get("Location"), "Location is always kept")
	assert.Equal(t, "application/json", again.Header.Get("Content-Type"), "Content-Type is always kept")
	assert.Empty(t, again.Header.Get("X-Drop"), "a field not listed is not replayed")
	assert.Empty(t, again.Header.Values("X-Multi"))
	assert.Equal(t, strconv.Itoa(len(`{"call":1}`)), again.Header.Get("Content-Length"))
	assert.EqualValues(t, 1, app.calls.Load())
}

func TestReplayHeadersOptions(t *testing.T) {
	t.Parallel()
	for _, names := range [][]string{
		{"Transfer-Encoding"}, {"Content-Length"}, {"Connection"}, {server.ReplayedHeader},
		{"Bad Name"}, {""}, {"Trailer:X"},
	} {
		assert.Panics(t, func() {
			server.Middleware(newMemstore(), server.Options{SingleTenant: true, ReplayHeaders: names})
		}, "%q", names)
	}
	assert.NotPanics(t, func() {
		server.Middleware(newMemstore(), server.Options{SingleTenant: true, ReplayHeaders: []string{"Date", "Set-Cookie"}})
	})
}

// TestOnReplay: the hook says how old the record is and changes what it
// sends, and what is stored stays as it was.
func TestOnReplay(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	store := memstore.New(memstore.Options{Now: clock})
	const retention = time.Hour
	var seen atomic.Int64
	opts := server.Options{
		Retention: retention,
		OnReplay: func(r *http.Request, h http.Header, rec *server.Record) {
			seen.Add(1)
			age := retention - rec.ExpiresAt.Sub(clock())
			h.Set("Idempotent-Age", strconv.Itoa(int(age/time.Second)))
			h["X-Multi"][0] = "changed in place" // a copy: the record keeps its own
			h.Del("X-Keep")
			h.Del(server.ReplayedHeader) // set after the hook: it stays
			assert.Equal(t, "/orders", r.URL.Path)
			assert.True(t, rec.Completed)
		},
	}
	post, app := replayServer(t, store, opts)
	key := newKey()
	first := post(key)
	assert.Empty(t, first.Header.Get("Idempotent-Age"), "a first answer is no replay")
	assert.Zero(t, seen.Load())

	advance(90 * time.Second)
	again := post(key)
	assert.Equal(t, "90", again.Header.Get("Idempotent-Age"))
	assert.Equal(t, "true", again.Header.Get(server.ReplayedHeader))
	assert.Empty(t, again.Header.Get("X-Keep"))
	assert.Equal(t, []string{"changed in place", "b"}, again.Header.Values("X-Multi"))

	advance(30 * time.Second)
	third := post(key)
	assert.Equal(t, "120", third.Header.Get("Idempotent-Age"))
	assert.Equal(t, []string{"kept"}, storedValues(t, store, key, "X-Keep"), "the hook changed nothing stored")
	assert.Equal(t, []string{"a", "b"}, storedValues(t, store, key, "X-Multi"))
	assert.EqualValues(t, 2, seen.Load())
	assert.EqualValues(t, 1, app.calls.Load())
}

// storedValues returns the values the store recorded for key's field.
func storedValues(t *testing.T, store server.Store, key, field string) []string {
	t.Helper()
	c, err := store.Claim(t.Context(), server.Key{Key: key}, "probe", time.Second)
	require.NoError(t, err)
	require.True(t, c.Record.Completed)
	return c.Record.Response.Header[field]
}
