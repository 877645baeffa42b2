// This file holds Fingerprint, the request fingerprint a repeat must match,
// and its encoding, pinned by the golden tests.

package server

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/idemhq/idem/internal/canonjson"
	"github.com/idemhq/idem/internal/wire"
)

// fingerprintVersion starts every fingerprint's input. Fingerprints are
// stored with their records, so the encoding below never changes under
// this tag: a retry across an upgrade must still match.
const fingerprintVersion = "idem-fingerprint-1"

// Fingerprint returns the fingerprint of a request with the given body: a
// lowercase hex SHA-256 (64 characters) over an unambiguous encoding of
//
//   - the method, exactly as sent;
//   - the escaped path (r.URL.EscapedPath);
//   - the query, parsed, with its names sorted and each name's values kept
//     in the order they were sent (a query that does not parse is taken as
//     its raw text);
//   - the body. If the Content-Type's media type is application/json or
//     ends in +json and the body is valid UTF-8 JSON, its canonical form is
//     used, so member order and whitespace do not matter; numbers keep
//     their literal text (1.0 and 1 differ) and arrays keep their order.
//     Any other body, or JSON that does not parse, is taken byte for byte.
//
// Every field is length-prefixed, so no two different requests encode
// alike. Headers, the host and the scheme are not part of it.
//
// The middleware calls Fingerprint with the body it has read; it is
// exported for callers that build keys for [RunOnce] or their own stores.
// It is safe for concurrent use.
func Fingerprint(r *http.Request, body []byte) string {
	f := fingerprintPool.Get().(*fingerprinter)
	defer fingerprintPool.Put(f)
	b := f.buf[:0]
	b = append(b, fingerprintVersion...)
	b = wire.AppendString(b, r.Method)
	b = wire.AppendString(b, r.URL.EscapedPath())
	b = appendQuery(b, r.URL.RawQuery)
	f.h.Reset()
	if canonjson.IsJSON(r.Header.Get("Content-Type")) {
		canon, ok := f.canon.Append(f.json[:0], body)
		f.json = canon[:0]
		if ok {
			b = wire.AppendUvarint(append(b, 'J'), uint64(len(canon)))
			f.h.Write(b)
			f.h.Write(canon)
			return f.sum(b)
		}
	}
	b = wire.AppendUvarint(append(b, 'R'), uint64(len(body)))
	f.h.Write(b)
	f.h.Write(body)
	return f.sum(b)
}

// fingerprinter holds the reusable state of one Fingerprint call.
type fingerprinter struct {
	h     hash.Hash
	buf   []byte // the encoded method, path, query and body header
	json  []byte // the canonical JSON body
	canon canonjson.Canonicalizer
}

var fingerprintPool = sync.Pool{New: func() any {
	return &fingerprinter{h: sha256.New(), buf: make([]byte, 0, 256)}
}}

// sum finishes the hash and keeps b's storage for the next call.
func (f *fingerprinter) sum(b []byte) string {
	sum := f.h.Sum(b[:0])
	f.buf = b[:0]
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum)
	return string(out[:])
}

// appendQuery appends a query: "Q", the number of names, then each name
// (sorted) with the number of its values and the values in order; or "q"
// and the raw text when it does not parse.
func appendQuery(b []byte, raw string) []byte {
	if raw == "" {
		return append(b, 'Q', 0)
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return wire.AppendString(append(b, 'q'), raw)
	}
	names := make([]string, 0, len(vals))
	for name := range vals {
		names = append(names, name)
	}
	slices.Sort(names)
	b = append(b, 'Q')
	b = wire.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = wire.AppendString(b, name)
		b = wire.AppendUvarint(b, uint64(len(vals[name])))
		for _, v := range vals[name] {
			b = wire.AppendString(b, v)
		}
	}
	return b
}
