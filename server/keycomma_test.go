package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// TestKeyListRefused: a proxy may merge two Idempotency-Key field lines
// into one, "a, b" (RFC 9110, 5.3). The middleware refuses two lines as
// ambiguous, so it refuses their merge too, 400 with ProblemKeyInvalid and
// without running the handler: read as one key, "a, b" would run the
// request again under a key neither line carried. A key in the body holds
// no comma either, so that a key means the same wherever it travels.
func TestKeyListRefused(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"a, b", "a,b", `"a, b"`, `"a", "b"`, ","} {
		_, err := server.ParseKey(v)
		require.ErrorIs(t, err, server.ErrInvalidKey, "%q", v)
	}

	var ran atomic.Int32
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ran.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	header := httptest.NewServer(server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true})(app))
	t.Cleanup(header.Close)
	body := httptest.NewServer(server.Middleware(memstore.New(memstore.Options{}),
		server.Options{SingleTenant: true, BodyKey: "idempotency_key"})(app))
	t.Cleanup(body.Close)

	send := func(t *testing.T, url, payload string, keys ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(payload))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for _, k := range keys {
			req.Header.Add("Idempotency-Key", k)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var p struct{ Type string }
		_ = json.NewDecoder(resp.Body).Decode(&p)
		return resp.StatusCode, p.Type
	}

	cases := []struct {
		name    string
		url     string
		payload string
		keys    []string
		status  int
	}{
		{"one key", header.URL, `{}`, []string{"a"}, http.StatusCreated},
		{"two lines", header.URL, `{}`, []string{"a", "b"}, http.StatusBadRequest},
		{"two lines merged", header.URL, `{}`, []string{"a, b"}, http.StatusBadRequest},
		{"merged without the space", header.URL, `{}`, []string{"a,b"}, http.StatusBadRequest},
		{"quoted list", header.URL, `{}`, []string{`"a, b"`}, http.StatusBadRequest},
		{"two quoted keys merged", header.URL, `{}`, []string{`"a", "b"`}, http.StatusBadRequest},
		{"body key", body.URL, `{"idempotency_key":"c"}`, nil, http.StatusCreated},
		{"body key with a comma", body.URL, `{"idempotency_key":"c, d"}`, nil, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := ran.Load()
			status, typ := send(t, tc.url, tc.payload, tc.keys...)
			require.Equal(t, tc.status, status)
			if tc.status == http.StatusBadRequest {
				assert.Equal(t, server.ProblemKeyInvalid, typ)
				assert.Equal(t, before, ran.Load(), "the handler did not run")
			} else {
				assert.Equal(t, before+1, ran.Load())
			}
		})
	}
}
