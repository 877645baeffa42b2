package redisstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

func TestRecordKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		k    server.Key
		want string
	}{
		{"plain", server.Key{Scope: "acme", Key: "order-1"}, "idem:{4:acmeorder-1}"},
		{"no scope", server.Key{Key: "k"}, "idem:{0:k}"},
		{"braces escaped", server.Key{Scope: "a}b", Key: "{c}"}, "idem:{5:a%7Db{c%7D}"},
		{"percent escaped", server.Key{Scope: "%7D", Key: "%"}, "idem:{5:%257D%25}"},
		{"binary scope", server.Key{Scope: "\x00\xff", Key: "k"}, "idem:{2:\x00\xffk}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, recordKey(DefaultPrefix, tt.k))
		})
	}
}

// TestRecordKeysDiffer lists pairs that a careless encoding would merge.
func TestRecordKeysDiffer(t *testing.T) {
	t.Parallel()
	pairs := [][2]server.Key{
		{{Scope: "ab", Key: "c"}, {Scope: "a", Key: "bc"}},
		{{Scope: "", Key: "1:ab"}, {Scope: "1", Key: "ab"}},
		{{Scope: "a}", Key: "b"}, {Scope: "a%7D", Key: "b"}},
		{{Scope: "a", Key: "}b"}, {Scope: "a}", Key: "b"}},
		{{Scope: "%", Key: "25"}, {Scope: "%25", Key: ""}},
	}
	for _, p := range pairs {
		assert.NotEqual(t, recordKey(DefaultPrefix, p[0]), recordKey(DefaultPrefix, p[1]), "%q and %q", p[0], p[1])
	}
}

// hashTag is the part of key Redis Cluster hashes: between the first '{'
// and the first '}' after it, if that is not empty.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// FuzzRecordKey checks that distinct (scope, key) pairs never share a
// Redis key, and that the hash tag spans the whole identity.
func FuzzRecordKey(f *testing.F) {
	f.Add("ab", "c", "a", "bc")
	f.Add("a}", "b", "a%7D", "b")
	f.Add("", "{x}", "{", "x}")
	f.Fuzz(func(t *testing.T, s1, k1, s2, k2 string) {
		a, b := server.Key{Scope: s1, Key: k1}, server.Key{Scope: s2, Key: k2}
		ka, kb := recordKey(DefaultPrefix, a), recordKey(DefaultPrefix, b)
		if a != b {
			require.NotEqual(t, ka, kb, "%q and %q", a, b)
		}
		require.Equal(t, ka[len(DefaultPrefix)+1:len(ka)-1], hashTag(ka), "the hash tag is the whole identity")
	})
}
