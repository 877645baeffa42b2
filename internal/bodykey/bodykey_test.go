package bodykey

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/internal/canonjson"
)

func mustPath(t testing.TB, s string) Path {
	t.Helper()
	p, err := ParsePath(s)
	require.NoError(t, err)
	return p
}

func TestParsePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Path
		ok   bool
	}{
		{"idempotency_key", Path{"idempotency_key"}, true},
		{"payment.idempotency_key", Path{"payment", "idempotency_key"}, true},
		{"", nil, false},
		{"a..b", nil, false},
		{".a", nil, false},
		{"a.", nil, false},
		{"a\x00b", nil, false},
		{"é", nil, false},
	} {
		got, err := ParsePath(tc.in)
		if !tc.ok {
			assert.ErrorIs(t, err, ErrPath, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got)
		assert.Equal(t, tc.in, got.String())
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, path string
		key              string
		found            bool
		err              error
	}{
		{"top level", `{"amount":100,"idempotency_key":"k-1"}`, "idempotency_key", "k-1", true, nil},
		{"escaped value", `{"idempotency_key":"a\"b\u0041"}`, "idempotency_key", `a"bA`, true, nil},
		{"escaped name", `{"idempotency\u005fkey":"k"}`, "idempotency_key", "k", true, nil},
		{"nested", `{"payment":{"x":[1,{"idempotency_key":"no"}],"idempotency_key":"yes"}}`, "payment.idempotency_key", "yes", true, nil},
		{"absent", `{"amount":100}`, "idempotency_key", "", false, nil},
		{"null", `{"idempotency_key":null}`, "idempotency_key", "", false, nil},
		{"absent parent", `{"amount":100}`, "payment.idempotency_key", "", false, nil},
		{"a number", `{"idempotency_key":12}`, "idempotency_key", "", false, ErrNotString},
		{"an object", `{"idempotency_key":{}}`, "idempotency_key", "", false, ErrNotString},
		{"twice", `{"idempotency_key":"a","idempotency_key":"b"}`, "idempotency_key", "", false, ErrAmbiguous},
		{"another case", `{"Idempotency_Key":"a"}`, "idempotency_key", "", false, ErrAmbiguous},
		{"parent not an object", `{"payment":[1]}`, "payment.idempotency_key", "", false, ErrNotObject},
		{"array body", `[{"idempotency_key":"k"}]`, "idempotency_key", "", false, ErrNotObject},
		{"invalid JSON", `{"idempotency_key":"k"`, "idempotency_key", "", false, ErrNotObject},
		{"empty body", ``, "idempotency_key", "", false, ErrNotObject},
		{"key inside a string is no member", `{"note":"\"idempotency_key\":\"x\""}`, "idempotency_key", "", false, nil},
	} {
		key, found, err := Get([]byte(tc.body), mustPath(t, tc.path))
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.found, found, tc.name)
		assert.Equal(t, tc.key, key, tc.name)
	}
}

func TestPut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, path, want string
		err                    error
	}{
		{"first member", `{"amount":100}`, "idempotency_key", `{"idempotency_key":"K","amount":100}`, nil},
		{"whitespace kept", "{\n  \"amount\": 100\n}", "idempotency_key", "{\"idempotency_key\":\"K\",\n  \"amount\": 100\n}", nil},
		{"empty object", `{}`, "idempotency_key", `{"idempotency_key":"K"}`, nil},
		{"empty object with space", `{ }`, "idempotency_key", `{"idempotency_key":"K" }`, nil},
		{"null replaced", `{"a":1,"idempotency_key":null}`, "idempotency_key", `{"a":1,"idempotency_key":"K"}`, nil},
		{"into an existing object", `{"payment":{"amount":1}}`, "payment.idempotency_key", `{"payment":{"idempotency_key":"K","amount":1}}`, nil},
		{"missing objects created", `{"amount":1}`, "a.b.idempotency_key", `{"a":{"b":{"idempotency_key":"K"}},"amount":1}`, nil},
		{"a string already there", `{"idempotency_key":"x"}`, "idempotency_key", "", ErrNotString},
		{"not an object", `"s"`, "idempotency_key", "", ErrNotObject},
	} {
		got, err := Put([]byte(tc.body), mustPath(t, tc.path), "K")
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, string(got), tc.name)
		key, found, err := Get(got, mustPath(t, tc.path))
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, "K", key)
	}
}

func TestPutQuotes(t *testing.T) {
	t.Parallel()
	got, err := Put([]byte(`{}`), Path{"k"}, `a"b\c`)
	require.NoError(t, err)
	assert.Equal(t, `{"k":"a\"b\\c"}`, string(got))
	key, _, err := Get(got, Path{"k"})
	require.NoError(t, err)
	assert.Equal(t, `a"b\c`, key)
}

func TestWithout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, path, want string
		removed                bool
	}{
		{"first", `{"idempotency_key":"k","a":1}`, "idempotency_key", `{"a":1}`, true},
		{"last", `{"a":1,"idempotency_key":"k"}`, "idempotency_key", `{"a":1}`, true},
		{"middle", `{"a":1, "idempotency_key" : "k" ,"b":2}`, "idempotency_key", `{"a":1, "b":2}`, true},
		{"only", `{"idempotency_key":"k"}`, "idempotency_key", `{}`, true},
		{"nested", `{"p":{"idempotency_key":"k","a":1}}`, "p.idempotency_key", `{"p":{"a":1}}`, true},
		{"absent", `{"a":1}`, "idempotency_key", `{"a":1}`, false},
		{"not JSON", `a=1`, "idempotency_key", `a=1`, false},
		{"ambiguous", `{"idempotency_key":"k","IDEMPOTENCY_KEY":"j"}`, "idempotency_key", `{"idempotency_key":"k","IDEMPOTENCY_KEY":"j"}`, false},
	} {
		got, removed := Without([]byte(tc.body), mustPath(t, tc.path))
		assert.Equal(t, tc.removed, removed, tc.name)
		assert.Equal(t, tc.want, string(got), tc.name)
		assert.True(t, json.Valid(got) || !json.Valid([]byte(tc.body)), tc.name)
	}
}

// TestWithoutUndoesPut: a body with the key put in and the body as the
// caller wrote it fingerprint alike, wherever the key was placed.
func TestWithoutUndoesPut(t *testing.T) {
	t.Parallel()
	p := Path{"idempotency_key"}
	caller := []byte(`{"amount":100,"currency":"USD"}`)
	put, err := Put(caller, p, "K")
	require.NoError(t, err)
	elsewhere := []byte(`{"amount":100,"currency":"USD","idempotency_key":"K"}`)
	canon := func(b []byte) string {
		var c canonjson.Canonicalizer
		out, ok := c.Append(nil, b)
		require.True(t, ok)
		return string(out)
	}
	a, _ := Without(put, p)
	b, _ := Without(elsewhere, p)
	assert.Equal(t, canon(caller), canon(a))
	assert.Equal(t, canon(a), canon(b))
}

// FuzzBodyKey: for any body, Get, Put and Without never panic; a key put
// in reads back, and taking it out again leaves the body's canonical form
// as it was.
func FuzzBodyKey(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1}`, `{"p":{"q":[1,2,{"r":null}]}}`, `{"idempotency_key":null}`,
		`{"idempotency_key":"x"}`, `[1]`, `"s"`, `{"a":"\u0022\\"}`, `{"P":{}}`, ``} {
		f.Add([]byte(seed), "idempotency_key")
		f.Add([]byte(seed), "p.idempotency_key")
	}
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		p, err := ParsePath(path)
		if err != nil {
			return
		}
		_, found, err := Get(body, p)
		stripped, removed := Without(body, p)
		if !removed {
			assert.Equal(t, body, stripped)
		} else {
			assert.True(t, json.Valid(stripped))
		}
		if err != nil || found {
			return
		}
		put, err := Put(body, p, "01JDX3W5ZK8Q4G7T2N6B9C1V0E")
		if err != nil {
			assert.True(t, errors.Is(err, ErrNotObject) || errors.Is(err, ErrAmbiguous) || errors.Is(err, ErrNotString), "%v", err)
			return
		}
		require.True(t, json.Valid(put))
		key, found, err := Get(put, p)
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, "01JDX3W5ZK8Q4G7T2N6B9C1V0E", key)
		out, removed := Without(put, p)
		require.True(t, removed)
		var c canonjson.Canonicalizer
		want, okWant := c.Append(nil, stripped) // the body without a null key
		wantS := string(want)
		got, okGot := c.Append(nil, out)
		if okWant && okGot && len(p) == 1 {
			// A nested put may have created objects; a top-level one
			// only adds the member.
			assert.Equal(t, wantS, string(got))
		}
	})
}
