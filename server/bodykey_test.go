// This file tests Options.BodyKey: the middleware reads the key from a
// JSON body field, fingerprints the body without it, and replays a
// body-keyed request, including one the idem client sent.

package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/server"
)

func TestBodyKeyContract(t *testing.T) {
	t.Parallel()
	square := server.Options{BodyKey: "idempotency_key"}
	body := func(k, rest string) string { return `{"idempotency_key":"` + k + `",` + rest + `}` }
	t.Run("first runs, repeats replay wherever the key is", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, square, nil)
		k := newKey()
		first := h.do(call{body: body(k, `"amount":100`), contentType: jsonType})
		require.Equal(t, 201, first.status, first.body)
		assert.Contains(t, first.body, fmt.Sprintf(`"len":%d`, len(body(k, `"amount":100`))), "the handler got the body as sent")
		for _, again := range []string{
			body(k, `"amount":100`),
			`{ "amount": 100, "idempotency_key": "` + k + `" }`,
		} {
			r := h.do(call{body: again, contentType: jsonType})
			require.Equal(t, 201, r.status)
			assert.True(t, r.replayed())
			assert.Equal(t, first.body, r.body)
		}
		assert.Equal(t, int64(1), h.app.calls.Load())
		requireProblem(t, h.do(call{body: body(k, `"amount":999`), contentType: jsonType}), 422, server.ProblemKeyReused)
		assert.Equal(t, int64(1), h.app.calls.Load())
	})
	t.Run("a key header plays no part", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, square, nil)
		k := newKey()
		require.Equal(t, 201, h.do(call{key: "header-key", body: body(k, `"a":1`), contentType: jsonType}).status)
		r := h.do(call{key: "another", body: body(k, `"a":1`), contentType: jsonType})
		assert.True(t, r.replayed(), "the body's key decides")
		requireProblem(t, h.do(call{key: newKey(), body: `{"a":1}`, contentType: jsonType}), 400, server.ProblemKeyMissing)
	})
	for _, tc := range []struct {
		name, body, problem string
	}{
		{"no field", `{"amount":100}`, server.ProblemKeyMissing},
		{"null", `{"idempotency_key":null}`, server.ProblemKeyMissing},
		{"no body", ``, server.ProblemKeyInvalid},
		{"not JSON", `amount=100`, server.ProblemKeyInvalid},
		{"an array", `[{"idempotency_key":"k"}]`, server.ProblemKeyInvalid},
		{"a number", `{"idempotency_key":7}`, server.ProblemKeyInvalid},
		{"twice", `{"idempotency_key":"a","idempotency_key":"b"}`, server.ProblemKeyInvalid},
		{"another case", `{"IDEMPOTENCY_KEY":"a"}`, server.ProblemKeyInvalid},
		{"empty", `{"idempotency_key":""}`, server.ProblemKeyInvalid},
		{"too long", `{"idempotency_key":"` + strings.Repeat("k", 256) + `"}`, server.ProblemKeyInvalid},
		{"not printable", `{"idempotency_key":"a\u0007b"}`, server.ProblemKeyInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, square, nil)
			r := h.do(call{body: tc.body, contentType: jsonType})
			requireProblem(t, r, 400, tc.problem)
			assert.Contains(t, r.body, "idempotency_key", "the problem names the field")
			assert.Zero(t, h.app.calls.Load())
		})
	}
	t.Run("optional: no key passes through with its body", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, server.Options{BodyKey: "idempotency_key", Optional: true}, nil)
		for i := range 2 {
			r := h.do(call{body: `{"amount":100}`, contentType: jsonType})
			require.Equal(t, 201, r.status)
			assert.Contains(t, r.body, `"len":14`)
			assert.Equal(t, int64(i+1), h.app.calls.Load())
		}
	})
	t.Run("nested", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, server.Options{BodyKey: "payment.idempotency_key"}, nil)
		k := newKey()
		require.Equal(t, 201, h.do(call{body: `{"payment":{"idempotency_key":"` + k + `"},"a":1}`, contentType: jsonType}).status)
		assert.True(t, h.do(call{body: `{"a":1,"payment":{"idempotency_key":"` + k + `"}}`, contentType: jsonType}).replayed())
	})
}

func TestBodyKeyOptions(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() {
		server.Middleware(newMemstore(), server.Options{SingleTenant: true, Header: "Idempotency-Key", BodyKey: "idempotency_key"})
	}, "the key is in one place")
	assert.Panics(t, func() { server.Middleware(newMemstore(), server.Options{SingleTenant: true, BodyKey: "a..b"}) })
}

// TestBodyKeyClientAndServer: the idem client with the Square profile
// writes the key into the body; the middleware with the same field reads
// it and replays a second client's send of the same operation.
func TestBodyKeyClientAndServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{BodyKey: "idempotency_key", SingleTenant: true}, nil)
	k := idem.DeriveKey("payment", "417")
	send := func(body string) *idem.Response {
		c, err := idem.New(idem.Options{Profile: idem.Square(), MaxAttempts: 1})
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, h.srv.URL+"/v2/payments", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", jsonType)
		resp, err := c.Do(req)
		require.NoError(t, err)
		return resp
	}
	first := send(`{"amount":100,"idempotency_key":"` + k + `"}`)
	assert.Equal(t, 201, first.StatusCode)
	second := send(`{"idempotency_key":"` + k + `","amount":100}`)
	assert.True(t, second.Replayed, "the same operation, its key elsewhere in the body")
	assert.Equal(t, first.Body, second.Body)
	assert.Equal(t, int64(1), h.app.calls.Load())

	// A fresh key minted into the body by the client runs once more.
	third := send(`{"amount":100}`)
	assert.NotEqual(t, k, third.Key)
	assert.False(t, third.Replayed)
	assert.Equal(t, int64(2), h.app.calls.Load())
}
