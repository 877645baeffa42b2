// This file tests the profiles: their values, the recognisers of each
// API's own answers, and each profile's client driven through Do against a
// fake that behaves as the provider documents (fakeprovider_test.go).

package idem

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProfileValues pins each profile's values, the ones the README's
// table gives with their sources.
func TestProfileValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		p         Profile
		place     string
		maxKey    int
		retention time.Duration
		hints     []string
		required  []string
		reused    bool
		replayed  bool
	}{
		{Stripe(), "header Idempotency-Key", 255, 24 * time.Hour, []string{"Stripe-Should-Retry"}, nil, false, false},
		{Adyen(), "header Idempotency-Key", 64, 7 * 24 * time.Hour, []string{"Transient-Error"}, nil, false, false},
		{PayPal(), "header PayPal-Request-Id", 108, 3 * time.Hour, nil, nil, true, false},
		{Square(), "body idempotency_key", 45, time.Hour, nil, nil, true, false},
		{GoCardless(), "header Idempotency-Key", 36, time.Hour, nil, []string{"GoCardless-Version"}, false, true},
	}
	require.Len(t, Profiles(), len(cases))
	for _, tc := range cases {
		p := tc.p
		place := "header " + p.Header
		if p.BodyKey != "" {
			place = "body " + p.BodyKey
		}
		assert.Equal(t, tc.place, place, p.Name)
		assert.Equal(t, tc.maxKey, p.MaxKeyLen, p.Name)
		assert.Equal(t, tc.retention, p.KeyRetention, p.Name)
		assert.Equal(t, tc.hints, p.RetryHints, p.Name)
		assert.Equal(t, tc.required, p.RequiredHeaders, p.Name)
		assert.Equal(t, tc.reused, p.IsKeyReused != nil, p.Name)
		assert.Equal(t, tc.replayed, p.IsReplayed != nil, p.Name)
		assert.NotEmpty(t, p.Sources, p.Name)
		for _, s := range p.Sources {
			assert.True(t, strings.HasPrefix(s, "https://"), "%s: %s", p.Name, s)
		}
		_, err := New(Options{Profile: p})
		assert.NoError(t, err, p.Name)
	}
	a, b := Stripe(), Stripe()
	a.RetryHints[0] = "X"
	assert.Equal(t, "Stripe-Should-Retry", b.RetryHints[0], "each call returns its own value")
}

func TestProviderRecognisers(t *testing.T) {
	t.Parallel()
	resp := func(status int, body string) *Response {
		return &Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
	}
	cases := []struct {
		name string
		f    func(*Response) bool
		r    *Response
		want bool
	}{
		{"PayPal: request id previously used", paypalKeyReused, resp(422, `{"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"PAYPAL_REQUEST_ID_PREVIOUSLY_USED"}]}`), true},
		{"PayPal v1: duplicate request id", paypalKeyReused, resp(400, `{"name":"DUPLICATE_REQUEST_ID","message":"The value of PayPal-Request-Id header has already been used."}`), true},
		{"PayPal: another 422", paypalKeyReused, resp(422, `{"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"DUPLICATE_INVOICE_ID"}]}`), false},
		{"PayPal: not JSON", paypalKeyReused, &Response{StatusCode: 422, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte(`PAYPAL_REQUEST_ID_PREVIOUSLY_USED`)}, false},
		{"Square: key reused", squareKeyReused, resp(400, `{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"IDEMPOTENCY_KEY_REUSED"}]}`), true},
		{"Square: among other errors", squareKeyReused, resp(400, `{"errors":[{"code":"VALUE_TOO_LONG"},{"code":"IDEMPOTENCY_KEY_REUSED"}]}`), true},
		{"Square: a decline", squareKeyReused, resp(402, `{"errors":[{"category":"PAYMENT_METHOD_ERROR","code":"CARD_DECLINED"}]}`), false},
		{"GoCardless: creation conflict", gocardlessReplayed, resp(409, `{"error":{"type":"invalid_state","errors":[{"reason":"idempotent_creation_conflict","links":{"conflicting_resource_id":"PM1"}}]}}`), true},
		{"GoCardless: another conflict", gocardlessReplayed, resp(409, `{"error":{"type":"invalid_state","errors":[{"reason":"mandate_is_inactive"}]}}`), false},
		{"GoCardless: the reason, another status", gocardlessReplayed, resp(422, `{"error":{"type":"invalid_state","errors":[{"reason":"idempotent_creation_conflict"}]}}`), false},
		{"GoCardless: a 409 with no body", gocardlessReplayed, resp(409, ``), false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, tc.f(tc.r), tc.name)
	}
}

// profileClient returns a client for p against f, with a fresh journal
// unless noJournal.
func profileClient(t *testing.T, p Profile, noJournal bool, o Options) *Client {
	t.Helper()
	o.Profile = p
	o.PrepareRequest = setVersion
	if !noJournal {
		o.Journal = openJournal(t, t.TempDir()+"/j")
	}
	return newClient(t, quickOptions(o))
}

// TestProfilesAgainstTheirFakes drives each profile's client through Do
// against a fake of its API: the key goes where the API reads it, a
// repeat is answered as the API answers it, a key reused for another
// request is recognised where the API says so, a key the API would refuse
// is never sent, and a missing required header is caught before sending.
func TestProfilesAgainstTheirFakes(t *testing.T) {
	t.Parallel()
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, p)

			// First call: the key where the API reads it.
			c := profileClient(t, p, false, Options{})
			first, err := c.Do(profileRequest(t, p, f.srv.URL, 1, ""))
			require.NoError(t, err)
			assert.Less(t, first.StatusCode, 300)
			assert.False(t, first.Replayed)
			assert.LessOrEqual(t, len(first.Key), p.MaxKeyLen)
			assert.Equal(t, map[string]int{first.Key: 1}, f.executions())

			// A repeat with the same key, from a client without a
			// journal: the API's own answer to a retry.
			other := profileClient(t, p, true, Options{})
			again, err := other.Do(profileRequest(t, p, f.srv.URL, 1, first.Key))
			require.NoError(t, err)
			switch p.Name {
			case "gocardless":
				assert.Equal(t, 409, again.StatusCode)
				assert.True(t, again.Replayed, "the creation conflict is GoCardless's replay")
				assert.Contains(t, string(again.Body), "conflicting_resource_id")
			case "stripe":
				assert.True(t, again.Replayed)
				assert.Equal(t, first.Body, again.Body)
			default:
				assert.Equal(t, first.StatusCode, again.StatusCode)
				assert.Equal(t, first.Body, again.Body)
			}
			assert.Equal(t, 1, again.Attempts, "a replay is final")

			// The same key for another request.
			_, err = other.Do(profileRequest(t, p, f.srv.URL, 2, first.Key))
			switch p.Name {
			case "stripe", "paypal", "square":
				require.ErrorIs(t, err, ErrKeyReused, "the API says the key was used for another request")
			default:
				require.NoError(t, err, "%s documents no answer for a reused key", p.Name)
			}
			assert.Equal(t, map[string]int{first.Key: 1}, f.executions(), "nothing ran twice")

			// A key over the API's limit is never sent.
			before := len(f.executions())
			_, err = other.Do(profileRequest(t, p, f.srv.URL, 3, strings.Repeat("k", p.MaxKeyLen+1)))
			require.ErrorIs(t, err, ErrInvalidKey)
			assert.Len(t, f.executions(), before)

			// Required headers are checked before sending.
			if len(p.RequiredHeaders) > 0 {
				bare := newClient(t, quickOptions(Options{Profile: p}))
				_, err := bare.Do(profileRequest(t, p, f.srv.URL, 4, ""))
				require.ErrorIs(t, err, ErrMissingHeader)
				assert.Contains(t, strings.ToLower(err.Error()), strings.ToLower(p.RequiredHeaders[0]))
				assert.Len(t, f.executions(), before)
			}
		})
	}
}

// TestProfileHints: Stripe's and Adyen's hints through their fakes' fault
// answers: a retry hint is followed with the same key and bytes, a "do not
// retry" stops at once.
func TestProfileHints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p      Profile
		header string
	}{{Stripe(), "Stripe-Should-Retry"}, {Adyen(), "Transient-Error"}} {
		t.Run(tc.p.Name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, tc.p)
			n := 0
			f.hooks(func(w http.ResponseWriter, _ *http.Request, _ string, _ []byte) bool {
				n++
				if n <= 2 {
					f.fault(w) // 503, hint true
					return false
				}
				return true
			}, nil)
			c := profileClient(t, tc.p, false, Options{})
			resp, err := c.Do(profileRequest(t, tc.p, f.srv.URL, 1, ""))
			require.NoError(t, err)
			assert.Equal(t, 3, resp.Attempts)
			assert.Zero(t, f.mismatches())

			g := newFakeAPI(t, tc.p)
			g.hooks(func(w http.ResponseWriter, _ *http.Request, _ string, _ []byte) bool {
				g.write(w, 503, http.Header{tc.header: {"false"}}, []byte(`{"status":503}`))
				return false
			}, nil)
			_, err = c.Do(profileRequest(t, tc.p, g.srv.URL, 2, ""))
			require.ErrorIs(t, err, ErrServerSaidNoRetry)
			var e *Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, 1, e.Attempts)
		})
	}
}

// TestAdyenInFlightIsRetried: Adyen answers a request sent while the
// first with its key still runs with 422 and error code 704, marked
// transient; the profile retries it, though 422 is final by default.
func TestAdyenInFlightIsRetried(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, Adyen())
	n := 0
	f.hooks(func(w http.ResponseWriter, _ *http.Request, _ string, _ []byte) bool {
		n++
		if n == 1 {
			f.write(w, 422, http.Header{"Transient-Error": {"true"}}, []byte(`{"status":422,"errorCode":"704","message":"request already processed or in progress","errorType":"validation"}`))
			return false
		}
		return true
	}, nil)
	resp, err := profileClient(t, Adyen(), false, Options{}).Do(profileRequest(t, Adyen(), f.srv.URL, 1, ""))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, 2, resp.Attempts)
}

// FuzzProfileKeys: every key idem mints or derives fits every profile: no
// longer than its limit, in an alphabet every API takes (UUID and ULID
// characters), valid as a key, accepted by a client with the profile, and,
// for a body-keyed API, written into and read back from a body.
func FuzzProfileKeys(f *testing.F) {
	f.Add("payout", "2026-12-25", "417", []byte("secret"))
	f.Add("", "", "", []byte{})
	f.Add("refund", "\x00\xff", strings.Repeat("x", 300), []byte("k"))
	clients := map[string][2]*Client{}
	for _, p := range Profiles() {
		uuid, err := New(Options{Profile: p})
		if err != nil {
			f.Fatal(err)
		}
		ulid, err := New(Options{Profile: p, KeyFormat: ULID})
		if err != nil {
			f.Fatal(err)
		}
		clients[p.Name] = [2]*Client{uuid, ulid}
	}
	f.Fuzz(func(t *testing.T, namespace, a, b string, secret []byte) {
		keys := []string{
			DeriveKey(namespace, a, b), DeriveKey(namespace), DeriveKeyHMAC(secret, namespace, a, b),
			NewKey(), NewULID(), UUIDv7.mint(), ULID.mint(),
		}
		for _, p := range Profiles() {
			for _, k := range keys {
				require.LessOrEqual(t, len(k), p.MaxKeyLen, "%s: %q", p.Name, k)
				require.NoError(t, ValidateKey(k))
				for i := 0; i < len(k); i++ {
					c := k[i]
					require.True(t, c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z', "%q", k)
				}
				for _, c := range clients[p.Name] {
					require.NoError(t, c.checkKeyLen(k), p.Name)
				}
				if p.BodyKey != "" {
					c := clients[p.Name][0]
					op := &Operation{}
					req := profileRequest(t, p, "http://api.example", 1, k)
					body, err := c.readBody(req)
					require.NoError(t, err)
					_, err = c.keyInBody(httptest.NewRequest(http.MethodPost, "/", nil), op, "", body)
					require.NoError(t, err)
					require.Equal(t, k, op.Key)
				}
			}
			for _, c := range clients[p.Name] {
				require.LessOrEqual(t, len(c.opts.KeyFormat.mint()), p.MaxKeyLen, p.Name)
			}
		}
	})
}
