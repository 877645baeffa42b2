// This file holds Options, the client's configuration, and Attempt, what
// Options.OnAttempt hears of each attempt.

package idem

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Options configures a [Client]. The zero value means the documented
// defaults, so New(Options{}) gives a working client without a journal.
type Options struct {
	// Journal makes operations survive a crash of this process: each is
	// written to it before its first attempt, and Resume continues pending
	// ones after a restart. Default nil: no journal, keys and retries only.
	// The client does not close it.
	Journal *Journal

	// Transport sends each attempt. Default: a clone of
	// http.DefaultTransport allowing 64 idle connections per host. idem
	// never calls its CloseIdleConnections.
	Transport http.RoundTripper
	// AttemptTimeout bounds one attempt, from dialling and writing the
	// request to reading the whole response body, through a per-attempt
	// context. Default 30s. A timed-out attempt is retried.
	AttemptTimeout time.Duration

	// Header names the idempotency key header. Default "Idempotency-Key".
	// Other APIs use "X-Idempotency-Key", "PayPal-Request-Id" and others.
	Header string
	// KeyFormat chooses how keys are minted for requests that carry none.
	// Default UUIDv7.
	KeyFormat KeyFormat
	// QuoteKey sends the key as a Structured Field string ("abc", the IETF
	// draft's syntax) instead of bare (abc, Stripe's). Default false.
	QuoteKey bool

	// MaxAttempts is the most attempts one call makes, the first included.
	// Default 5.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff between attempts; see
	// Backoff. Defaults 200ms and 10s.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter clamps a server's Retry-After. Default 60s.
	MaxRetryAfter time.Duration
	// Budget is the client-wide retry budget. Default: see BudgetOptions.
	Budget BudgetOptions

	// KeyRetention is how long the server keeps a key (Stripe: 24 hours).
	// A pending operation older than this is never sent again; it is marked
	// Expired and reported, since the server may have forgotten the key.
	// Retries stop short of it too: one that could arrive after it (its
	// wait plus AttemptTimeout) is not sent. Default 24h.
	KeyRetention time.Duration
	// SecretHeaders lists headers, besides Authorization, Cookie and
	// Proxy-Authorization, that are never written to the journal.
	SecretHeaders []string
	// PrepareRequest, if set, is called on every attempt's request just
	// before it is sent, resumed operations included: the place to set
	// credentials, which the journal does not keep. An error stops the
	// operation (it stays pending) and is returned.
	PrepareRequest func(*http.Request) error

	// MaxRequestBody is the largest request body accepted. Default 8 MiB.
	MaxRequestBody int64
	// MaxResponseBody is the largest response body read. Default 16 MiB.
	MaxResponseBody int64
	// MaxJournalBody is how much of a final response body the journal
	// keeps. Default 64 KiB.
	MaxJournalBody int
	// MaxErrorBody is how much of the last response body an *Error keeps.
	// Default 4 KiB.
	MaxErrorBody int

	// ResumeConcurrency bounds how many operations Resume sends at once.
	// Default 4.
	ResumeConcurrency int
	// ResumeJitter spreads the start of resumed operations uniformly over
	// this window, so a fleet restarting together is not a thundering
	// herd. Default 500ms; negative starts them at once.
	ResumeJitter time.Duration

	// Logger receives a debug line per retry and warnings for expired
	// operations. Default nil: silent.
	Logger *slog.Logger
	// OnAttempt, if set, is called after every attempt, from the goroutine
	// making it.
	OnAttempt func(Attempt)
}

// Attempt describes one finished attempt, for Options.OnAttempt.
type Attempt struct {
	Key string
	// N counts attempts of this call so far, resends by net/http included.
	N int
	// StatusCode is the response status, 0 if there was none; Err the
	// transport error, if any.
	StatusCode int
	Err        error
	// Replayed reports the server's Idempotent-Replayed: true.
	Replayed bool
	// Retry reports that another attempt follows, after Wait.
	Retry bool
	Wait  time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Header == "" {
		o.Header = "Idempotency-Key"
	}
	if !validHeaderName(o.Header) {
		return o, fmt.Errorf("idem: Options.Header %q is not a valid header name", o.Header)
	}
	o.Header = http.CanonicalHeaderKey(o.Header)
	if o.KeyFormat != UUIDv7 && o.KeyFormat != ULID {
		return o, fmt.Errorf("idem: unknown Options.KeyFormat %v", o.KeyFormat)
	}
	if o.MaxAttempts < 0 {
		return o, errors.New("idem: Options.MaxAttempts is negative")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt(&o.MaxAttempts, 5)
	def(&o.AttemptTimeout, 30*time.Second)
	def(&o.BaseDelay, 200*time.Millisecond)
	def(&o.MaxDelay, 10*time.Second)
	def(&o.MaxRetryAfter, 60*time.Second)
	def(&o.KeyRetention, 24*time.Hour)
	defInt(&o.MaxJournalBody, 64<<10)
	defInt(&o.MaxErrorBody, 4<<10)
	defInt(&o.ResumeConcurrency, 4)
	if o.ResumeJitter == 0 {
		o.ResumeJitter = 500 * time.Millisecond
	}
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = 8 << 20
	}
	if o.MaxResponseBody <= 0 {
		o.MaxResponseBody = 16 << 20
	}
	o.Budget = o.Budget.withDefaults()
	if o.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		o.Transport = t
	}
	return o, nil
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}
