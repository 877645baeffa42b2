package key

import (
	"errors"
	"strconv"
)

// The sentinels the idem client and the server package both export, as
// idem.ErrInvalidKey and server.ErrInvalidKey, idem.ErrKeyReused and
// server.ErrKeyReused: one value each, so errors.Is matches across the
// two packages.
var (
	ErrInvalid = errors.New("idem: invalid idempotency key")
	ErrReused  = errors.New("idem: key reused with a different request")
)

// quoteLimit is how much of a rejected value an error quotes.
const quoteLimit = 64

// InvalidError is a value that is not a key, and why. It wraps ErrInvalid.
type InvalidError struct {
	// Value is the rejected value, cut to 64 bytes.
	Value   string
	Problem Problem
	// Len is the rejected value's whole length in bytes.
	Len int
}

// Invalid returns the error for value v with problem p.
func Invalid(v string, p Problem) *InvalidError {
	e := &InvalidError{Value: v, Problem: p, Len: len(v)}
	if len(v) > quoteLimit {
		e.Value = v[:quoteLimit]
	}
	return e
}

// Error quotes the value with Go escapes, so control bytes and quotes show
// as what they are, and a long one is cut with its length given.
func (e *InvalidError) Error() string {
	q := strconv.Quote(e.Value)
	if e.Len > len(e.Value) {
		q = q[:len(q)-1] + `..." (` + strconv.Itoa(e.Len) + " bytes)"
	}
	return ErrInvalid.Error() + " " + q + ": " + e.Problem.String()
}

// Unwrap returns ErrInvalid.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// ReusedProblemType is the RFC 9457 problem type the server package
// answers key reuse with (server.ProblemKeyReused), and the one the client
// recognises as key reuse.
const ReusedProblemType = "https://idem.dev/problems/key-reused"
