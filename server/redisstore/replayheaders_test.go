package redisstore_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// TestReplayKeepsLinesApart: through the middleware and the store's own
// header encoding, a cookie and a link sent on two lines each, their
// values holding commas, are replayed on two lines each.
func TestReplayKeepsLinesApart(t *testing.T) {
	cookies := []string{"a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT", "b=2"}
	links := []string{`</o/1>; rel="self"`, `</o?p=2>; rel="next", </docs>; rel="help"`}
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		store := newStore(t, rdb, redisstore.Options{})
		mw := server.Middleware(store, server.Options{SingleTenant: true, ReplayHeaders: []string{"Set-Cookie", "Link"}})
		srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Set-Cookie"] = cookies
			w.Header()["Link"] = links
			w.Header().Set("Location", "/o/1")
			w.WriteHeader(http.StatusCreated)
		})))
		t.Cleanup(srv.Close)
		post := func() *http.Response {
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
			require.NoError(t, err)
			req.Header.Set("Idempotency-Key", "lines")
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp
		}
		require.Equal(t, http.StatusCreated, post().StatusCode)
		again := post()
		require.Equal(t, "true", again.Header.Get(server.ReplayedHeader))
		assert.Equal(t, cookies, again.Header.Values("Set-Cookie"))
		assert.Equal(t, links, again.Header.Values("Link"))
		assert.Equal(t, "/o/1", again.Header.Get("Location"))
	})
}
