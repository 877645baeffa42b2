// This file tests the recognition of key reuse: the signals as a table,
// and three kinds of server through Do and HTTPClient, with the journal's
// record of each.

package idem

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/internal/key"
)

func TestReusedBySignal(t *testing.T) {
	t.Parallel()
	problem := http.Header{"Content-Type": {"application/problem+json"}}
	jsonType := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   bool
	}{
		{"idem's problem type", 422, problem, `{"type":"` + key.ReusedProblemType + `","status":422}`, true},
		{"idem's problem type, any status", 409, problem, `{"type":"` + key.ReusedProblemType + `"}`, true},
		{"IETF draft: 422 titled for the key", 422, problem, `{"type":"https://developer.example.com/idempotency","title":"Idempotency-Key is already used"}`, true},
		{"IETF draft: 422 whose type names idempotency", 422, problem, `{"type":"https://api.example/problems/idempotency-key-reused"}`, true},
		{"422 with a code naming idempotency", 422, jsonType, `{"code":"idempotency_key_reused"}`, true},
		{"IETF draft: 422 with a Link", 422, http.Header{"Link": {`<https://developer.example.com/idempotency>; rel="describedby"; type="text/html"`}}, "", true},
		{"Stripe: 400 idempotency_error", 400, jsonType, `{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}`, true},
		{"Stripe: idempotency_error, other status", 409, jsonType, `{"error":{"type":"idempotency_error"}}`, true},
		{"FastAPI validation 422", 422, jsonType, `{"detail":[{"loc":["body","amount"],"msg":"field required","type":"value_error.missing"}]}`, false},
		{"GitHub validation 422", 422, jsonType, `{"message":"Validation Failed","errors":[{"resource":"Issue","field":"title","code":"missing_field"}]}`, false},
		{"Rails validation 422", 422, jsonType, `{"errors":{"email":["has already been taken"]}}`, false},
		{"plain-text 422", 422, http.Header{"Content-Type": {"text/plain"}}, `idempotency key reused`, false},
		{"IETF draft: 400 for a missing key", 400, problem, `{"type":"https://developer.example.com/idempotency","title":"Idempotency-Key is missing"}`, false},
		{"Stripe: another error type", 400, jsonType, `{"error":{"type":"invalid_request_error"}}`, false},
		{"a Link that is not describedby", 422, http.Header{"Link": {`<https://developer.example.com/idempotency>; rel="help"`}}, "", false},
		{"a describedby Link elsewhere", 422, http.Header{"Link": {`<https://developer.example.com/validation>; rel="describedby"`}}, "", false},
		{"IETF draft: a key reuse code in snake case", 422, jsonType, `{"code":"idempotency_key_already_used"}`, true},
		{"a key reuse title after a byte order mark", 422, problem, "\ufeff" + `{"title":"Idempotency-Key is already used"}`, true},
		{"Stripe: idempotency_error as text/json", 400, http.Header{"Content-Type": {"text/json"}}, `{"error":{"type":"idempotency_error"}}`, true},
		{"a type URN naming key reuse", 422, problem, `{"type":"urn:problem-type:idempotency-key-reused"}`, true},
		{"422: the key header is missing", 422, problem, `{"title":"Idempotency-Key header is required"}`, false},
		{"422: the key is too long", 422, problem, `{"type":"https://api.example.com/problems/validation","title":"Idempotency-Key must be at most 64 characters"}`, false},
		{"422: the key is malformed, by code", 422, jsonType, `{"code":"idempotency_key_invalid"}`, false},
		{"422: a validation type documented under an idempotency path", 422, problem, `{"type":"https://docs.example.com/idempotency/errors/amount-invalid","title":"Amount must be positive"}`, false},
		{"422: a validation type on a host named for idempotency", 422, problem, `{"type":"https://idempotent-payments.example/problems/validation","title":"Validation failed"}`, false},
		{"422: a reuse word with no idempotency", 422, problem, `{"title":"Email already used"}`, false},
		{"a describedby Link under an idempotency path", 422, http.Header{"Link": {`<https://docs.example.com/idempotency/amounts>; rel="describedby"`}}, "", false},
		{"not JSON", 422, problem, `{"type":`, false},
		{"a JSON array", 422, jsonType, `["idempotency"]`, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, reusedBySignal(tc.status, tc.header, []byte(tc.body)), tc.name)
	}
}

// reuseServers are servers that answer a request under a key that was
// first used for another: one that does not recognise keys at all and
// finds the request invalid (422), one that says so as the IETF draft
// does (422 problem document), one that finds the key itself invalid (a
// 422 about the key, which is no reuse), one that says so as Stripe does
// (400).
var reuseServers = []reuseServer{
	{"validation 422", 422, "application/json", `{"detail":[{"loc":["body","amount"],"msg":"value is not a valid integer"}]}`, false},
	{"IETF key reuse 422", 422, "application/problem+json", `{"type":"https://developer.example.com/idempotency","title":"Idempotency-Key is already used","detail":"Idempotency Key MUST not be reused across different payloads of this operation."}`, true},
	{"422 about the key itself", 422, "application/problem+json", `{"type":"https://docs.example.com/idempotency/errors/key-too-long","title":"Idempotency-Key must be at most 64 characters"}`, false},
	{"Stripe idempotency_error 400", 400, "application/json", `{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}`, true},
}

type reuseServer struct {
	name   string
	status int
	header string
	body   string
	reused bool
}

// start serves the server's answer to every request, and returns it with
// a client journaling to a journal of its own.
func (srv reuseServer) start(t *testing.T) (*scripted, *Client, *Journal) {
	s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", srv.header)
		w.WriteHeader(srv.status)
		io.WriteString(w, srv.body)
	})
	j := openJournal(t, "")
	return s, newClient(t, quickOptions(Options{Journal: j})), j
}

func TestKeyReuseThroughDo(t *testing.T) {
	t.Parallel()
	for _, srv := range reuseServers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			s, c, j := srv.start(t)
			send := func() (*Response, error) {
				req := post(t, s.srv.URL, `{"amount":"ten"}`)
				req.Header.Set("Idempotency-Key", "reuse-1")
				return c.Do(req)
			}
			for i, fromJournal := range []bool{false, true} {
				resp, err := send()
				if srv.reused {
					require.ErrorIs(t, err, ErrKeyReused, "call %d", i)
					var e *Error
					require.ErrorAs(t, err, &e)
					assert.Equal(t, srv.status, e.StatusCode)
					assert.Equal(t, srv.body, string(e.Body))
					continue
				}
				require.NoError(t, err, "a validation error is an answer, not key reuse")
				assert.Equal(t, srv.status, resp.StatusCode)
				assert.Equal(t, srv.body, string(resp.Body))
				assert.Equal(t, fromJournal, resp.FromJournal)
			}
			assert.Len(t, s.seen(), 1, "the second call is answered from the journal")
			op, ok, err := j.Lookup("reuse-1")
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, Failed, op.State)
			assert.Equal(t, srv.reused, op.Response.KeyReused, "the journal tells key reuse from a plain 4xx")
			assert.Equal(t, srv.status, op.Response.StatusCode)
		})
	}
}

func TestKeyReuseThroughHTTPClient(t *testing.T) {
	t.Parallel()
	for _, srv := range reuseServers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			s, c, j := srv.start(t)
			for range 2 {
				resp, err := c.HTTPClient().Post(s.srv.URL, "application/json", stringsReader(`{"amount":"ten"}`))
				require.NoError(t, err, "the server's answer is a response, whatever it says")
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, srv.status, resp.StatusCode)
				assert.Equal(t, srv.body, string(body))
				k, err := ParseKey(resp.Request.Header.Get("Idempotency-Key"))
				require.NoError(t, err, "the key is on resp.Request")
				op, ok, err := j.Lookup(k)
				require.NoError(t, err)
				require.True(t, ok)
				assert.Equal(t, Failed, op.State)
				assert.Equal(t, srv.reused, op.Response.KeyReused)
			}
			assert.Len(t, s.seen(), 2, "each POST is an operation of its own, under its own key")
		})
	}
}

// TestIsKeyReusedHook: an API that signals key reuse its own way is
// recognised through Options.IsKeyReused; without the hook the same answer
// is a plain 4xx.
func TestIsKeyReusedHook(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Error-Code", "DUPLICATE_REQUEST_ID")
		w.WriteHeader(http.StatusBadRequest)
	})
	var asked []int
	hook := func(r *Response) bool {
		asked = append(asked, r.StatusCode)
		return r.Header.Get("X-Error-Code") == "DUPLICATE_REQUEST_ID"
	}
	c := newClient(t, quickOptions(Options{IsKeyReused: hook}))
	_, err := c.Do(post(t, s.srv.URL, `{}`))
	require.ErrorIs(t, err, ErrKeyReused)
	assert.Equal(t, []int{400}, asked)

	resp, err := newClient(t, quickOptions(Options{})).Do(post(t, s.srv.URL, `{}`))
	require.NoError(t, err)
	assert.Equal(t, 400, resp.StatusCode)

	ok := newScripted(t, statuses(201))
	_, err = c.Do(post(t, ok.srv.URL, `{}`))
	require.NoError(t, err)
	assert.Equal(t, []int{400}, asked, "a success is never asked about")
}
