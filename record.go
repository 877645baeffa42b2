package idem

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// State is where a journaled operation stands.
type State uint8

const (
	// Pending: journaled, no final answer yet. Do with the same key, or
	// Resume, continues it with the same key and bytes.
	Pending State = 1 + iota
	// Completed: the server answered 2xx or 3xx.
	Completed
	// Failed: the server gave a final status of 400 or more (a 4xx or 5xx
	// that is not retried, or any replayed non-success status).
	Failed
	// Expired: still pending when the server's key retention ran out, so
	// it was not sent again. It needs reconciling.
	Expired
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	case Expired:
		return "expired"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

func (s State) terminal() bool { return s == Completed || s == Failed || s == Expired }

// Operation is one operation as the journal holds it.
type Operation struct {
	Key string
	// Name is the application name bound to Key with [Client.NamedKey], if
	// the key came from there.
	Name   string
	Method string
	// URL is the request's URL without user information, which is never
	// journaled.
	URL string
	// Host is the request's Host override, if it had one; empty means the
	// URL's host.
	Host string
	// Header holds the request headers that are safe to store: never
	// Authorization, Cookie, Proxy-Authorization, the idempotency key
	// header itself, or a header listed in Options.SecretHeaders.
	Header http.Header
	// Body is the exact request body sent on every attempt.
	Body []byte
	// Fingerprint is SHA-256 over method, URL and body.
	Fingerprint [32]byte
	State       State
	CreatedAt   time.Time
	// ExpiresAt is CreatedAt plus the server's key retention: after it the
	// operation is not sent again.
	ExpiresAt time.Time
	UpdatedAt time.Time
	// Attempts counts the attempts of the process that finished it.
	Attempts int
	// Result is the final response, for Completed and Failed operations.
	Result *Result

	u      *url.URL // the live request's URL, until URL is needed
	minted bool     // Key was minted for this call, so no record can hold it
}

// clone returns a copy of op that shares no memory with it.
func (op *Operation) clone() *Operation {
	cp := *op
	cp.Header = op.Header.Clone()
	cp.Body = bytes.Clone(op.Body)
	if op.Result != nil {
		r := *op.Result
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		cp.Result = &r
	}
	return &cp
}

// url returns the operation's URL as a string, formatting it on first use.
// User information (user:password@) is left out: it is a credential, and
// this is the URL that is journaled, logged and put in errors. The live
// request keeps it; a resumed one needs PrepareRequest to add it back.
func (op *Operation) url() string {
	if op.URL == "" && op.u != nil {
		if op.u.User != nil {
			u := *op.u
			u.User = nil
			op.URL = u.String()
		} else {
			op.URL = op.u.String()
		}
	}
	return op.URL
}

// Result is a final response as the journal records it.
type Result struct {
	StatusCode int
	Header     http.Header
	// Body holds at most Options.MaxJournalBody bytes; Truncated reports
	// whether the response had more.
	Body      []byte
	Truncated bool
	// Replayed reports that the server answered from its own record.
	Replayed bool
}

// legacyFingerprint reports whether fp is op's fingerprint as journals
// written before user information was left out of URLs computed it (over
// the URL with it), so their pending operations still continue.
func (op *Operation) legacyFingerprint(fp [32]byte) bool {
	return op.u != nil && op.u.User != nil && fp == fingerprint(op.Method, op.u.String(), op.Body)
}

func fingerprint(method, url string, body []byte) [32]byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, f := range [][]byte{[]byte(method), []byte(url), body} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		h.Write(f)
	}
	var fp [32]byte
	h.Sum(fp[:0])
	return fp
}

// recordVersion is the first byte of every encoded operation. A reader
// refuses versions it does not know rather than guess. Version 2 added
// Host; a record without one is still written as version 1, which every
// release reads.
const recordVersion = 2

// encode appends op in the journal's binary format: a version byte, then
// fields in a fixed order, strings and byte slices length-prefixed with
// uvarints, times as varint Unix nanoseconds.
func (op *Operation) encode(b []byte) []byte {
	version := byte(1)
	if op.Host != "" {
		version = recordVersion
	}
	b = append(b, version, byte(op.State))
	b = appendString(b, op.Key)
	b = appendString(b, op.Name)
	b = appendString(b, op.Method)
	b = appendString(b, op.URL)
	if version >= 2 {
		b = appendString(b, op.Host)
	}
	b = appendHeader(b, op.Header)
	b = appendBytes(b, op.Body)
	b = append(b, op.Fingerprint[:]...)
	b = appendTime(b, op.CreatedAt)
	b = appendTime(b, op.ExpiresAt)
	b = appendTime(b, op.UpdatedAt)
	b = binary.AppendUvarint(b, uint64(op.Attempts))
	if op.Result == nil {
		return append(b, 0)
	}
	r := op.Result
	var flags byte = 1
	if r.Truncated {
		flags |= 2
	}
	if r.Replayed {
		flags |= 4
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(r.StatusCode))
	b = appendHeader(b, r.Header)
	return appendBytes(b, r.Body)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// appendTime writes t as Unix nanoseconds, and the zero time as 0.
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	return binary.AppendVarint(b, t.UnixNano())
}

func appendHeader(b []byte, h http.Header) []byte {
	b = binary.AppendUvarint(b, uint64(len(h)))
	for name, vs := range h {
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	return b
}

var errRecord = errors.New("malformed record")

// decodeOperation parses a record written by encode. It never panics and
// never allocates more than the input's size justifies.
func decodeOperation(p []byte) (*Operation, error) {
	d := decoder{p: p}
	v := d.byte()
	if v != 1 && v != recordVersion {
		if d.err != nil {
			return nil, d.err
		}
		return nil, fmt.Errorf("unknown record version %d", v)
	}
	op := &Operation{State: State(d.byte())}
	op.Key = d.string()
	op.Name = d.string()
	op.Method = d.string()
	op.URL = d.string()
	if v >= 2 {
		op.Host = d.string()
	}
	op.Header = d.header()
	op.Body = d.bytes()
	copy(op.Fingerprint[:], d.take(32))
	op.CreatedAt = d.time()
	op.ExpiresAt = d.time()
	op.UpdatedAt = d.time()
	op.Attempts = int(d.uvarint(1 << 31))
	if flags := d.byte(); flags&1 != 0 {
		op.Result = &Result{
			Truncated:  flags&2 != 0,
			Replayed:   flags&4 != 0,
			StatusCode: int(d.uvarint(999)),
			Header:     d.header(),
			Body:       d.bytes(),
		}
		if flags > 7 {
			d.fail()
		}
	}
	if d.err == nil && len(d.p) != 0 {
		d.fail()
	}
	if d.err == nil && (op.State < Pending || op.State > Expired || op.Key == "") {
		d.fail()
	}
	if d.err != nil {
		return nil, d.err
	}
	return op, nil
}

type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errRecord
	}
	d.p = nil
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.p) {
		d.fail()
		return nil
	}
	v := d.p[:n:n]
	d.p = d.p[n:]
	return v
}

func (d *decoder) byte() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) uvarint(max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 || v > max {
		d.fail()
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) time() time.Time {
	if d.err != nil {
		return time.Time{}
	}
	v, n := binary.Varint(d.p)
	if n <= 0 {
		d.fail()
		return time.Time{}
	}
	d.p = d.p[n:]
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint(uint64(len(d.p)))
	b := d.take(int(n))
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func (d *decoder) string() string {
	n := d.uvarint(uint64(len(d.p)))
	return string(d.take(int(n)))
}

func (d *decoder) header() http.Header {
	// Every name and value costs at least one byte, which bounds the counts.
	n := d.uvarint(uint64(len(d.p)))
	if n == 0 || d.err != nil {
		return nil
	}
	h := make(http.Header, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		name := d.string()
		m := d.uvarint(uint64(len(d.p)))
		vs := make([]string, 0, m)
		for j := uint64(0); j < m && d.err == nil; j++ {
			vs = append(vs, d.string())
		}
		h[name] = vs
	}
	return h
}
