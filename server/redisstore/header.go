package redisstore

import (
	"encoding/binary"
	"errors"
	"net/http"
	"slices"
)

// TODO(wire): use internal/wire once it lands. This file repeats the
// header encoding pgstore stores (the same bytes), and goes away then.

// headerVersion is the first byte of an encoded header.
const headerVersion = 1

// encodeHeader encodes h for the record's header field, byte for byte:
// header values may hold bytes that are not UTF-8, and a replay must return
// exactly what was stored. A nil header encodes as no bytes; an empty one
// is stored and decodes as empty, not nil.
//
// The format: the version byte, the number of fields, then per field in
// name order its name, the number of values and each value; strings are a
// uvarint length followed by the bytes, counts are uvarints.
func encodeHeader(h http.Header) []byte {
	if h == nil {
		return nil
	}
	size := 1 + binary.MaxVarintLen64
	names := make([]string, 0, len(h))
	for name, values := range h {
		names = append(names, name)
		size += 2*binary.MaxVarintLen64 + len(name)
		for _, v := range values {
			size += binary.MaxVarintLen64 + len(v)
		}
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	b = append(b, headerVersion)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(h[name])))
		for _, v := range h[name] {
			b = appendString(b, v)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errBadHeader = errors.New("malformed stored header")

// decodeHeader decodes what encodeHeader encoded; no bytes is a nil
// header. It never panics and never allocates more than the input
// justifies.
func decodeHeader(b []byte) (http.Header, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != headerVersion {
		return nil, errBadHeader
	}
	d := headerDecoder{b: b[1:]}
	n := d.count()
	h := make(http.Header, n)
	prev := ""
	for i := range n {
		name := d.string()
		if i > 0 && name <= prev {
			d.bad = true // out of order or repeated: not what encodeHeader writes
		}
		prev = name
		values := make([]string, d.count())
		for j := range values {
			values[j] = d.string()
		}
		if d.bad {
			break
		}
		h[name] = values
	}
	if d.bad || len(d.b) != 0 {
		return nil, errBadHeader
	}
	return h, nil
}

// headerDecoder reads encodeHeader's format; bad records the first error.
type headerDecoder struct {
	b   []byte
	bad bool
}

// count reads a count; every counted item takes at least one byte, so a
// count above the bytes left is malformed.
func (d *headerDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad = true
		return 0
	}
	return int(n)
}

func (d *headerDecoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad = true
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *headerDecoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n > 1 && d.b[n-1] == 0 { // malformed, or not the shortest form
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}
