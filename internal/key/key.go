// Package key parses, validates and quotes idempotency keys, for the client
// and the server alike, so both ends agree on what a key is.
//
// A key is 1 to MaxLen printable ASCII characters (0x20 to 0x7E), not
// beginning or ending with a space (HTTP drops those from a bare field
// value, so the two ends would disagree on the key), and holding no comma.
// A comma is how HTTP joins field lines: a proxy may merge two
// Idempotency-Key lines into one line "a, b" (RFC 9110, section 5.3). Two
// lines are refused as ambiguous; read as one key, the merged line would be
// a key neither line carried, and run the request again under it. No key
// idem mints or derives (UUIDv7, ULID, DeriveKey's UUIDs) holds a comma.
//
// On the wire a key is bare (Stripe's form, what most clients send) or an
// RFC 8941 Structured Field string (the IETF draft's form): a double quote,
// the key with `"` and `\` escaped by a backslash, a closing double quote,
// and nothing after it. Both forms of one key parse to the same string, so
// the quoted form holds no comma either.
package key

import "strings"

// MaxLen is the longest key, in bytes (characters: keys are ASCII).
const MaxLen = 255

// Problem says why a value is not a key; OK if it is one.
type Problem int

const (
	OK Problem = iota
	Empty
	TooLong
	NotPrintable
	BadQuoting
	Trailing
	Padded
	List
)

// String describes the problem in a few words.
func (p Problem) String() string {
	switch p {
	case OK:
		return "ok"
	case Empty:
		return "empty"
	case TooLong:
		return "longer than 255 characters"
	case NotPrintable:
		return "not printable ASCII"
	case BadQuoting:
		return "malformed quoted string"
	case Trailing:
		return "text after the closing quote"
	case Padded:
		return "begins or ends with a space"
	case List:
		return "holds a comma (a list of keys, as two header lines merged into one)"
	}
	return "unknown problem"
}

// Parse returns the key carried by a header value in either form. Leading
// and trailing spaces and tabs are not part of a field value (HTTP drops
// them on the wire), so they are not part of the key. A value that starts
// with a double quote is always read as the quoted form. For a bare key it
// returns a substring of v and does not allocate.
func Parse(v string) (string, Problem) {
	v = strings.Trim(v, " \t")
	if strings.HasPrefix(v, `"`) {
		return parseQuoted(v)
	}
	if p := Validate(v); p != OK {
		return "", p
	}
	return v, OK
}

// Validate checks a key as it is, without reading quotes.
func Validate(k string) Problem {
	switch {
	case k == "":
		return Empty
	case len(k) > MaxLen:
		return TooLong
	}
	for i := 0; i < len(k); i++ {
		if !printable(k[i]) {
			return NotPrintable
		}
	}
	if k[0] == ' ' || k[len(k)-1] == ' ' {
		return Padded // the bare form cannot carry it: HTTP drops the spaces
	}
	if strings.IndexByte(k, ',') >= 0 {
		return List
	}
	return OK
}

// parseQuoted parses an sf-string (RFC 8941, section 4.2.5) that spans all
// of v, which starts with a double quote.
func parseQuoted(v string) (string, Problem) {
	end := -1
	escapes := 0
	for i := 1; i < len(v); i++ {
		c := v[i]
		if c == '\\' {
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", BadQuoting
			}
			escapes++
			continue
		}
		if c == '"' {
			end = i
			break
		}
		if !printable(c) {
			return "", NotPrintable
		}
	}
	switch {
	case end < 0:
		return "", BadQuoting
	case end != len(v)-1:
		return "", Trailing
	}
	inner := v[1:end]
	n := len(inner) - escapes
	switch {
	case n == 0:
		return "", Empty
	case n > MaxLen:
		return "", TooLong
	case inner[0] == ' ' || inner[len(inner)-1] == ' ':
		return "", Padded // an escape is never a space, so inner's ends are the key's
	case strings.IndexByte(inner, ',') >= 0:
		return "", List // the same key as the bare form, which cannot hold one
	case escapes == 0:
		return inner, OK
	}
	var b strings.Builder
	b.Grow(n)
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' {
			i++
		}
		b.WriteByte(inner[i])
	}
	return b.String(), OK
}

// Quote returns k as a Structured Field string. k must be valid.
func Quote(k string) string {
	if !strings.ContainsAny(k, `\"`) {
		return `"` + k + `"`
	}
	var b strings.Builder
	b.Grow(len(k) + 4)
	b.WriteByte('"')
	for i := 0; i < len(k); i++ {
		if k[i] == '"' || k[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(k[i])
	}
	b.WriteByte('"')
	return b.String()
}

func printable(c byte) bool { return c >= 0x20 && c <= 0x7e }
