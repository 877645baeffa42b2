package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		raw  bool
		want string
	}{
		{"json indented", `{"a":1,"b":[true]}`, false, "{\n  \"a\": 1,\n  \"b\": [\n    true\n  ]\n}\n"},
		{"raw json untouched", `{"a":1}`, true, `{"a":1}`},
		{"text", "amount=1&currency=usd", false, "amount=1&currency=usd\n"},
		{"text with newline", "line\n", false, "line\n"},
		{"binary as hex", "\x00\x01idem\xff", false, "00000000  00 01 69 64 65 6d ff                              |..idem.|\n"},
		{"control character as hex", "a\x1bb", false, "00000000  61 1b 62                                          |a.b|\n"},
		{"raw binary untouched", "\x00\xff", true, "\x00\xff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			require.NoError(t, writeBody(&b, []byte(tt.body), tt.raw))
			assert.Equal(t, tt.want, b.String())
		})
	}
}

func TestOtherBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, contentType string
		want, how               string
	}{
		{"first number plus one", `{"currency": "usd", "amount": 1000}`, "application/json", `{"amount":1001,"currency":"usd"}`, "amount 1000 → 1001"},
		{"decimal", `{"price": 9.99}`, "application/json", `{"price":10.99}`, "price 9.99 → 10.99"},
		{"big number", `{"n": 12345678901234567890}`, "application/json", `{"n":12345678901234567891}`, "n 12345678901234567890 → 12345678901234567891"},
		{"string when no number", `{"ref": "a"}`, "application/json", `{"ref":"a-2"}`, `ref "a" → "a-2"`},
		{"member added", `{"ok": true}`, "application/json", `{"idem_check":2,"ok":true}`, `"idem_check": 2 added`},
		{"form", "a=1", "application/x-www-form-urlencoded", "a=1&idem_check=2", "idem_check=2 added"},
		{"empty", "", "", "", ""},
		{"json array", `[1, 2]`, "application/json", "", ""},
		{"opaque", "\x00\x01", "application/octet-stream", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, how := otherBody([]byte(tt.body), tt.contentType)
			assert.Equal(t, tt.want, string(got))
			assert.Equal(t, tt.how, how)
		})
	}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		a           answer
		wantID, how string
	}{
		{"location", answer{header: map[string][]string{"Location": {"/charges/7"}}, body: []byte(`{"id": "x"}`)}, "/charges/7", "Location"},
		{"json id", answer{body: []byte(`{"id": "ch_1", "amount": 5}`)}, "ch_1", "id"},
		{"numeric id", answer{body: []byte(`{"id": 42}`)}, "42", "id"},
		{"nested data id", answer{body: []byte(`{"data": {"id": "p_9"}}`)}, "p_9", "id"},
		{"body", answer{body: []byte(`ok`)}, "body:2689367b205c16ce", "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, how := tt.a.identity()
			assert.Equal(t, tt.wantID, id)
			assert.Equal(t, tt.how, how)
		})
	}
}
