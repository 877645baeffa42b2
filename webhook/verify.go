// This file holds the signature scheme of Standard Webhooks: the secret,
// the Verifier that checks a delivery's headers and body, the Signer that
// makes them, and the errors a delivery is refused with.

package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemhq/idem/server"
)

// The header fields of a Standard Webhooks delivery.
const (
	// HeaderID is the message's unique ID, the same on every delivery of
	// the message: the key its effect runs once under.
	HeaderID = "Webhook-Id"
	// HeaderTimestamp is the delivery attempt's time, in whole seconds
	// since the Unix epoch. Senders sign each attempt afresh, so it moves
	// on with every retry.
	HeaderTimestamp = "Webhook-Timestamp"
	// HeaderSignature is one or more space-separated signatures, each a
	// version, a comma and a base64 signature ("v1,K5oZ..."). Only v1
	// (HMAC-SHA256) is checked; others are skipped.
	HeaderSignature = "Webhook-Signature"
)

// SecretPrefix begins the text form of a secret: "whsec_" and the key in
// standard base64.
const SecretPrefix = "whsec_"

// DefaultTolerance is the default of VerifyOptions.Tolerance.
const DefaultTolerance = 5 * time.Minute

// Errors of a delivery's verification. [Verifier.Verify] returns an error
// wrapping exactly one of them; [Handler] answers each with the status its
// doc names (see also the package documentation).
var (
	// ErrMissingHeader: a header of the scheme is absent or empty. 400.
	ErrMissingHeader = errors.New("webhook: missing header")
	// ErrMalformedHeader: webhook-id is not 1 to 255 printable ASCII
	// characters without a comma (the rules of an idempotency key), or
	// webhook-timestamp is not a whole number of seconds. 400.
	ErrMalformedHeader = errors.New("webhook: malformed header")
	// ErrSignature: no v1 signature in webhook-signature is the body's
	// under the secret (the body or the headers were changed, or another
	// secret signed them). 401.
	ErrSignature = errors.New("webhook: no valid signature")
	// ErrTooOld: the timestamp is further in the past than the tolerance:
	// a delivery recorded and sent again, or a sender's clock behind. 401.
	ErrTooOld = errors.New("webhook: timestamp too old")
	// ErrTooNew: the timestamp is further in the future than the
	// tolerance: a sender's clock ahead. 401.
	ErrTooNew = errors.New("webhook: timestamp too far in the future")
	// ErrSecret is wrapped by the error [NewVerifier] and [NewSigner]
	// return for a secret that is empty or not base64.
	ErrSecret = errors.New("webhook: invalid secret")
)

// parseSecret returns the key of a secret in its text form: SecretPrefix
// and standard base64, or the base64 alone (some senders show it bare).
func parseSecret(secret string) ([]byte, error) {
	b64 := strings.TrimPrefix(secret, SecretPrefix)
	if b64 == "" {
		return nil, fmt.Errorf("%w: empty", ErrSecret)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		// Never quote the secret, not even in part.
		return nil, fmt.Errorf("%w: not standard base64 after %q", ErrSecret, SecretPrefix)
	}
	return key, nil
}

// signer computes v1 signatures under one key. Its HMACs are pooled.
type signer struct{ pool sync.Pool }

func newSigner(key []byte) *signer {
	s := &signer{}
	s.pool.New = func() any { return hmac.New(sha256.New, key) }
	return s
}

// sum returns the HMAC-SHA256 of "id.timestamp.body", the signed content.
func (s *signer) sum(id, ts string, body []byte) []byte {
	m := s.pool.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	sum := m.Sum(nil)
	s.pool.Put(m)
	return sum
}

// VerifyOptions configures a [Verifier]. The zero value means the
// defaults.
type VerifyOptions struct {
	// Tolerance is how far a delivery's timestamp may be from the clock,
	// either way. Default 5 minutes ([DefaultTolerance]).
	Tolerance time.Duration
	// Now is the clock timestamps are checked against. Default time.Now.
	Now func() time.Time
}

// Verifier checks the signature and timestamp of Standard Webhooks
// deliveries signed with one secret. It is safe for concurrent use.
type Verifier struct {
	s         *signer
	tolerance time.Duration
	now       func() time.Time
}

// NewVerifier returns a Verifier for secret, in its text form
// ("whsec_" and standard base64, or the base64 alone). It returns an error
// wrapping [ErrSecret] if secret is empty or not base64; the error never
// quotes the secret.
func NewVerifier(secret string, opts VerifyOptions) (*Verifier, error) {
	key, err := parseSecret(secret)
	if err != nil {
		return nil, err
	}
	v := &Verifier{s: newSigner(key), tolerance: opts.Tolerance, now: opts.Now}
	if v.tolerance <= 0 {
		v.tolerance = DefaultTolerance
	}
	if v.now == nil {
		v.now = time.Now
	}
	return v, nil
}

// Message is a verified delivery of a webhook message.
type Message struct {
	// ID is the message's webhook-id, the same on every delivery of it.
	ID string
	// Timestamp is this delivery's webhook-timestamp.
	Timestamp time.Time
	// Body is the delivery's body, as signed.
	Body []byte
	// Header is the delivery's header.
	Header http.Header
}

// Verify checks a delivery's header h and body and returns it as a
// Message. The checks run in this order, and the first that fails decides
// the error, which wraps one of: [ErrMissingHeader] (a header is absent or
// empty), [ErrMalformedHeader] (the ID is not a valid key, the timestamp
// not a whole number of seconds), [ErrSignature] (no v1 signature in the
// header is the body's: checked before the timestamp, so a delivery that
// was not signed with the secret is always ErrSignature), [ErrTooOld] or
// [ErrTooNew] (the timestamp is more than the tolerance away from the
// clock). The comparison of signatures takes a time that does not depend
// on how much of them matches. The Message's Body and Header are body and
// h, not copies.
func (v *Verifier) Verify(h http.Header, body []byte) (Message, error) {
	d, err := parseHeader(h)
	if err != nil {
		return Message{}, err
	}
	return v.verify(d, h, body)
}

// delivery is the scheme's header fields of a delivery, present and well
// formed.
type delivery struct {
	id, ts, sigs string
	at           time.Time
}

// parseHeader reads the scheme's fields from h, refusing those absent,
// empty or malformed. The signatures are read by verify.
func parseHeader(h http.Header) (delivery, error) {
	var d delivery
	for _, f := range []struct {
		name string
		dst  *string
	}{{HeaderID, &d.id}, {HeaderTimestamp, &d.ts}, {HeaderSignature, &d.sigs}} {
		*f.dst = h.Get(f.name)
		if *f.dst == "" {
			return delivery{}, fmt.Errorf("%w: %s", ErrMissingHeader, f.name)
		}
	}
	// The ID becomes an idempotency key: it must be one as it stands (a
	// bare key that parses to itself), since it is also signed as it stands.
	if k, err := server.ParseKey(d.id); err != nil || k != d.id {
		return delivery{}, fmt.Errorf("%w: %s is not 1 to %d printable ASCII characters without a comma", ErrMalformedHeader, HeaderID, server.MaxKeyLen)
	}
	sec, err := parseSeconds(d.ts)
	if err != nil {
		return delivery{}, fmt.Errorf("%w: %s is not a whole number of seconds", ErrMalformedHeader, HeaderTimestamp)
	}
	d.at = time.Unix(sec, 0)
	return d, nil
}

// parseSeconds parses a timestamp: ASCII digits only (no sign, no
// fraction), at most 12 of them (past the year 33000), so the value
// never overflows a time.
func parseSeconds(s string) (int64, error) {
	if len(s) > 12 {
		return 0, strconv.ErrRange
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// verify checks d's signatures over body, then its timestamp.
func (v *Verifier) verify(d delivery, h http.Header, body []byte) (Message, error) {
	if !v.signed(d, body) {
		return Message{}, ErrSignature
	}
	now := v.now()
	switch {
	case d.at.Before(now.Add(-v.tolerance)):
		return Message{}, fmt.Errorf("%w: %s is %s before the clock, over the tolerance of %s", ErrTooOld, HeaderTimestamp, now.Sub(d.at).Truncate(time.Second), v.tolerance)
	case d.at.After(now.Add(v.tolerance)):
		return Message{}, fmt.Errorf("%w: %s is %s after the clock, over the tolerance of %s", ErrTooNew, HeaderTimestamp, d.at.Sub(now).Truncate(time.Second), v.tolerance)
	}
	return Message{ID: d.id, Timestamp: d.at, Body: body, Header: h}, nil
}

// sigLen is the length of a v1 signature's base64, and sigDecodedLen
// the room its decoding may take (base64's bound, one byte over).
const (
	sigLen        = (sha256.Size + 2) / 3 * 4
	sigDecodedLen = sigLen / 4 * 3
)

// signed reports whether any v1 signature in d.sigs is body's. Entries of
// other versions, and entries that are not base64, are skipped.
func (v *Verifier) signed(d delivery, body []byte) bool {
	want := v.s.sum(d.id, d.ts, body)
	var got [sigDecodedLen]byte
	ok := false
	for entry := range strings.FieldsSeq(d.sigs) {
		sig, found := strings.CutPrefix(entry, "v1,")
		if !found || len(sig) != sigLen {
			continue
		}
		n, err := base64.StdEncoding.Decode(got[:], []byte(sig))
		if err != nil || n != sha256.Size {
			continue
		}
		// Every entry is compared, match or not, so the time taken does
		// not tell which one matched.
		if hmac.Equal(want, got[:n]) {
			ok = true
		}
	}
	return ok
}

// Signer signs Standard Webhooks deliveries with one secret: the sender's
// half, for services that send webhooks and for tests. It is safe for
// concurrent use.
type Signer struct{ s *signer }

// NewSigner returns a Signer for secret, in its text form ("whsec_" and
// standard base64, or the base64 alone). It returns an error wrapping
// [ErrSecret] if secret is empty or not base64.
func NewSigner(secret string) (*Signer, error) {
	key, err := parseSecret(secret)
	if err != nil {
		return nil, err
	}
	return &Signer{s: newSigner(key)}, nil
}

// Signature returns the v1 signature ("v1," and base64) of body sent as
// message id at ts (whole seconds: the fraction is dropped, as the header
// drops it).
func (s *Signer) Signature(id string, ts time.Time, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(s.s.sum(id, strconv.FormatInt(ts.Unix(), 10), body))
}

// Sign sets the scheme's three header fields in h for a delivery of body
// as message id at ts, replacing any there. Every delivery of one message
// carries the same id; each is signed at its own time.
func (s *Signer) Sign(h http.Header, id string, ts time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, s.Signature(id, ts, body))
}
