// This file holds the client's errors: the sentinels callers branch on
// and Error, which carries what is known about the last attempt.

package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemhq/idem/internal/key"
)

// Conditions callers branch on with errors.Is.
var (
	// ErrInvalidKey: a key is empty, longer than MaxKeyLen, contains a byte
	// that is not printable ASCII, or is a malformed quoted string. It is
	// the same value as server.ErrInvalidKey.
	ErrInvalidKey = key.ErrInvalid

	// ErrKeyReused: the key was already used for a different request
	// (method, URL or body). Found locally in the journal, or said by the
	// server in its answer (see Options.IsKeyReused). Never retried. It is the same value as
	// server.ErrKeyReused.
	ErrKeyReused = key.ErrReused

	// ErrRetriesExhausted: every attempt allowed by Options.MaxAttempts
	// failed with a retryable status or transport error. The operation's
	// outcome is unknown and it stays pending in the journal.
	ErrRetriesExhausted = errors.New("idem: retries exhausted")

	// ErrBudgetExhausted: the client-side retry budget is empty, so a
	// retry was not attempted. The operation stays pending.
	ErrBudgetExhausted = errors.New("idem: client-side retry budget exhausted")

	// ErrDeadline: the next retry's wait would end after the context's
	// deadline, so idem gave up without waiting. errors.Is(err,
	// context.DeadlineExceeded) also reports true. The operation stays
	// pending.
	ErrDeadline error = deadlineError{}

	// ErrExpired: the operation is older than the server's key retention
	// (Options.KeyRetention). The server may have forgotten the key, so
	// sending it again could execute it twice; idem will not. Reconcile it
	// by other means.
	ErrExpired = errors.New("idem: operation outlived the server's key retention")

	// ErrAbandoned: the operation was given up on purpose
	// (Journal.Abandon). It is never sent again.
	ErrAbandoned = errors.New("idem: operation was abandoned")

	// ErrNoOperation: the journal holds no operation with the key.
	ErrNoOperation = errors.New("idem: no operation with this key in the journal")

	// ErrNoJournal: the call needs a journal and the client has none.
	ErrNoJournal = errors.New("idem: client has no journal")

	// ErrJournalLocked: another process holds the journal file open.
	ErrJournalLocked = errors.New("idem: journal is locked by another process")

	// ErrJournalCorrupt: the journal file, or a record in it, cannot be
	// read, or the file is not an idem journal. The file is left as it is.
	ErrJournalCorrupt = errors.New("idem: journal is corrupt or not an idem journal")

	// ErrJournalPath: the journal's path cannot hold a journal file: it is
	// a directory or another file that is not a regular one, or its
	// directory does not exist. The error names the path and says which.
	ErrJournalPath = errors.New("idem: journal path cannot hold a journal")

	// ErrJournalClosed: the journal was closed.
	ErrJournalClosed = errors.New("idem: journal is closed")

	// ErrServerSaidNoRetry: the server answered a status idem would retry
	// with an explicit hint not to (Stripe-Should-Retry: false, or another
	// header Options.RetryHints names), so no retry was sent. The server
	// gave no answer to the operation, only that sending it again now
	// will not help: the operation stays pending, and a later call or
	// Resume asks again. The *Error carries the response.
	ErrServerSaidNoRetry = errors.New("idem: the server said not to retry")

	// ErrMissingHeader: the request lacks a header the API requires
	// (Options.RequiredHeaders), so it was not sent. The operation stays
	// pending.
	ErrMissingHeader = errors.New("idem: request lacks a header the API requires")

	// ErrBodyTooLarge: a request body exceeds Options.MaxRequestBody, or a
	// response body exceeds Options.MaxResponseBody.
	ErrBodyTooLarge = errors.New("idem: body too large")
)

type deadlineError struct{}

func (deadlineError) Error() string {
	return "idem: next retry would end after the context deadline"
}

func (deadlineError) Is(target error) bool { return target == context.DeadlineExceeded }

// Error describes an operation that did not reach a final answer, or whose
// final answer is an error in idem's terms (key reuse). It carries what is
// known about the last attempt. Err says why; use errors.Is on the Error
// itself: it matches Err and, for transport failures, the last transport
// error (Cause).
type Error struct {
	Method string
	URL    string
	// Key is the operation's idempotency key: retry later with the same key.
	Key string
	// Attempts is how many times the request was sent, counting the
	// resends net/http makes on its own on a broken keep-alive connection.
	Attempts int
	// StatusCode, Header and Body describe the last response, if any
	// (StatusCode 0 if the last attempt got no response). Body holds at
	// most Options.MaxErrorBody bytes.
	StatusCode int
	Header     http.Header
	Body       []byte
	// Err is the reason: ErrRetriesExhausted, ErrBudgetExhausted,
	// ErrDeadline, ErrServerSaidNoRetry, ErrKeyReused, ErrExpired,
	// ErrAbandoned, ErrBodyTooLarge, ErrMissingHeader, ErrJournalCorrupt, a context error, or a
	// non-retryable transport or hook error.
	Err error
	// Cause is the last attempt's transport error, if it had one.
	Cause error

	whole   []byte // the last response's whole body, for the RoundTripper
	partial bool   // the last response is a journal answer cut to MaxJournalBody
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (key %q): %v", e.Method, e.URL, e.Key, e.Err)
	if e.Attempts > 0 {
		fmt.Fprintf(&b, " after %d attempt", e.Attempts)
		if e.Attempts > 1 {
			b.WriteByte('s')
		}
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ", last status %d", e.StatusCode)
	}
	if e.Cause != nil && e.Cause != e.Err {
		fmt.Fprintf(&b, ", last error: %v", e.Cause)
	}
	return b.String()
}

// Unwrap returns Err and Cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Cause == nil || e.Cause == e.Err {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// movedError is the error of a transition whose record was no longer in
// the state it was made from: Abandon, an expiry or Purge moved it first.
// It matches ErrAbandoned, ErrExpired or ErrNoOperation, for the state it
// found.
type movedError struct {
	key         string
	from, state State
}

func (e *movedError) Error() string {
	switch {
	case e.state == stateNone:
		return fmt.Sprintf("idem: operation %q is no longer in the journal", e.key)
	case e.from == stateNone:
		return fmt.Sprintf("idem: operation %q is in the journal already, %s", e.key, e.state)
	}
	return fmt.Sprintf("idem: operation %q is %s, no longer %s", e.key, e.state, e.from)
}

func (e *movedError) Is(target error) bool {
	switch e.state {
	case Abandoned:
		return target == ErrAbandoned
	case Expired:
		return target == ErrExpired
	case stateNone:
		return target == ErrNoOperation
	}
	return false
}
