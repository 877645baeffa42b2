package redisstore

import (
	"strconv"
	"strings"

	"github.com/idemhq/idem/server"
)

// recordKey names the one Redis key that holds k's record:
//
//	<prefix>{<n>:<scope><key>}
//
// where scope and key are escaped (a '%' becomes "%25", a '}' becomes
// "%7D") and n is the length of the escaped scope in decimal.
//
// The braces are a Redis Cluster hash tag spanning the whole identity, so
// records spread over the slots by (scope, key) and a record's slot never
// depends on the prefix. Escaping keeps a '}' in a scope or key from ending
// the tag early; the length prefix keeps ("ab", "c") and ("a", "bc") apart.
// Both together make the mapping injective: no two (scope, key) pairs name
// the same Redis key, whatever bytes they hold. A record is a single hash,
// so everything it holds is in one slot by construction; the tag also
// keeps any key a later version adds for the same record in that slot.
func recordKey(prefix string, k server.Key) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(k.Scope) + len(k.Key) + 8)
	b.WriteString(prefix)
	b.WriteByte('{')
	b.WriteString(strconv.Itoa(escapedLen(k.Scope)))
	b.WriteByte(':')
	writeEscaped(&b, k.Scope)
	writeEscaped(&b, k.Key)
	b.WriteByte('}')
	return b.String()
}

// escapedLen is the length of s once escaped.
func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '}' {
			n += 2
		}
	}
	return n
}

func writeEscaped(b *strings.Builder, s string) {
	for {
		i := strings.IndexAny(s, "%}")
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i])
		if s[i] == '%' {
			b.WriteString("%25")
		} else {
			b.WriteString("%7D")
		}
		s = s[i+1:]
	}
}
