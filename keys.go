// This file holds idempotency keys: minting (UUIDv7, ULID), deriving from
// business IDs, validating and parsing.

package idem

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash"
	"sync"

	"github.com/google/uuid"
	"github.com/oklog/ulid/v2"

	"github.com/idemhq/idem/internal/key"
	"github.com/idemhq/idem/internal/wire"
)

// MaxKeyLen is the longest idempotency key idem sends or accepts, in bytes.
// It matches Stripe's limit and the IETF draft's advice. The server package
// has the same constant, server.MaxKeyLen.
const MaxKeyLen = key.MaxLen

// KeyFormat selects how [Client] mints keys for requests that carry none.
type KeyFormat int

const (
	// UUIDv7 keys (RFC 9562): time-ordered, 36 characters. The default.
	UUIDv7 KeyFormat = iota
	// ULID keys: time-ordered, 26 characters of Crockford base32,
	// monotonic within the process.
	ULID
)

// String returns the format's name.
func (f KeyFormat) String() string {
	switch f {
	case UUIDv7:
		return "uuidv7"
	case ULID:
		return "ulid"
	}
	return fmt.Sprintf("KeyFormat(%d)", int(f))
}

// NewKey returns a fresh UUIDv7 key, such as
// "01937a4c-8f2e-7c3b-9a41-6f0e2d5c8b17". It panics only if the operating
// system's random source fails, as crypto/rand does.
func NewKey() string {
	return uuid.Must(uuid.NewV7()).String()
}

// NewULID returns a fresh ULID key, such as "01JDX3W5ZK8Q4G7T2N6B9C1V0E".
// Keys minted by one process are strictly increasing, even within one
// millisecond. Safe for concurrent use.
func NewULID() string {
	ulids.mu.Lock()
	defer ulids.mu.Unlock()
	// The time is read under the lock, and never goes back: ulid.Make
	// reads it before taking its own lock, so two callers in different
	// milliseconds could reset the entropy between two calls of a third
	// in one millisecond, and its second ULID would sort before its first.
	ms := max(ulid.Now(), ulids.last)
	ulids.last = ms
	return ulid.MustNew(ms, ulids.entropy).String()
}

// ulids is NewULID's state: the last millisecond it used and a monotonic
// entropy source (increments within a millisecond, random across them).
var ulids = struct {
	mu      sync.Mutex
	last    uint64
	entropy *ulid.MonotonicEntropy
}{entropy: ulid.Monotonic(rand.Reader, 0)}

// keyLen is the length of the keys f mints.
func (f KeyFormat) keyLen() int {
	if f == ULID {
		return 26
	}
	return 36
}

func (f KeyFormat) mint() string {
	if f == ULID {
		return NewULID()
	}
	return NewKey()
}

// DeriveKey returns a deterministic key for one business operation, so that
// the same operation gets the same key in any process, on any machine, with
// no state kept: DeriveKey("payout", "2026-12-25", "417") is the same string
// every time. Parts are length-prefixed before hashing, so ("a", "bc") and
// ("ab", "c") give different keys. The result is formatted as a UUID (version
// 8, RFC 9562) so servers that insist on UUID keys accept it.
//
// Anyone who knows the namespace and parts can compute the key. When other
// clients of the same server must not be able to guess it, use
// [DeriveKeyHMAC].
func DeriveKey(namespace string, parts ...string) string {
	return deriveKey(sha256.New(), namespace, parts)
}

// DeriveKeyHMAC is [DeriveKey] keyed with secret (HMAC-SHA-256): the same
// inputs and secret always give the same key, and without the secret the
// key cannot be predicted. An empty secret gives a different key from
// DeriveKey but no secrecy.
func DeriveKeyHMAC(secret []byte, namespace string, parts ...string) string {
	return deriveKey(hmac.New(sha256.New, secret), namespace, parts)
}

func deriveKey(h hash.Hash, namespace string, parts []string) string {
	return uuidKey(deriveSum(h, "idem/derive/v1", namespace, parts))
}

// deriveSum is the first 16 bytes of h over the unambiguous encoding of
// namespace and parts in the domain dom, which keeps keys derived for one
// purpose apart from those derived for another.
func deriveSum(h hash.Hash, dom, namespace string, parts []string) [16]byte {
	var buf [128]byte
	b := wire.AppendString(buf[:0], dom)
	b = wire.AppendString(b, namespace)
	b = wire.AppendUvarint(b, uint64(len(parts)))
	for _, p := range parts {
		b = wire.AppendString(b, p)
	}
	h.Write(b)
	var sum [16]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// uuidKey formats sum as a version 8 UUID.
func uuidKey(sum [16]byte) string {
	u := uuid.UUID(sum)
	u[6] = u[6]&0x0f | 0x80 // version 8: custom
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u.String()
}

// ValidateKey reports whether key can be sent as an idempotency key: 1 to
// [MaxKeyLen] printable ASCII characters (0x20 to 0x7E), not beginning or
// ending with a space, and holding no comma: a proxy may join two
// Idempotency-Key lines into one with a comma (RFC 9110, 5.3), so "a, b"
// is a list of keys, which a server refuses as it refuses two lines. The
// keys idem mints and derives are always valid. The error wraps
// [ErrInvalidKey] and quotes the value (escaped, and cut to 64 bytes).
func ValidateKey(k string) error {
	if p := key.Validate(k); p != key.OK {
		return key.Invalid(k, p)
	}
	return nil
}

// checkKeyLen refuses a key longer than the API accepts
// (Options.MaxKeyLen), with an error wrapping ErrInvalidKey.
func (c *Client) checkKeyLen(k string) error {
	if len(k) > c.opts.MaxKeyLen {
		return fmt.Errorf("%w %q: %d bytes, longer than the API accepts (Options.MaxKeyLen %d)", ErrInvalidKey, k, len(k), c.opts.MaxKeyLen)
	}
	return nil
}

// ParseKey reads an idempotency key header value in either form a server
// may see: bare (abc, as Stripe's clients send it) or a quoted Structured
// Field string ("abc", the IETF draft's syntax, where \" and \\ escape a
// quote and a backslash). Both forms of one key give the same result. The
// rules and errors are those of the server package's ParseKey. Errors wrap
// [ErrInvalidKey] and quote the value (escaped, and cut to 64 bytes).
func ParseKey(v string) (string, error) {
	k, p := key.Parse(v)
	if p != key.OK {
		return "", key.Invalid(v, p)
	}
	return k, nil
}
