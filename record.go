package idem

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"time"

	"github.com/idemhq/idem/internal/canonjson"
	"github.com/idemhq/idem/internal/wire"
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

// sameRequest reports whether a journaled fingerprint fp is op's: the
// fingerprint this release computes (see fingerprint), or, for records
// journals wrote before it, the raw one over the exact body bytes (earlier
// still, over the URL with its user information). Equal bytes are always
// the same request.
func (op *Operation) sameRequest(fp [32]byte) bool {
	if fp == op.Fingerprint {
		return true
	}
	if fp == rawFingerprint(op.Method, op.url(), op.Body) {
		return true
	}
	return op.u != nil && op.u.User != nil && fp == rawFingerprint(op.Method, op.u.String(), op.Body)
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

// recordVersion is the first byte of every encoded operation. A reader
// refuses versions it does not know rather than guess. Version 2 added
// Host; a record without one is still written as version 1, which every
// release reads.
const recordVersion = 2

// encode appends op in the journal's binary format (see internal/wire): a
// version byte, then fields in a fixed order.
func (op *Operation) encode(b []byte) []byte {
	version := byte(1)
	if op.Host != "" {
		version = recordVersion
	}
	b = append(b, version, byte(op.State))
	b = wire.AppendString(b, op.Key)
	b = wire.AppendString(b, op.Name)
	b = wire.AppendString(b, op.Method)
	b = wire.AppendString(b, op.URL)
	if version >= 2 {
		b = wire.AppendString(b, op.Host)
	}
	b = wire.AppendHeader(b, op.Header)
	b = wire.AppendBytes(b, op.Body)
	b = append(b, op.Fingerprint[:]...)
	b = wire.AppendTime(b, op.CreatedAt)
	b = wire.AppendTime(b, op.ExpiresAt)
	b = wire.AppendTime(b, op.UpdatedAt)
	b = wire.AppendUvarint(b, uint64(op.Attempts))
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
	b = wire.AppendUvarint(b, uint64(r.StatusCode))
	b = wire.AppendHeader(b, r.Header)
	return wire.AppendBytes(b, r.Body)
}

// decodeOperation parses a record written by encode. It never panics and
// never allocates more than the input's size justifies.
func decodeOperation(p []byte) (*Operation, error) {
	d := wire.NewDecoder(p)
	v := d.Byte()
	if v != 1 && v != recordVersion {
		if d.Err() != nil {
			return nil, d.Err()
		}
		return nil, fmt.Errorf("unknown record version %d", v)
	}
	op := &Operation{State: State(d.Byte())}
	op.Key = d.String()
	op.Name = d.String()
	op.Method = d.String()
	op.URL = d.String()
	if v >= 2 {
		op.Host = d.String()
	}
	op.Header = d.Header()
	op.Body = d.Bytes()
	copy(op.Fingerprint[:], d.Take(32))
	op.CreatedAt = d.Time()
	op.ExpiresAt = d.Time()
	op.UpdatedAt = d.Time()
	op.Attempts = int(d.Uvarint(1 << 31))
	if flags := d.Byte(); flags&1 != 0 {
		op.Result = &Result{
			Truncated:  flags&2 != 0,
			Replayed:   flags&4 != 0,
			StatusCode: int(d.Uvarint(999)),
			Header:     d.Header(),
			Body:       d.Bytes(),
		}
		if flags > 7 {
			d.Fail()
		}
	}
	if d.End() == nil && (op.State < Pending || op.State > Expired || op.Key == "") {
		d.Fail()
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return op, nil
}
