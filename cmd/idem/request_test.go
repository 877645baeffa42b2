package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in          string
		name, value string
		err         string
	}{
		{in: "X-Client-Id: acme", name: "X-Client-Id", value: "acme"},
		{in: "authorization:Bearer sk", name: "Authorization", value: "Bearer sk"},
		{in: "X-Empty:", name: "X-Empty", value: ""},
		{in: "X-Spaces:   a b  ", name: "X-Spaces", value: "a b"},
		{in: "X-Colon: a:b", name: "X-Colon", value: "a:b"},
		{in: "no colon", err: `want "Name: value"`},
		{in: ": value", err: "not a valid header name"},
		{in: "Bad Name: v", err: "not a valid header name"},
		{in: "X-Ctl: a\x00b", err: "control character"},
		{in: "X-Ctl: a\nb", err: "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			name, value, err := parseHeader(tt.in)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.name, name)
			assert.Equal(t, tt.value, value)
		})
	}
}

func TestParseHeaderFromEnv(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string { return map[string]string{"TOKEN": "Bearer sk"}[k] }
	name, value, err := parseHeaderFromEnv("Authorization=TOKEN", getenv)
	require.NoError(t, err)
	assert.Equal(t, "Authorization", name)
	assert.Equal(t, "Bearer sk", value)
	for _, bad := range []string{"Authorization", "Authorization=", "Authorization=UNSET", "Bad Name=TOKEN"} {
		_, _, err := parseHeaderFromEnv(bad, getenv)
		assert.Error(t, err, bad)
	}
}

// FuzzParseHeader: a header that parses is one net/http will send as it
// is: a token name and a value without control characters, trimmed.
func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{"X-Client-Id: acme", "a:", ":", "Bad Name: v", "X: \x00", "X:\t v \t", "Ü: v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, value, err := parseHeader(s)
		if err != nil {
			return
		}
		if !validToken(name) {
			t.Fatalf("%q: name %q is not a token", s, name)
		}
		if strings.Trim(value, " \t") != value {
			t.Fatalf("%q: value %q not trimmed", s, value)
		}
		for i := 0; i < len(value); i++ {
			if c := value[i]; c < 0x20 && c != '\t' || c == 0x7f {
				t.Fatalf("%q: value %q has a control character", s, value)
			}
		}
	})
}
