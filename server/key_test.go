package server_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", server.MaxKeyLen)
	tests := []struct {
		name string
		in   string
		want string // "" means an error
	}{
		{"bare", "abc", "abc"},
		{"bare uuid", "0190b6a8-7c41-7e1f-9d2f-3c1f8a4b2e10", "0190b6a8-7c41-7e1f-9d2f-3c1f8a4b2e10"},
		{"bare with inner space and quote", `a b"c`, `a b"c`},
		{"bare single char", "x", "x"},
		{"bare max length", long, long},
		{"quoted", `"abc"`, "abc"},
		{"quoted escapes", `"a\"b\\c"`, `a"b\c`},
		{"quoted max length with escapes", `"` + strings.Repeat(`\"`, server.MaxKeyLen) + `"`, strings.Repeat(`"`, server.MaxKeyLen)},
		{"quoted firefox number", `"1234567890123456789"`, "1234567890123456789"},
		{"quoted inner space kept", `"a b"`, "a b"},
		{"quoted surrounding spaces", `" a "`, ""},
		{"empty", "", ""},
		{"bare too long", long + "k", ""},
		{"bare control char", "ab\tc", ""},
		{"bare non-ascii", "caf\u00e9", ""},
		{"bare DEL", "ab\x7f", ""},
		{"quoted empty", `""`, ""},
		{"quoted too long", `"` + long + `k"`, ""},
		{"quoted unterminated", `"abc`, ""},
		{"quoted lone quote", `"`, ""},
		{"quoted bad escape", `"a\nb"`, ""},
		{"quoted trailing backslash", `"abc\`, ""},
		{"quoted parameters", `"abc";p=1`, ""},
		{"quoted trailing text", `"abc" x`, ""},
		{"quoted with surrounding spaces", ` "abc" `, "abc"},
		{"bare with surrounding spaces", " \tabc ", "abc"},
		{"spaces only", "   ", ""},
		{"quoted control char", "\"a\x01b\"", ""},
		{"quoted non-ascii", "\"caf\u00e9\"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := server.ParseKey(tt.in)
			if tt.want == "" {
				require.ErrorIs(t, err, server.ErrInvalidKey)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseKeyBareAndQuotedAgree(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"abc", `a\b`, "with space", "0190b6a8-7c41-7e1f", strings.Repeat("z", 255)} {
		bare, err := server.ParseKey(k)
		require.NoError(t, err)
		quoted, err := server.ParseKey(sfString(k))
		require.NoError(t, err)
		assert.Equal(t, bare, quoted, "key %q", k)
	}
}

func TestParseKeyBareDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := server.ParseKey("0190b6a8-7c41-7e1f-9d2f-3c1f8a4b2e10"); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}

// sfString is k serialised as an RFC 8941 sf-string.
func sfString(k string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(k) + `"`
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"abc", `"abc"`, `"a\"b"`, `"`, `""`, "\x00", strconv.Quote("k")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := server.ParseKey(v)
		if err != nil {
			require.ErrorIs(t, err, server.ErrInvalidKey)
			require.Empty(t, k)
			return
		}
		require.NotEmpty(t, k)
		require.LessOrEqual(t, len(k), server.MaxKeyLen)
		for i := 0; i < len(k); i++ {
			require.True(t, k[i] >= 0x20 && k[i] <= 0x7e, "byte %#x at %d", k[i], i)
		}
		// The quoted form of a key parses to the key, and so does the bare
		// form unless it would read as quoted.
		again, err := server.ParseKey(sfString(k))
		require.NoError(t, err)
		require.Equal(t, k, again)
		if !strings.HasPrefix(k, `"`) {
			bare, err := server.ParseKey(k)
			require.NoError(t, err)
			require.Equal(t, k, bare)
		}
	})
}
