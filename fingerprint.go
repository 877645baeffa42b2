// This file holds the journal's fingerprint of a request, and the rules
// that say whether two requests under one key are the same: the whole
// request, or the fields Options.SameRequest names.

package idem

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"

	"github.com/idemhq/idem/internal/bodykey"
	"github.com/idemhq/idem/internal/canonjson"
	"github.com/idemhq/idem/internal/selectjson"
	"github.com/idemhq/idem/internal/wire"
)

// sameRequest reports whether a journaled fingerprint fp is op's: the
// fingerprint this release computes (see fingerprint; with a body key, of
// the body with or without it), or, for records
// journals wrote before it, the raw one over the exact body bytes (earlier
// still, over the URL with its user information). Equal bytes are always
// the same request.
func (op *Operation) sameRequest(fp [32]byte) bool {
	if fp == op.Fingerprint || op.hasWhole && fp == op.whole {
		return true
	}
	if fp == rawFingerprint(op.Method, op.url(), op.Body) {
		return true
	}
	if op.unredacted != "" && (fp == op.unredactedFP || fp == rawFingerprint(op.Method, op.unredacted, op.Body)) {
		return true // journaled before its secret query parameters were withheld
	}
	return op.u != nil && op.u.User != nil && fp == rawFingerprint(op.Method, op.u.String(), op.Body)
}

// fingerprint sets op.Fingerprint (see the function fingerprint). With
// Options.BodyKey (or the call's WithBodyKey) it is taken over the body
// without the key's field, as
// the server package's is with its BodyKey option, so the body a caller
// wrote and the same body with its key put in are the same request; the
// fingerprint of the whole body is kept too (op.whole), which a journal
// written without BodyKey holds.
func (c *Client) fingerprint(op *Operation, contentType string) {
	c.fingerprintAt(c.bodyKey, op, contentType)
}

// fingerprintAt is fingerprint with the body key at path (nil: none), the
// call's own (WithBodyKey) or the Client's.
func (c *Client) fingerprintAt(path bodykey.Path, op *Operation, contentType string) {
	body := op.Body
	op.hasWhole = false
	if path != nil {
		if stripped, ok := bodykey.Without(op.Body, path); ok {
			op.whole, op.hasWhole = fingerprint(op.Method, op.url(), contentType, op.Body), true
			body = stripped
		}
	}
	op.Fingerprint = fingerprint(op.Method, op.url(), contentType, body)
	if op.unredacted != "" {
		op.unredactedFP = fingerprint(op.Method, op.unredacted, contentType, body)
	}
}

// fingerprintTag starts the input of every fingerprint this release
// computes, so that none can equal a raw fingerprint of earlier journals.
// It is not a valid HTTP method, which a raw fingerprint starts with.
const fingerprintTag = "idem/journal-fingerprint/2"

// fingerprint returns the journal's fingerprint of a request: SHA-256 over
// the method, the URL (without user information) and the body, each
// length-prefixed (internal/wire). A JSON body (a contentType of
// application/json or *+json) that has a canonical form counts in that
// form, so member order and whitespace do not make it another request: the
// same rule as the server package's fingerprint (internal/canonjson), so
// that a reordered body under one key is the same request with a journal
// and without one. Any other body counts byte for byte.
func fingerprint(method, url, contentType string, body []byte) [32]byte {
	h := sha256.New()
	var buf [128]byte
	b := wire.AppendString(buf[:0], fingerprintTag)
	b = wire.AppendString(b, method)
	b = wire.AppendString(b, url)
	if len(body) > 0 && canonjson.IsJSON(contentType) {
		var c canonjson.Canonicalizer
		if canon, ok := c.Append(nil, body); ok {
			h.Write(wire.AppendUvarint(append(b, 'J'), uint64(len(canon))))
			h.Write(canon)
			return sum(h)
		}
	}
	h.Write(wire.AppendUvarint(append(b, 'R'), uint64(len(body))))
	h.Write(body)
	return sum(h)
}

// rawFingerprint is the fingerprint journals wrote before fingerprint:
// SHA-256 over the length-prefixed method, URL and exact body.
func rawFingerprint(method, url string, body []byte) [32]byte {
	h := sha256.New()
	var buf [64]byte
	b := wire.AppendString(buf[:0], method)
	b = wire.AppendString(b, url)
	h.Write(wire.AppendUvarint(b, uint64(len(body))))
	h.Write(body)
	return sum(h)
}

func sum(h hash.Hash) (fp [32]byte) {
	h.Sum(fp[:0])
	return fp
}

// FingerprintRule says which parts of a JSON request body make a call
// under a journaled key the same request, for Options.SameRequest: the
// pointers of the server package's FingerprintRule, evaluated by the same
// code (internal/selectjson), so a client and a service that publish one
// rule agree on what a retry may change. The zero value is the default:
// the whole request.
//
// A call whose method, URL and body are those of the journaled operation
// is always the same request. Under a rule, so is a call with the
// journaled method and URL whose JSON body (by its Content-Type) selects
// the same values by Select and by Check as the journaled body does: the
// other fields may differ. Such a call is the journaled operation, which
// goes on with its own bytes: a completed one is answered from the
// journal, a pending one sent again as it was journaled, not with the new
// body. A call that differs in a selected or checked value, or whose body
// (or the journaled one) is not JSON, not valid UTF-8 JSON, or ambiguous
// at a pointer (a repeated member name, or the name under another case)
// is refused with ErrKeyReused unless its bytes are the journaled ones.
//
// That is the trade-off: a field left out may differ silently, and the
// caller gets the answer to the first request's value for it. The rule
// only widens the comparison; the journal keeps its fingerprints of the
// whole request, so journals written under one rule are read under any
// other (the journal keeps the bodies the rule is applied to). The
// server's own rule is the server's: it decides what it answers, and a
// rule here only keeps the client from refusing what it would accept.
type FingerprintRule struct {
	// Select lists RFC 6901 JSON Pointers ("/amount", "/customer/id") to
	// the values that make the request. At most 64.
	Select []string
	// Check lists pointers to values that must match too; for the client
	// they count as Select does (a difference is ErrKeyReused). At most 64.
	Check []string
}

// compile returns r parsed, or nil for the default rule.
func (r FingerprintRule) compile() (*selectjson.Rule, error) {
	if r.Select == nil && r.Check == nil {
		return nil, nil
	}
	rule, err := selectjson.NewRule(r.Select, r.Check, "")
	if err != nil {
		return nil, fmt.Errorf("idem: Options.SameRequest: %w", err)
	}
	return rule, nil
}

// sameRequest reports whether op, a call under the key of the journaled
// operation prev, is prev's request: by fingerprint (op.sameRequest), or
// under Options.SameRequest (see FingerprintRule).
func (c *Client) sameRequest(op, prev *Operation) bool {
	if op.sameRequest(prev.Fingerprint) {
		return true
	}
	rule, _ := c.opts.SameRequest.compile() // New checked it
	if rule == nil || op.Method != prev.Method || op.url() != prev.URL {
		return false
	}
	a, ok := selection(rule, op)
	if !ok {
		return false
	}
	b, ok := selection(rule, prev)
	return ok && bytes.Equal(a, b)
}

// selection returns what the rule selects of op's body, or false if the
// body has no selection.
func selection(rule *selectjson.Rule, op *Operation) ([]byte, bool) {
	if !canonjson.IsJSON(op.Header.Get("Content-Type")) {
		return nil, false
	}
	var canon canonjson.Canonicalizer
	b, ok := selectjson.Append(nil, op.Body, rule.Select, &canon)
	if !ok {
		return nil, false
	}
	return selectjson.Append(append(b, 'C'), op.Body, rule.Check, &canon)
}
