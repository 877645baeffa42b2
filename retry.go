// This file holds the retry rules: what one attempt came to (classify)
// and what follows it (next). Both are pure: neither touches the network,
// the clock or the budget, so both are table-tested alone. The loop that
// applies them is in send.go.

package idem

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"
)

// outcome is what one attempt came to.
type outcome uint8

const (
	// outAnswer: a final answer, a status not worth retrying or one the
	// server marks a replay (asking again will not change it).
	outAnswer outcome = iota
	// outRetryable: a status worth another attempt (see isRetryableStatus),
	// or a final one the server hints to retry.
	outRetryable
	// outNoRetry: a status worth another attempt that the server hints
	// not to retry.
	outNoRetry
	// outFailed: no response, or a cut-off body, for a reason that may go
	// away.
	outFailed
	// outTimeout: outFailed because the attempt timed out; a retry costs
	// the budget more.
	outTimeout
	// outBroken: a transport error that another attempt will not cure: a
	// bad certificate, a malformed request.
	outBroken
	// outTooLarge: a response body over Options.MaxResponseBody.
	outTooLarge
)

// classify says what an attempt came to: resp is its response (nil if it
// had none) and err its error, with the whole body read (a cut-off body is
// an error). replayed reports that the server marks the response a replay
// (Idempotent-Replayed, or Options.IsReplayed); hint is its explicit retry
// hint, nil if none (see retryHint). The rules for a response:
//
//	the response                                 outcome
//	a replay, whatever its status or hint        outAnswer
//	a retryable status, hint false               outNoRetry
//	a retryable status, no hint or hint true     outRetryable
//	another status of 400 or more, hint true     outRetryable
//	another status                               outAnswer
func classify(resp *http.Response, err error, replayed bool, hint *bool) outcome {
	switch {
	case errors.Is(err, ErrBodyTooLarge):
		return outTooLarge
	case err != nil && !retryableError(err):
		return outBroken
	case err != nil && isTimeout(err):
		return outTimeout
	case err != nil || resp == nil:
		return outFailed
	case replayed:
		return outAnswer
	case isRetryableStatus(resp.StatusCode):
		if hint != nil && !*hint {
			return outNoRetry
		}
		return outRetryable
	case hint != nil && *hint && resp.StatusCode >= 400:
		return outRetryable
	}
	return outAnswer
}

// retryState is what next decides from.
type retryState struct {
	outcome outcome
	err     error // the attempt's error, if any
	ctxErr  error // the call's context's error, if it ended
	// attempts counts the attempts so far, net/http's own resends
	// included; maxAttempts is Options.MaxAttempts.
	attempts, maxAttempts int
	// retryAfter is the response's Retry-After, if any; maxRetryAfter
	// clamps it. backoff is the jittered Backoff for this retry, used when
	// the server names no wait.
	retryAfter    string
	maxRetryAfter time.Duration
	backoff       time.Duration
	// now is the time of the decision; deadline the context's, if it has
	// one.
	now, deadline time.Time
	// retainUntil is the last instant an attempt may reach the server (see
	// Client.retainedUntil); zero without a journal. An attempt arrives
	// within attemptTimeout of being sent.
	retainUntil    time.Time
	attemptTimeout time.Duration
}

// errAnswered is next's stop for an attempt that is the final answer.
var errAnswered = errors.New("idem: answered")

// next decides what follows an attempt: another one after wait (stop is
// nil), or none, because the attempt is the answer (stop is errAnswered) or
// for the reason stop gives. The rules, in order:
//
//	the attempt                              stop
//	a final answer                           errAnswered
//	a body over MaxResponseBody              ErrBodyTooLarge
//	the context ended                        its error
//	a transport error that will not go away  that error
//	the server hints not to retry            ErrServerSaidNoRetry
//	MaxAttempts made                         ErrRetriesExhausted
//	the wait would end after the deadline    ErrDeadline
//	the retry could arrive after retention   ErrExpired
//	otherwise                                nil: retry after wait
//
// The wait is the server's Retry-After, clamped to maxRetryAfter and never
// shortened, or else backoff. The budget is not next's: a retry next
// allows still needs its tokens.
func next(s retryState) (wait time.Duration, stop error) {
	switch {
	case s.outcome == outAnswer:
		return 0, errAnswered
	case s.outcome == outTooLarge:
		return 0, ErrBodyTooLarge
	case s.ctxErr != nil:
		return 0, s.ctxErr
	case s.outcome == outBroken:
		return 0, s.err
	case s.outcome == outNoRetry:
		return 0, ErrServerSaidNoRetry
	case s.attempts >= s.maxAttempts:
		return 0, ErrRetriesExhausted
	}
	wait = s.backoff
	if d, ok := ParseRetryAfter(s.retryAfter, s.now); ok {
		wait = min(d, s.maxRetryAfter)
	}
	if !s.deadline.IsZero() && s.deadline.Sub(s.now) < wait {
		return 0, ErrDeadline
	}
	if !s.retainUntil.IsZero() && tooLate(s.now.Add(wait), s.attemptTimeout, s.retainUntil) {
		// The server may have forgotten the key by the time this retry
		// arrives, and would run the operation again.
		return 0, ErrExpired
	}
	return wait, nil
}

// tooLate reports whether an attempt sent at sendAt could reach the server
// after until: it arrives within attemptTimeout of being sent. It is the
// one retention check, made before every attempt, the first included.
//
// It compares wall-clock times: a monotonic reading stops while a machine
// sleeps or a VM is paused, but the server's retention does not.
func tooLate(sendAt time.Time, attemptTimeout time.Duration, until time.Time) bool {
	return sendAt.Round(0).Add(attemptTimeout).After(until.Round(0))
}

// isRetryableStatus reports the statuses worth another attempt: the
// server says the first attempt still runs (409), or it is overloaded or
// failed in a way a repeat may not (408, 425, 429, 500, 502, 503, 504).
func isRetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly,
		http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func isReplayed(h http.Header) bool {
	return strings.EqualFold(h.Get("Idempotent-Replayed"), "true")
}

// retryableError reports whether a transport error may go away on another
// attempt. Certificate failures and malformed requests will not.
func retryableError(err error) bool {
	var (
		unknownCA *x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
	)
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return false
	}
	msg := err.Error()
	return !strings.Contains(msg, "unsupported protocol scheme") &&
		!strings.Contains(msg, "invalid header")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
