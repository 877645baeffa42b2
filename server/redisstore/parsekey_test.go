package redisstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

func TestParseRecordKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		want   server.Key
		wantOK bool
	}{
		{"plain", "idem:{4:acmeorder-1}", server.Key{Scope: "acme", Key: "order-1"}, true},
		{"no scope", "idem:{0:k}", server.Key{Key: "k"}, true},
		{"empty key", "idem:{1:a}", server.Key{Scope: "a"}, true},
		{"both empty", "idem:{0:}", server.Key{}, true},
		{"escapes", "idem:{5:a%7Db{c%7D}", server.Key{Scope: "a}b", Key: "{c}"}, true},
		{"percent", "idem:{5:%257D%25}", server.Key{Scope: "%7D", Key: "%"}, true},
		{"binary", "idem:{2:\x00\xffk}", server.Key{Scope: "\x00\xff", Key: "k"}, true},

		{"other prefix", "other:{0:k}", server.Key{}, false},
		{"no tag", "idem:0:k", server.Key{}, false},
		{"unclosed", "idem:{0:k", server.Key{}, false},
		{"no length", "idem:{k}", server.Key{}, false},
		{"empty length", "idem:{:k}", server.Key{}, false},
		{"leading zero", "idem:{01:ak}", server.Key{}, false},
		{"sign", "idem:{+1:ak}", server.Key{}, false},
		{"length past the end", "idem:{3:ab}", server.Key{}, false},
		{"huge length", "idem:{99999999999999999999:a}", server.Key{}, false},
		{"bare brace", "idem:{1:a}b}", server.Key{}, false},
		{"bare percent", "idem:{1:a%}", server.Key{}, false},
		{"unknown escape", "idem:{0:%41}", server.Key{}, false},
		{"escape split by the length", "idem:{1:%25}", server.Key{}, false},
		{"text after the tag", "idem:{0:k}x", server.Key{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseRecordKey(DefaultPrefix, tt.in)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
			if ok {
				assert.Equal(t, tt.in, recordKey(DefaultPrefix, got), "a parsed name is the one recordKey writes")
			}
		})
	}
}

// FuzzParseRecordKey checks that parseRecordKey inverts recordKey: every
// (scope, key) comes back from its name, and every name it accepts is
// the one recordKey writes for what it returns, so no two names decode to
// one key.
func FuzzParseRecordKey(f *testing.F) {
	f.Add("acme", "order-1", "idem:{4:acmeorder-1}")
	f.Add("a}b", "{c}", "idem:{5:a%7Db{c%7D}")
	f.Add("%", "25", "idem:{1:%25}")
	f.Add("", "", "idem:{0:}")
	f.Fuzz(func(t *testing.T, scope, key, name string) {
		k := server.Key{Scope: scope, Key: key}
		got, ok := parseRecordKey(DefaultPrefix, recordKey(DefaultPrefix, k))
		require.True(t, ok, "%q", k)
		require.Equal(t, k, got)

		if got, ok := parseRecordKey(DefaultPrefix, name); ok {
			require.Equal(t, name, recordKey(DefaultPrefix, got), "%q decodes to %q", name, got)
		}
	})
}

func TestGlobEscape(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "idem:", globEscape("idem:"))
	assert.Equal(t, `a\*b\?c\[d\]e\\f\^`, globEscape(`a*b?c[d]e\f^`))
}
