// This file holds the record as etcd stores it: the value of one key per
// (scope, key), and its binary encoding.

package etcdstore

import (
	"encoding/binary"
	"errors"
	"net/http"
	"time"

	"github.com/idemhq/idem/server"
)

// recordVersion is the first byte of every value the store writes; a
// value that starts otherwise is not one of this version's records.
const recordVersion = 1

// Record states, the second byte of a value.
const (
	stateRunning   = 'r'
	stateCompleted = 'c'
)

// record is one key's value:
//
//	running    version, 'r', fingerprint, claim nonce, lapse
//	completed  version, 'c', fingerprint, claim nonce, complete nonce,
//	           expiry, status, header, body
//
// Strings and the body are a uvarint length and the bytes; times are
// Unix milliseconds as varints; the header is a uvarint count of fields,
// each a name and a uvarint count of values. The claim nonce names the
// claim that wrote the running record (and, once completed, the claim
// whose outcome it holds): a claim that lost its answer recognises its
// own record by it. The complete nonce does the same for a Complete.
type record struct {
	state         byte
	fingerprint   string
	claimNonce    string
	completeNonce string
	// lapse is when a running record's lease lapses; expires is when a
	// completed record's retention ends. Both are on the writer's clock.
	lapse, expires time.Time
	resp           server.StoredResponse
}

// encode returns the value r is stored as.
func (r *record) encode() []byte {
	n := 32 + len(r.fingerprint) + len(r.claimNonce) + len(r.completeNonce) + len(r.resp.Body)
	for name, values := range r.resp.Header {
		n += len(name) + 2*binary.MaxVarintLen64
		for _, v := range values {
			n += len(v) + binary.MaxVarintLen64
		}
	}
	b := make([]byte, 0, n)
	b = append(b, recordVersion, r.state)
	b = appendString(b, r.fingerprint)
	b = appendString(b, r.claimNonce)
	if r.state == stateRunning {
		return binary.AppendVarint(b, r.lapse.UnixMilli())
	}
	b = appendString(b, r.completeNonce)
	b = binary.AppendVarint(b, r.expires.UnixMilli())
	b = binary.AppendUvarint(b, uint64(r.resp.Status))
	b = binary.AppendUvarint(b, uint64(len(r.resp.Header)))
	for name, values := range r.resp.Header {
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(values)))
		for _, v := range values {
			b = appendString(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(r.resp.Body)))
	return append(b, r.resp.Body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// errMalformed is the error decodeRecord returns for a value that is not
// a record of this version.
var errMalformed = errors.New("malformed record")

// decodeRecord parses a value encode wrote. It never panics and never
// allocates more than the value's length justifies.
func decodeRecord(v []byte) (*record, error) {
	d := decoder{b: v}
	if d.byte() != recordVersion {
		return nil, errMalformed
	}
	r := &record{state: d.byte()}
	r.fingerprint = d.string()
	r.claimNonce = d.string()
	switch r.state {
	case stateRunning:
		r.lapse = d.time()
	case stateCompleted:
		r.completeNonce = d.string()
		r.expires = d.time()
		status := d.uvarint()
		if status < 100 || status > 999 {
			d.fail()
		}
		r.resp.Status = int(status)
		// Every field takes at least two bytes, every value one: the
		// counts are bounded by what is left before anything is made.
		if fields := d.count(2); fields > 0 {
			r.resp.Header = make(http.Header, fields)
			for range fields {
				name := d.string()
				values := make([]string, d.count(1))
				for i := range values {
					values[i] = d.string()
				}
				if d.err == nil {
					r.resp.Header[name] = values
				}
			}
		}
		if body := d.bytes(); len(body) > 0 {
			r.resp.Body = body
		}
	default:
		d.fail()
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

// decoder reads a value front to back, keeping the first error: once it
// has failed every read returns a zero value.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errMalformed
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// uvarint reads a varint in its shortest form, the only one encode
// writes, so that a record has one encoding.
func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	var buf [binary.MaxVarintLen64]byte
	if n <= 0 || n != len(binary.AppendUvarint(buf[:0], v)) {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) time() time.Time {
	v, n := binary.Varint(d.b)
	var buf [binary.MaxVarintLen64]byte
	if n <= 0 || n != len(binary.AppendVarint(buf[:0], v)) {
		d.fail()
		return time.Time{}
	}
	d.b = d.b[n:]
	return time.UnixMilli(v)
}

// count reads a count of items of at least size bytes each, failing if
// the rest of the value cannot hold them.
func (d *decoder) count(size int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/size) {
		d.fail()
		return 0
	}
	return int(n)
}

// bytes reads a length-prefixed byte string; the result is a copy.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	out := make([]byte, n)
	copy(out, d.b)
	d.b = d.b[n:]
	return out
}

func (d *decoder) string() string { return string(d.bytes()) }

// asRecord is the server.Record r reports to Claim's caller.
func (r *record) asRecord() server.Record {
	if r.state == stateRunning {
		return server.Record{Fingerprint: r.fingerprint, LeaseExpires: r.lapse, ExpiresAt: r.lapse}
	}
	return server.Record{Fingerprint: r.fingerprint, Completed: true, Response: r.resp, ExpiresAt: r.expires}
}
