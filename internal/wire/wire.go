// Package wire is idem's one binary encoding, shared by everything that
// writes bytes another release must read back or hash the same way: the
// journal's records and name bindings, the header blobs stores keep beside
// a response, request fingerprints and derived keys.
//
// The format is small on purpose:
//
//   - counts and lengths are unsigned varints (encoding/binary's Uvarint),
//     always in their shortest form;
//   - a string or byte slice is its length followed by its bytes;
//   - a time is a signed varint of Unix nanoseconds, and the zero time is 0;
//   - a header is the number of fields, then per field (in name order) its
//     name, the number of values and each value.
//
// Length prefixes make every encoding unambiguous: ("a", "bc") and
// ("ab", "c") never encode alike, which is what fingerprints and derived
// keys rely on.
//
// A [Decoder] reads the format strictly: a varint that is not in its
// shortest form, a length or count beyond the bytes left, or a repeated
// header name is malformed. It keeps the first error and stops, never
// panics, and never allocates more than its input justifies.
package wire

import (
	"encoding/binary"
	"errors"
	"net/http"
	"slices"
	"time"
)

// ErrMalformed is the error a [Decoder] reports for input that is not in
// the format.
var ErrMalformed = errors.New("malformed encoding")

// AppendUvarint appends v as an unsigned varint.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendString appends s with its length in front.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBytes appends p with its length in front.
func AppendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// AppendTime appends t as a varint of Unix nanoseconds, the zero time as 0.
func AppendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	return binary.AppendVarint(b, t.UnixNano())
}

// AppendHeader appends h: its number of fields, then each field in name
// order with its values in order. Sorting makes the bytes depend only on
// the header, not on map iteration. A nil and an empty header both encode
// as a zero count.
func AppendHeader(b []byte, h http.Header) []byte {
	b = binary.AppendUvarint(b, uint64(len(h)))
	if len(h) == 0 {
		return b
	}
	var buf [16]string
	names := buf[:0]
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		b = AppendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(h[name])))
		for _, v := range h[name] {
			b = AppendString(b, v)
		}
	}
	return b
}

// HeaderSize is an upper bound of the bytes AppendHeader appends for h,
// for sizing a buffer.
func HeaderSize(h http.Header) int {
	n := binary.MaxVarintLen64
	for name, vs := range h {
		n += 2*binary.MaxVarintLen64 + len(name)
		for _, v := range vs {
			n += binary.MaxVarintLen64 + len(v)
		}
	}
	return n
}

// A Decoder reads values in order from a byte slice. The first malformed
// value sets Err and makes every later read return a zero value.
type Decoder struct {
	p   []byte
	err error
}

// NewDecoder returns a Decoder reading p. Byte slices it returns from
// Take alias p; everything else is copied.
func NewDecoder(p []byte) *Decoder { return &Decoder{p: p} }

// Err returns the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Len returns how many bytes are left.
func (d *Decoder) Len() int { return len(d.p) }

// Fail marks the input malformed, for checks the caller makes itself.
func (d *Decoder) Fail() {
	if d.err == nil {
		d.err = ErrMalformed
	}
	d.p = nil
}

// End reports an error unless every byte was read, and returns Err.
func (d *Decoder) End() error {
	if d.err == nil && len(d.p) != 0 {
		d.Fail()
	}
	return d.err
}

// Take returns the next n bytes, aliasing the input.
func (d *Decoder) Take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.p) {
		d.Fail()
		return nil
	}
	v := d.p[:n:n]
	d.p = d.p[n:]
	return v
}

// Byte returns the next byte.
func (d *Decoder) Byte() byte {
	if v := d.Take(1); v != nil {
		return v[0]
	}
	return 0
}

// Uvarint returns the next unsigned varint, which must be at most max and
// in its shortest form.
func (d *Decoder) Uvarint(max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 || n > 1 && d.p[n-1] == 0 || v > max {
		d.Fail()
		return 0
	}
	d.p = d.p[n:]
	return v
}

// Varint returns the next signed varint, which must be in its shortest
// form.
func (d *Decoder) Varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.p)
	if n <= 0 || n > 1 && d.p[n-1] == 0 {
		d.Fail()
		return 0
	}
	d.p = d.p[n:]
	return v
}

// Count returns the next count of items that each take at least one byte,
// so a count above the bytes left is malformed.
func (d *Decoder) Count() int { return int(d.Uvarint(uint64(len(d.p)))) }

// String returns the next length-prefixed string.
func (d *Decoder) String() string { return string(d.Take(d.Count())) }

// Bytes returns a copy of the next length-prefixed byte slice; nil if it is
// empty.
func (d *Decoder) Bytes() []byte {
	b := d.Take(d.Count())
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// Time returns the next time written by AppendTime.
func (d *Decoder) Time() time.Time {
	v := d.Varint()
	if v == 0 || d.err != nil {
		return time.Time{}
	}
	return time.Unix(0, v)
}

// Header returns the next header written by AppendHeader: nil for a zero
// count. A name that appears twice is malformed. Names in any order are
// read, so that headers written before AppendHeader sorted them still
// decode.
func (d *Decoder) Header() http.Header { return d.header(false) }

// SortedHeader is Header for input that has only ever been written by
// AppendHeader: names out of order are malformed too, so every header has
// exactly one encoding.
func (d *Decoder) SortedHeader() http.Header { return d.header(true) }

func (d *Decoder) header(sorted bool) http.Header {
	n := d.Count()
	if n == 0 || d.err != nil {
		return nil
	}
	h := make(http.Header, n)
	prev := ""
	for i := range n {
		name := d.String()
		m := d.Count()
		vs := make([]string, 0, m)
		for range m {
			vs = append(vs, d.String())
		}
		if d.err != nil {
			return nil
		}
		if _, dup := h[name]; dup || sorted && i > 0 && name <= prev {
			d.Fail()
			return nil
		}
		h[name], prev = vs, name
	}
	return h
}
