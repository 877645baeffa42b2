package server

import (
	"errors"
	"strings"
)

// MaxKeyLength is the longest idempotency key ParseKey accepts, in bytes
// (characters: keys are ASCII).
const MaxKeyLength = 255

// ErrInvalidKey is the sentinel every error from [ParseKey] wraps. Test for
// it with errors.Is; the wrapping error's text says what was wrong.
var ErrInvalidKey = errors.New("idem/server: invalid idempotency key")

var (
	errKeyEmpty    = keyError("empty")
	errKeyTooLong  = keyError("longer than 255 characters")
	errKeyChar     = keyError("not printable ASCII")
	errKeyQuoting  = keyError("malformed quoted string")
	errKeyTrailing = keyError("text after the closing quote")
)

// keyError is one reason ParseKey rejects a value. It wraps ErrInvalidKey.
type keyError string

func (e keyError) Error() string { return ErrInvalidKey.Error() + ": " + string(e) }
func (e keyError) Unwrap() error { return ErrInvalidKey }

// ParseKey returns the key carried by an Idempotency-Key field value.
//
// The value is either bare (Stripe's form, what most clients send) or an
// RFC 8941 Structured Field string (the IETF draft's form): a double quote,
// the key with `"` and `\` escaped by a backslash, a closing double quote,
// and nothing after it (parameters are not accepted). A value that starts
// with a double quote is always read as the quoted form. Either way the key
// itself must be 1 to [MaxKeyLength] printable ASCII characters (0x20 to
// 0x7E), so the bare and quoted forms of one key parse to the same string.
//
// The value is used as net/http delivers it, without trimming: net/http has
// already removed the surrounding whitespace of a field value.
//
// Every error wraps [ErrInvalidKey]. For a bare key ParseKey returns v
// itself and does not allocate.
func ParseKey(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		return parseQuotedKey(v)
	}
	switch {
	case v == "":
		return "", errKeyEmpty
	case len(v) > MaxKeyLength:
		return "", errKeyTooLong
	}
	for i := 0; i < len(v); i++ {
		if !printable(v[i]) {
			return "", errKeyChar
		}
	}
	return v, nil
}

// parseQuotedKey parses an sf-string (RFC 8941, section 4.2.5) that spans
// all of v, which starts with a double quote.
func parseQuotedKey(v string) (string, error) {
	end := -1
	escapes := 0
	for i := 1; i < len(v); i++ {
		c := v[i]
		if c == '\\' {
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", errKeyQuoting
			}
			escapes++
			continue
		}
		if c == '"' {
			end = i
			break
		}
		if !printable(c) {
			return "", errKeyChar
		}
	}
	switch {
	case end < 0:
		return "", errKeyQuoting
	case end != len(v)-1:
		return "", errKeyTrailing
	}
	inner := v[1:end]
	n := len(inner) - escapes
	switch {
	case n == 0:
		return "", errKeyEmpty
	case n > MaxKeyLength:
		return "", errKeyTooLong
	case escapes == 0:
		return inner, nil
	}
	var b strings.Builder
	b.Grow(n)
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' {
			i++
		}
		b.WriteByte(inner[i])
	}
	return b.String(), nil
}

func printable(c byte) bool { return c >= 0x20 && c <= 0x7e }
