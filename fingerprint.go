// This file holds the journal's fingerprint of a request, and the rule
// that says whether two requests under one key are the same.

package idem

import (
	"crypto/sha256"
	"hash"

	"github.com/idemhq/idem/internal/bodykey"
	"github.com/idemhq/idem/internal/canonjson"
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
// Options.BodyKey it is taken over the body without the key's field, as
// the server package's is with its BodyKey option, so the body a caller
// wrote and the same body with its key put in are the same request; the
// fingerprint of the whole body is kept too (op.whole), which a journal
// written without BodyKey holds.
func (c *Client) fingerprint(op *Operation, contentType string) {
	body := op.Body
	op.hasWhole = false
	if c.bodyKey != nil {
		if stripped, ok := bodykey.Without(op.Body, c.bodyKey); ok {
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
