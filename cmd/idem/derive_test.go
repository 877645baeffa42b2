package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
)

// TestDeriveMatchesLibrary: idem derive prints the keys DeriveKey and
// DeriveKeyHMAC give, in text and in JSON.
func TestDeriveMatchesLibrary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret string
		args   []string
	}{
		{"namespace only", "", []string{"payout"}},
		{"parts", "", []string{"payout", "2026-12-25", "417"}},
		{"length-prefixed", "", []string{"ns", "a", "bc"}},
		{"empty part", "", []string{"ns", ""}},
		{"unicode", "", []string{"überweisung", "€", "日本"}},
		{"hmac", "s3cret", []string{"payout", "2026-12-25", "417"}},
		{"hmac parts", "another secret", []string{"ns", "ab", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := idem.DeriveKey(tt.args[0], tt.args[1:]...)
			args := append([]string{"derive"}, tt.args...)
			var vars []string
			if tt.secret != "" {
				want = idem.DeriveKeyHMAC([]byte(tt.secret), tt.args[0], tt.args[1:]...)
				args = append([]string{"derive", "--hmac-key-env", "SECRET"}, tt.args...)
				vars = []string{"SECRET=" + tt.secret}
			}
			r := runIdem(t, "", vars, args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Equal(t, want+"\n", r.stdout)

			r = runIdem(t, "", vars, append([]string{"--json"}, args...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			var got struct {
				Key   string
				Parts []string
				HMAC  bool
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
			assert.Equal(t, want, got.Key)
			assert.Equal(t, tt.args[1:], got.Parts)
			assert.Equal(t, tt.secret != "", got.HMAC)
			if tt.secret != "" {
				assert.NotContains(t, r.stdout, tt.secret, "the secret is never printed")
			}
		})
	}
}
