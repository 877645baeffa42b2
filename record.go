// This file holds the journal record: the binary encoding of an
// Operation, its versions, and the strict decoder.

package idem

import (
	"fmt"

	"github.com/idemhq/idem/internal/wire"
)

// recordVersion is the first byte of every encoded operation. A reader
// refuses versions it does not know rather than guess. Version 2 added
// Host; a record without one is still written as version 1, which every
// release reads.
//
// Versions 1 and 2 have no byte for Refused: a refusal is written as
// Failed with its 401, 403 or 407 (not replayed), and read back as Refused.
const recordVersion = 2

// encode appends op in the journal's binary format (see internal/wire): a
// version byte, then fields in a fixed order.
func (op *Operation) encode(b []byte) []byte {
	version := byte(1)
	if op.Host != "" {
		version = recordVersion
	}
	state := op.State
	if state == Refused {
		state = Failed // see recordVersion
	}
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
	if op.State == Failed && op.Result != nil && isRefusal(op.Result.StatusCode, op.Result.Replayed) {
		op.State = Refused // see recordVersion
	}
	return op, nil
}
