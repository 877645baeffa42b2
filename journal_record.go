// This file holds the journal record: the binary encoding of an
// Operation, its versions, and the strict decoder.

package idem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"

	"github.com/idemhq/idem/internal/wire"
)

// recordVersion is the first byte of every record this release writes.
// A reader refuses versions it does not know rather than guess. Every
// release reads the versions before its own:
//
//	version  layout
//	1        state, key, name, method, URL, header, body, fingerprint,
//	         created, expires, updated, attempts, result
//	2        1, with Host after the URL
//	3        2, with Refused and Abandoned state bytes of their own,
//	         the result's KeyReused flag, and a CRC-32C (Castagnoli) of all the
//	         record's bytes before it, big-endian, as its last 4 bytes
//
// The checksum makes a damaged record an error: a changed byte anywhere,
// a header value, the body, the state, is reported as ErrJournalCorrupt,
// never sent as if it were the operation.
//
// Versions 1 and 2 hold a refusal as Failed with its 401, 403 or 407 (not
// replayed): it reads as Refused. They hold no KeyReused flag: a 422 reads
// as key reuse if its header and body say so (see reusedBySignal).
const recordVersion = 3

// Result flags, one byte after the attempts.
const (
	flagResult    = 1 << iota // a Result follows
	flagTruncated             // StoredResponse.Truncated
	flagReplayed              // StoredResponse.Replayed
	flagKeyReused             // Result.KeyReused, from version 3
)

// encode appends op as a record of the current version. Given nil, it
// allocates once, at the record's size.
func (op *Operation) encode(b []byte) []byte {
	if b == nil {
		b = make([]byte, 0, op.recordSize())
	}
	return op.appendRecord(b, recordVersion)
}

// recordSize is an upper bound of the bytes appendRecord appends for op.
func (op *Operation) recordSize() int {
	const varint = binary.MaxVarintLen64
	n := 2 + 5*varint + len(op.Key) + len(op.Name) + len(op.Method) + len(op.URL) + len(op.Host) +
		wire.HeaderSize(op.Header) + varint + len(op.Body) + len(op.Fingerprint) + 4*varint + 1 + 4
	if r := op.Response; r != nil {
		n += varint + wire.HeaderSize(r.Header) + varint + len(r.Body)
	}
	return n
}

// appendRecord appends op in the journal's binary format (see
// internal/wire), as a record of the given version: a version byte, then
// fields in a fixed order. Only tests write versions before the current
// one.
func (op *Operation) appendRecord(b []byte, version byte) []byte {
	state := op.State
	if state == Refused && version < 3 {
		state = Failed
	}
	start := len(b)
	b = append(b, version, byte(state))
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
	if op.Response == nil {
		return sealRecord(append(b, 0), start, version)
	}
	r := op.Response
	var flags byte = flagResult
	if r.Truncated {
		flags |= flagTruncated
	}
	if r.Replayed {
		flags |= flagReplayed
	}
	if r.KeyReused && version >= 3 {
		flags |= flagKeyReused
	}
	b = append(b, flags)
	b = wire.AppendUvarint(b, uint64(r.StatusCode))
	b = wire.AppendHeader(b, r.Header)
	b = wire.AppendBytes(b, r.Body)
	return sealRecord(b, start, version)
}

// castagnoli is the CRC-32C table of record checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errChecksum is the error for a record whose checksum does not match.
var errChecksum = errors.New("checksum mismatch: the record was changed after it was written")

// sealRecord appends the checksum of the record that starts at b[start],
// from version 3 on.
func sealRecord(b []byte, start int, version byte) []byte {
	if version < 3 {
		return b
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// decodeOperation parses a record of any version this release reads. It
// never panics and never allocates more than the input's size justifies.
func decodeOperation(p []byte) (*Operation, error) {
	if len(p) == 0 {
		return nil, wire.ErrMalformed
	}
	v := p[0]
	if v < 1 || v > recordVersion {
		return nil, fmt.Errorf("unknown record version %d", v)
	}
	if v >= 3 {
		if len(p) < 5 {
			return nil, wire.ErrMalformed
		}
		body, sum := p[:len(p)-4], binary.BigEndian.Uint32(p[len(p)-4:])
		if crc32.Checksum(body, castagnoli) != sum {
			return nil, errChecksum
		}
		p = body
	}
	d := wire.NewDecoder(p[1:])
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
	maxFlags, maxState := byte(flagResult|flagTruncated|flagReplayed), Expired
	if v >= 3 {
		maxFlags, maxState = maxFlags|flagKeyReused, Abandoned
	}
	switch flags := d.Byte(); {
	case flags > maxFlags || flags != 0 && flags&flagResult == 0:
		d.Fail()
	case flags != 0:
		op.Response = &StoredResponse{
			Truncated:  flags&flagTruncated != 0,
			Replayed:   flags&flagReplayed != 0,
			KeyReused:  flags&flagKeyReused != 0,
			StatusCode: int(d.Uvarint(999)),
			Header:     d.Header(),
			Body:       d.Bytes(),
		}
	}
	if d.End() == nil && (op.State < Pending || op.State > maxState || op.Key == "") {
		d.Fail()
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	if r := op.Response; v < 3 && r != nil {
		if op.State == Failed && isRefusal(r.StatusCode, r.Replayed) {
			op.State = Refused
		}
		r.KeyReused = r.StatusCode == http.StatusUnprocessableEntity && reusedBySignal(r.StatusCode, r.Header, r.Body)
	}
	return op, nil
}
