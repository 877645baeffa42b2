// This file tests keys carried in a JSON body field (Options.BodyKey)
// through Do and DoNamed: read, written, journaled with the body, sent
// byte-identical, and fingerprinted without the field.

package idem

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/internal/bodykey"
)

// TestBodyKeyMintedIntoTheBody: a body without a key gets a fresh one as
// its first member; the other bytes stay as they were, no key header is
// sent, and every attempt sends the same bytes.
func TestBodyKeyMintedIntoTheBody(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503, 503, 201))
	c := newClient(t, quickOptions(Options{Profile: Square()}))
	resp, err := c.Do(post(t, s.srv.URL, `{"amount_money":{"amount":100,"currency":"USD"}}`))
	require.NoError(t, err)
	seen := s.seen()
	require.Len(t, seen, 3)
	want := `{"idempotency_key":"` + resp.Key + `","amount_money":{"amount":100,"currency":"USD"}}`
	for _, r := range seen {
		assert.Equal(t, want, string(r.Body), "every attempt sends the same bytes")
		assert.Empty(t, r.Header.Get("Idempotency-Key"), "the key is not sent in a header")
	}
	require.NoError(t, ValidateKey(resp.Key))
}

// TestBodyKeyFromTheCaller: a key the caller put in the field is the
// operation's key, and the body is sent as the caller wrote it.
func TestBodyKeyFromTheCaller(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	c := newClient(t, quickOptions(Options{Profile: Square()}))
	body := `{ "amount": 100, "idempotency_key" : "order-417" }`
	resp, err := c.Do(post(t, s.srv.URL, body))
	require.NoError(t, err)
	assert.Equal(t, "order-417", resp.Key)
	assert.Equal(t, body, string(s.seen()[0].Body))
}

// TestBodyKeyNested: a dotted path puts the key in a nested object,
// creating it when it is missing.
func TestBodyKeyNested(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	c := newClient(t, quickOptions(Options{BodyKey: "payment.idempotency_key"}))
	resp, err := c.Do(post(t, s.srv.URL, `{"amount":1}`))
	require.NoError(t, err)
	assert.Equal(t, `{"payment":{"idempotency_key":"`+resp.Key+`"},"amount":1}`, string(s.seen()[0].Body))
}

// TestBodyKeyRefusals: a body the key cannot go in, a key the API would
// refuse, or a field that contradicts DoNamed's name, is refused before
// anything is sent.
func TestBodyKeyRefusals(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 46)
	cases := []struct {
		name, body string
		named      bool
		invalidKey bool // the error wraps ErrInvalidKey
		contains   string
	}{
		{"not JSON", `amount=100`, false, false, "not valid JSON"},
		{"a JSON array", `[{"amount":100}]`, false, false, "not a JSON object"},
		{"no body", ``, false, false, "not valid JSON"},
		{"a number in the field", `{"idempotency_key":12}`, false, false, "not a string"},
		{"the field twice", `{"idempotency_key":"a","idempotency_key":"b"}`, false, false, "ambiguous"},
		{"the field in another case", `{"Idempotency_Key":"a"}`, false, false, "ambiguous"},
		{"a key over Square's 45 bytes", `{"idempotency_key":"` + long + `"}`, false, true, "longer than the API accepts (Options.MaxKeyLen 45)"},
		{"an empty key", `{"idempotency_key":""}`, false, true, "empty"},
		{"another key than the name's", `{"idempotency_key":"mine"}`, true, false, `holds the key "mine"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScripted(t, statuses(201))
			c := newClient(t, quickOptions(Options{Profile: Square(), Journal: openJournal(t, t.TempDir()+"/j")}))
			req := post(t, s.srv.URL, tc.body)
			var err error
			if tc.named {
				_, err = c.DoNamed("payment/417", req)
			} else {
				_, err = c.Do(req)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.contains)
			assert.Equal(t, tc.invalidKey, errors.Is(err, ErrInvalidKey))
			assert.Empty(t, s.seen(), "nothing was sent")
		})
	}
}

// TestBodyKeyJournaled: the journal keeps the body with the key in it; a
// repeat is answered from the journal whether the caller's body carries
// the key or not, and wherever it puts it, while another body under the
// key is refused.
func TestBodyKeyJournaled(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	j := openJournal(t, t.TempDir()+"/j")
	c := newClient(t, quickOptions(Options{Profile: Square(), Journal: j}))
	resp, err := c.DoNamed("payment/417", post(t, s.srv.URL, `{"amount":100,"currency":"USD"}`))
	require.NoError(t, err)
	k := resp.Key

	op, ok, err := j.Lookup(k)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, `{"idempotency_key":"`+k+`","amount":100,"currency":"USD"}`, string(op.Body), "the journal holds the bytes sent")

	for name, body := range map[string]string{
		"the name, no key in the body": `{"amount":100,"currency":"USD"}`,
		"the key elsewhere, reordered": `{"currency":"USD","idempotency_key":"` + k + `","amount":100}`,
	} {
		var again *Response
		if strings.Contains(body, k) {
			again, err = c.Do(post(t, s.srv.URL, body))
		} else {
			again, err = c.DoNamed("payment/417", post(t, s.srv.URL, body))
		}
		require.NoError(t, err, name)
		assert.True(t, again.FromJournal, name)
		assert.Equal(t, k, again.Key, name)
	}
	_, err = c.Do(post(t, s.srv.URL, `{"amount":999,"currency":"USD","idempotency_key":"`+k+`"}`))
	require.ErrorIs(t, err, ErrKeyReused)
	assert.Len(t, s.seen(), 1, "only the first call reached the server")
}

// TestBodyKeyFingerprintLeavesTheFieldOut: the journal's fingerprint of a
// body-keyed request is the fingerprint of the body without the field.
func TestBodyKeyFingerprintLeavesTheFieldOut(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{Profile: Square()})
	op := &Operation{Method: "POST", URL: "https://connect.squareup.com/v2/payments",
		Body: []byte(`{"idempotency_key":"k-1","amount":100}`)}
	c.fingerprint(op, "application/json")
	assert.Equal(t, fingerprint("POST", op.URL, "application/json", []byte(`{"amount":100}`)), op.Fingerprint)
	assert.True(t, op.sameRequest(fingerprint("POST", op.URL, "application/json", op.Body)),
		"a journal written without the body key, over the whole body, still matches")
	stripped, _ := bodykey.Without(op.Body, bodykey.Path{"idempotency_key"})
	assert.Equal(t, `{"amount":100}`, string(stripped))
}
