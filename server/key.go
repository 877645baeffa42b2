// This file holds ParseKey and the key constants and errors the server
// shares with the client through internal/key.

package server

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/idemhq/idem/internal/key"
)

// MaxKeyLen is the longest idempotency key ParseKey accepts, in bytes
// (characters: keys are ASCII). The idem client has the same constant,
// idem.MaxKeyLen.
const MaxKeyLen = key.MaxLen

// ErrInvalidKey is the sentinel every error from [ParseKey] wraps. Test for
// it with errors.Is; the wrapping error quotes the value and says what was
// wrong. It is the same value as the idem client's ErrInvalidKey.
var ErrInvalidKey = key.ErrInvalid

// ParseKey returns the key carried by an Idempotency-Key field value.
//
// The value is either bare (Stripe's form, what most clients send) or an
// RFC 8941 Structured Field string (the IETF draft's form): a double quote,
// the key with `"` and `\` escaped by a backslash, a closing double quote,
// and nothing after it (parameters are not accepted). A value that starts
// with a double quote is always read as the quoted form. Either way the key
// itself must be 1 to [MaxKeyLen] printable ASCII characters (0x20 to
// 0x7E), not beginning or ending with a space, and holding no comma (a
// proxy joins two field lines with one, RFC 9110 5.3), so the bare and quoted forms
// of one key parse to the same string. The idem client reads keys by the
// same rules, with the same function underneath.
//
// Spaces and tabs around the value are not part of it (net/http has
// usually removed them already).
//
// Every error wraps [ErrInvalidKey] and quotes the value, escaped and cut
// to 64 bytes. For a bare key ParseKey returns a substring of v and does
// not allocate.
func ParseKey(v string) (string, error) {
	k, p := key.Parse(v)
	if p != key.OK {
		return "", key.Invalid(v, p)
	}
	return k, nil
}

// ErrInvalidScope is returned by [RunOnce] for a key whose scope is not
// valid UTF-8 or holds a NUL byte, which no store can keep as the same
// scope (PostgreSQL's text refuses both). The middleware answers a request
// whose Options.Scope returns such a scope 401 with
// [ProblemScopeUnavailable], before any store call, the same on every
// store: it is the client's credential that names no valid scope, and no
// retry would change it.
var ErrInvalidScope = errors.New("idem/server: scope is not valid UTF-8 text")

// ValidScope reports whether scope can name a scope on every store: valid
// UTF-8 with no NUL byte. The empty scope (SingleTenant) is valid.
func ValidScope(scope string) bool {
	return utf8.ValidString(scope) && strings.IndexByte(scope, 0) < 0
}
