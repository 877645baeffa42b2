package mysqlstore

import (
	"errors"
	"net/http"

	"github.com/idemhq/idem/internal/wire"
)

// headerVersion is the first byte of an encoded header.
const headerVersion = 1

// encodeHeader encodes h for the header column, byte for byte: header
// values may hold bytes that are not UTF-8, and a replay must return
// exactly what was stored. A nil header is NULL (a nil slice); an empty
// one is stored and decodes as empty, not nil.
//
// The format, pgstore's and redisstore's too: the version byte, then the
// header in idem's binary encoding (internal/wire): the number of fields,
// then per field in name order its name, the number of values and each
// value.
func encodeHeader(h http.Header) []byte {
	if h == nil {
		return nil
	}
	return wire.AppendHeader(append(make([]byte, 0, 1+wire.HeaderSize(h)), headerVersion), h)
}

var errBadHeader = errors.New("malformed stored header")

// decodeHeader decodes what encodeHeader encoded; NULL (nil) is a nil
// header. Names out of order or repeated are malformed, so that every
// header has one encoding. It never panics and never allocates more than
// the input justifies.
func decodeHeader(b []byte) (http.Header, error) {
	if b == nil {
		return nil, nil
	}
	d := wire.NewDecoder(b)
	if d.Byte() != headerVersion {
		return nil, errBadHeader
	}
	h := d.SortedHeader()
	if d.End() != nil {
		return nil, errBadHeader
	}
	if h == nil {
		h = http.Header{} // a zero count: encodeHeader wrote an empty header
	}
	return h, nil
}
