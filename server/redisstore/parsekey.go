package redisstore

import (
	"strings"

	"github.com/idemhq/idem/server"
)

// parseRecordKey is the inverse of recordKey: it returns the (scope, key)
// that name, a Redis key under prefix, holds, and false if name is not a
// record's name under prefix. It accepts only what recordKey writes (a
// decimal length without leading zeros, "%25" and "%7D" as the only
// escapes, no bare '}' inside the tag), so that whenever it returns true,
// recordKey(prefix, k) == name: no two names decode to one key.
func parseRecordKey(prefix, name string) (server.Key, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return server.Key{}, false
	}
	rest, ok = strings.CutPrefix(rest, "{")
	if !ok {
		return server.Key{}, false
	}
	rest, ok = strings.CutSuffix(rest, "}")
	if !ok {
		return server.Key{}, false
	}
	digits, body, ok := strings.Cut(rest, ":")
	n, ok := parseLen(digits, ok)
	if !ok || n > len(body) {
		return server.Key{}, false
	}
	scope, ok1 := unescape(body[:n])
	key, ok2 := unescape(body[n:])
	if !ok1 || !ok2 {
		return server.Key{}, false
	}
	return server.Key{Scope: scope, Key: key}, true
}

// parseLen reads the escaped scope's length: decimal digits, "0" or
// without a leading zero, no more than a name can hold.
func parseLen(digits string, ok bool) (int, bool) {
	if !ok || digits == "" || len(digits) > 9 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// unescape reverses writeEscaped: "%25" is '%', "%7D" is '}'; any other
// '%' or a bare '}' is not something writeEscaped writes.
func unescape(s string) (string, bool) {
	if !strings.ContainsAny(s, "%}") {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.IndexAny(s, "%}")
		if i < 0 {
			b.WriteString(s)
			return b.String(), true
		}
		b.WriteString(s[:i])
		switch {
		case strings.HasPrefix(s[i:], "%25"):
			b.WriteByte('%')
		case strings.HasPrefix(s[i:], "%7D"):
			b.WriteByte('}')
		default:
			return "", false
		}
		s = s[i+3:]
	}
}
