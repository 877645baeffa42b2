package pgstore

import (
	"errors"
	"net/http"

	"github.com/idemhq/idem/internal/wire"
)

// headerVersion is the first byte of an encoded header.
const headerVersion = 1

// encodeHeader encodes h for the header column, byte for byte: header
// values may hold bytes that are not UTF-8 (obs-text) or that JSON and
// PostgreSQL text refuse, and a replay must return exactly what was stored.
// A nil header is NULL; an empty one is stored and decodes as empty, not
// nil.
//
// The format: the version byte, then the header in idem's binary encoding
// (internal/wire): the number of fields, then per field in name order its
// name, the number of values and each value.
func encodeHeader(h http.Header) []byte {
	if h == nil {
		return nil
	}
	b := make([]byte, 0, 1+wire.HeaderSize(h))
	return wire.AppendHeader(append(b, headerVersion), h)
}

var errBadHeader = errors.New("malformed stored header")

// decodeHeader decodes what encodeHeader encoded; NULL (nil) is a nil
// header. It never panics and never allocates more than the input
// justifies.
func decodeHeader(b []byte) (http.Header, error) {
	if b == nil {
		return nil, nil
	}
	if len(b) == 0 || b[0] != headerVersion {
		return nil, errBadHeader
	}
	d := wire.NewDecoder(b[1:])
	h := d.SortedHeader()
	if d.End() != nil {
		return nil, errBadHeader
	}
	if h == nil {
		h = http.Header{}
	}
	return h, nil
}
