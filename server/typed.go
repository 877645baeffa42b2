// This file holds RunOnceValue and RunOnceCodec, RunOnce for work whose
// result is a Go value rather than bytes, and the codecs that carry such a
// value into the store and back.

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Codec turns a result of type T into the bytes a store keeps, and those
// bytes back into a T, for [RunOnceCodec]. Decode must accept whatever
// Encode returned, for as long as records are retained (RunOptions.Retention):
// a replay may be decoded by a later version of the program. A Codec must
// be safe for concurrent use.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(data []byte) (T, error)
}

// JSONCodec is the [Codec] of [RunOnceValue]: encoding/json's Marshal and
// Unmarshal. Its zero value is ready to use and safe for concurrent use.
// What JSON does not carry does not survive a replay: unexported fields,
// a time's monotonic reading and location name, the difference between a
// nil and an empty slice.
type JSONCodec[T any] struct{}

// Encode returns the JSON encoding of v.
func (JSONCodec[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// Decode returns the T whose JSON encoding is data.
func (JSONCodec[T]) Decode(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// ErrCodec is matched (errors.Is) by every [*CodecError].
var ErrCodec = errors.New("idem/server: result codec failed")

// CodecOp names the step of a [Codec] that failed.
type CodecOp string

// The steps of a Codec.
const (
	// CodecEncode: the work ran and succeeded, and its result could not
	// be encoded. Its run is recorded as one whose result was not kept
	// (see RunOnceCodec), so it never runs again.
	CodecEncode CodecOp = "encode"
	// CodecDecode: a recorded result could not be decoded (the codec
	// changed, or the key's record was written by another kind of call,
	// such as RunOnce). The work did not run.
	CodecDecode CodecOp = "decode"
)

// CodecError is the error [RunOnceValue] and [RunOnceCodec] return when
// their codec fails. It matches [ErrCodec] with errors.Is and unwraps to
// the codec's own error.
type CodecError struct {
	Op  CodecOp
	Err error // the codec's error, or a description of malformed stored bytes
}

func (e *CodecError) Error() string {
	return fmt.Sprintf("idem/server: %s result: %v", e.Op, e.Err)
}

// Unwrap returns the codec's error.
func (e *CodecError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrCodec].
func (e *CodecError) Is(target error) bool { return target == ErrCodec }

// The stored form of a typed result is one tag byte and then, for
// tagValue, the codec's bytes. The tag tells a result that could not be
// encoded (tagUnencodable, nothing after it) from any encoding, so that a
// replay of such a run knows the work ran and does not run it again.
const (
	tagValue       = 'v'
	tagUnencodable = 'u'
)

// errMalformed is a CodecError's Err for stored bytes that no typed call
// wrote.
var errMalformed = errors.New("the stored result has no typed-result tag: it was not recorded by RunOnceValue or RunOnceCodec")

// RunOnceValue is [RunOnce] for work whose result is a value of type T,
// kept in the store as JSON ([JSONCodec]): it runs work at most once per
// key k and returns its result, and later calls with the same fingerprint
// return the recorded result, decoded, with replayed true, without
// running work. It is RunOnceCodec with a JSONCodec[T].
func RunOnceValue[T any](ctx context.Context, store Store, k Key, fp string, work func(context.Context) (T, error), opts RunOptions) (result T, replayed bool, err error) {
	return RunOnceCodec(ctx, store, k, fp, JSONCodec[T]{}, work, opts)
}

// RunOnceCodec is [RunOnce] for work whose result is a value of type T,
// kept in the store as codec encodes it (a nil codec is a [JSONCodec]).
//
// The first call for k claims k, runs work and, if it succeeds, records
// the encoding of its result; it returns work's own value, not a decoded
// copy. A later call with the same fingerprint decodes the recorded
// result and returns it with replayed true, without running work. Every
// other answer is RunOnce's, with T's zero value in place of a nil slice:
// work's error releases k and is returned as it is, ctx's cancellation
// does not cancel the work once k is held (its result is recorded even if
// the caller gave up; see RunOnce), and [ErrKeyReused], [ErrInFlight],
// [ErrOverloaded], [ErrLeaseLost] and store failures mean what they mean
// there. Where RunOnce returns a result together with an error (the work
// ran, and recording its result failed), RunOnceCodec returns work's
// value with that error.
//
// A codec failure is a [*CodecError] (errors.Is [ErrCodec]):
//
//   - encode, on the first call: the work ran and succeeded, but its
//     result has no encoding. The run is recorded all the same, as one
//     whose result was not kept (in the store's transaction, with the
//     work's writes), so that a redelivery does not repeat the work's
//     effects: RunOnceCodec returns work's value with the error, and every
//     later call with the same fingerprint returns T's zero value,
//     replayed true and [ErrResultNotKept] without running work.
//   - decode, on a replay: the recorded bytes are not a T to this codec.
//     The work does not run; RunOnceCodec returns T's zero value,
//     replayed true and the error.
//
// The store keeps one tag byte before the codec's bytes, which tells a
// result that was not kept from any encoding; a key recorded by RunOnce
// (untagged bytes) is therefore a decode error here, and a key recorded
// here replays through RunOnce with the tag. Use one kind of call per
// key. RunOnceCodec is safe for concurrent use if codec is; a nil ctx
// panics.
func RunOnceCodec[T any](ctx context.Context, store Store, k Key, fp string, codec Codec[T], work func(context.Context) (T, error), opts RunOptions) (result T, replayed bool, err error) {
	if codec == nil {
		codec = JSONCodec[T]{}
	}
	var (
		value  T
		encErr error
	)
	raw, replayed, err := RunOnce(ctx, store, k, fp, func(wctx context.Context) ([]byte, error) {
		v, err := work(wctx)
		if err != nil {
			return nil, err
		}
		value = v
		b, err := codec.Encode(v)
		if err != nil {
			// The work happened: record that it did, not its result.
			encErr = &CodecError{Op: CodecEncode, Err: err}
			return []byte{tagUnencodable}, nil
		}
		return append([]byte{tagValue}, b...), nil
	}, opts)
	var zero T
	if !replayed {
		if raw == nil { // the work did not run, or its run was not kept
			return zero, false, err
		}
		if encErr != nil && err != nil {
			return value, false, errors.Join(encErr, err)
		}
		if encErr != nil {
			return value, false, encErr
		}
		return value, false, err
	}
	if err != nil {
		return zero, true, err
	}
	if len(raw) == 0 || (raw[0] != tagValue && raw[0] != tagUnencodable) {
		return zero, true, &CodecError{Op: CodecDecode, Err: errMalformed}
	}
	if raw[0] == tagUnencodable {
		return zero, true, fmt.Errorf("%w: it could not be encoded", ErrResultNotKept)
	}
	v, err := codec.Decode(raw[1:])
	if err != nil {
		return zero, true, &CodecError{Op: CodecDecode, Err: err}
	}
	return v, true, nil
}
