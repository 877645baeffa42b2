package server

import (
	"errors"

	"github.com/idemhq/idem/internal/key"
)

// MaxKeyLength is the longest idempotency key ParseKey accepts, in bytes
// (characters: keys are ASCII).
const MaxKeyLength = key.MaxLen

// ErrInvalidKey is the sentinel every error from [ParseKey] wraps. Test for
// it with errors.Is; the wrapping error's text says what was wrong.
var ErrInvalidKey = errors.New("idem/server: invalid idempotency key")

// keyErrors are ParseKey's errors, one per problem, made once so that a
// rejected key costs no allocation.
var keyErrors = [...]error{
	key.Empty:        keyError(key.Empty.String()),
	key.TooLong:      keyError(key.TooLong.String()),
	key.NotPrintable: keyError(key.NotPrintable.String()),
	key.BadQuoting:   keyError(key.BadQuoting.String()),
	key.Trailing:     keyError(key.Trailing.String()),
	key.Padded:       keyError(key.Padded.String()),
}

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
// 0x7E), not beginning or ending with a space, so the bare and quoted forms
// of one key parse to the same string. The idem client reads keys by the
// same rules.
//
// Spaces and tabs around the value are not part of it (net/http has
// usually removed them already).
//
// Every error wraps [ErrInvalidKey]. For a bare key ParseKey returns a
// substring of v and does not allocate.
func ParseKey(v string) (string, error) {
	k, p := key.Parse(v)
	if p != key.OK {
		return "", keyErrors[p]
	}
	return k, nil
}
