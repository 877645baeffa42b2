// This file holds Options, the client's configuration, and Attempt, what
// Options.OnAttempt hears of each attempt.

package idem

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idemhq/idem/internal/bodykey"
)

// Options configures a [Client]. The zero value means the documented
// defaults, so New(Options{}) gives a working client without a journal.
// A negative size, count or duration is refused by New, except where a
// field gives a negative value a meaning (ResumeJitter, Budget.Capacity).
//
// Three settings are called retention, and they are three things: the
// server's key retention as the client assumes it (KeyRetention, here);
// how long the journal keeps finished operations
// (JournalOptions.PurgeAfter); and how long the server package keeps a
// key's record (server.Options.Retention, the server's own setting, which
// KeyRetention must not exceed).
type Options struct {
	// Journal makes operations survive a crash of this process: each is
	// written to it before its first attempt, and Resume continues pending
	// ones after a restart. Default nil: no journal, keys and retries only.
	// The client does not close it.
	Journal *Journal

	// Transport sends each attempt. Default: a clone of
	// http.DefaultTransport allowing 64 idle connections per host. idem
	// never calls its CloseIdleConnections. A response it returns together
	// with an error (which http.RoundTripper forbids) is closed and
	// dropped: the attempt failed with the error.
	Transport http.RoundTripper
	// AttemptTimeout bounds one attempt, from dialling and writing the
	// request to reading the whole response body, through a per-attempt
	// context. Default 30s. A timed-out attempt is retried.
	AttemptTimeout time.Duration

	// Profile carries a well-known API's conventions (Stripe, Adyen,
	// PayPal, Square, GoCardless; see Profile): where the key goes, its
	// length limit, the server's key retention, how the API says a key was
	// reused or a request replayed, its retry hints and required headers.
	// Every field of Options left zero takes the profile's value; a field
	// set here overrides it. The key's place is the profile's only if
	// neither Header nor BodyKey is set. Default: no profile, the
	// defaults below.
	Profile Profile

	// Header names the idempotency key header. Default "Idempotency-Key"
	// (none when BodyKey is set). Other APIs use "X-Idempotency-Key",
	// "PayPal-Request-Id" and others. New refuses a header HTTP gives
	// another meaning (Authorization, Cookie, Content-Type, Host, ...).
	Header string
	// BodyKey, if set, puts the key in a field of the JSON request body
	// instead of a header, as Square's API takes it ("idempotency_key"; a
	// dotted path such as "payment.idempotency_key" names a nested field).
	// The body must be a JSON object. Do reads the key from the field if
	// the caller put one there (a string; null counts as absent), or
	// writes a minted one (DoNamed: the name's) into it as the object's
	// first member, leaving every other byte as it was. The journal keeps
	// the body with the key in it, so every attempt, resumed ones
	// included, sends the same bytes. The request's fingerprint is taken
	// over the body without the field, as the server package's is with
	// its BodyKey option. Setting both Header and BodyKey is an error.
	// Default "": the key goes in the Header.
	BodyKey string
	// MaxKeyLen is the longest key the API accepts, in bytes, at most
	// MaxKeyLen (255). A key longer than this, the caller's or a name's,
	// is refused with ErrInvalidKey before anything is sent; New refuses a
	// KeyFormat whose keys would not fit. Keys from DeriveKey are 36
	// bytes. Default 255.
	MaxKeyLen int
	// DeriveSecret keys the derivation of the keys of calls made from
	// inside work that holds a key (a handler behind the server
	// package's Middleware; see Step and Client.StepKey): HMAC-SHA-256
	// with it, so that nobody without the secret can compute them. Every
	// process of the service must use the same secret, or a re-run in
	// another process would send the provider a new key. Default nil:
	// SHA-256, still one-way (the provider never learns the held key).
	DeriveSecret []byte
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
	// Backoff. Defaults 200ms (or MaxDelay, if that is shorter) and 10s.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter clamps a server's Retry-After. Default 60s.
	MaxRetryAfter time.Duration
	// Budget is the client-wide retry budget. Default: see BudgetOptions.
	Budget BudgetOptions

	// KeyRetention is how long the server keeps a key (Stripe: 24 hours;
	// for a server built on the server package, its Options.Retention).
	// A pending operation older than this is never sent again; it is marked
	// Expired and reported, since the server may have forgotten the key.
	// Retries stop short of it too: one that could arrive after it (its
	// wait plus AttemptTimeout) is not sent. Default 24h.
	KeyRetention time.Duration
	// IsKeyReused, if set, is asked about every final answer of status 400
	// or more that idem does not recognise as key reuse itself, and says
	// whether it is the server saying the key was first used for a
	// different request: for an API that signals it its own way. resp is
	// the live answer, its whole body read. Key reuse is returned by Do as
	// an *Error wrapping ErrKeyReused, and journaled as such
	// (StoredResponse.KeyReused), so a later call with the key is answered the
	// same way without the network.
	//
	// idem itself recognises idem's own problem type, a 422 problem
	// document that names idempotency and says reuse ("Idempotency-Key is
	// already used", the IETF draft's form) or a 422 whose Link header
	// points to documentation about idempotency, and Stripe's error type
	// "idempotency_error" (a 400). Any other answer, a 422 validation
	// error among them (one about the key itself included: "Idempotency-Key
	// must be at most 64 characters"), is a Response like any other 4xx.
	// IsKeyReused is called from the goroutine making the call and must
	// not keep resp. Default nil.
	IsKeyReused func(resp *Response) bool
	// SameRequest says which parts of a JSON body make a call under a
	// key the journal already holds the same request: the same rule as
	// the server package's Options.Fingerprint (FingerprintRule's
	// pointers), so that a retry that changes only a field the service
	// ignores (a timestamp, a trace ID) is not refused locally with
	// ErrKeyReused. Such a call is the journaled operation: answered from
	// the journal if it has an answer, or continued with the journaled
	// bytes, never the new ones (see FingerprintRule). Default: the whole
	// request.
	SameRequest FingerprintRule
	// OnConflict, if set, is called when Do or DoNamed ends in a conflict
	// over the key: an *Error wrapping ErrKeyReused (from the server or
	// the journal), or one wrapping ErrRetriesExhausted whose last answer
	// was 409 (the server said, to the end, that the key is busy, or, as
	// some APIs do, that it already created something under it). It may
	// fetch the resource the key made (GoCardless's
	// links.conflicting_resource_id, in err.Body) and return a Response,
	// which Do then returns with a nil error; a nil Response and nil error
	// leave Do's error as it was; an error is returned wrapped together
	// with err (errors.Is matches both). The journal is not changed: a
	// key reuse stays journaled as one, and an operation whose 409s
	// outlasted the retries stays pending, so that Resume (which does not
	// call OnConflict) sends it again; call Journal.Abandon from the hook
	// to give it up. It is called from the goroutine that called Do, with
	// the request's context, and must be safe for concurrent use.
	// Default nil.
	OnConflict func(ctx context.Context, err *Error) (*Response, error)
	// IsReplayed, if set, is asked about every answer that carries no
	// Idempotent-Replayed: true, and says whether it is the server saying
	// an earlier attempt under this key already ran, for an API that says
	// so its own way (GoCardless answers 409 idempotent_creation_conflict
	// naming the resource the first attempt created). Such an answer is
	// final whatever its status, and marked Replayed. It is called from
	// the goroutine making the call and must not keep resp. Default nil.
	IsReplayed func(resp *Response) bool

	// RetryHints names response headers in which the server says whether
	// to retry: "true" or "false", in any case (Stripe's
	// Stripe-Should-Retry, Adyen's Transient-Error, the X-Should-Retry
	// some SDKs honour). "false" on a status idem would retry stops the
	// call at once with an *Error wrapping ErrServerSaidNoRetry; "true" on
	// a final status of 400 or more retries it. A replayed answer is final
	// whatever it says. The first listed header present decides; any
	// other value is no hint. Headers not listed are never read as hints.
	// Default nil: no hints.
	RetryHints []string
	// RequiredHeaders names headers the API needs on every request besides
	// the key (GoCardless-Version). An attempt whose request lacks one,
	// after PrepareRequest, is not sent: the call returns an *Error
	// wrapping ErrMissingHeader, and the operation stays pending. Default
	// nil.
	RequiredHeaders []string

	// SecretHeaders lists headers that are never written to the journal,
	// besides those withheld anyway: Authorization, Proxy-Authorization,
	// Cookie, and, unless JournalHeaders is set, every header whose name
	// says it carries a credential. A name says so by one of its words
	// (split at '-', '_' and other punctuation, at a change from lower to
	// upper case, and between letters and digits; in any case): auth,
	// authorization, authentication, oauth, token, secret, signature, sig,
	// session, bearer, password, passwd, pass, pwd, passphrase, passcode,
	// otp, pin, credential(s), cookie, jwt, hmac, csrf, xsrf, or the
	// compounds apikey, accesstoken and the like (X-Api-Key, X-Auth-Token,
	// X-Hub-Signature-256, X-Otp); or by the word key, unless the word
	// before it names data (partition, routing, shard, sort, cache, dedup,
	// idempotency, correlation, request, message, object, primary, lookup,
	// group, range, trace, event): X-Api-Key and
	// Ocp-Apim-Subscription-Key are withheld, X-Partition-Key and X-Author
	// are kept. Words are matched whole, never as parts of words. The
	// idempotency key header is
	// not journaled as a header either: the key is. A withheld header is
	// sent on every attempt of the call that carries it; a resumed
	// operation has none, so PrepareRequest must set the ones it needs.
	// New refuses a list that names Content-Type or Content-Encoding,
	// which the journal always keeps.
	SecretHeaders []string
	// JournalHeaders, if set, is the only list of headers written to the
	// journal besides Content-Type and Content-Encoding, which are always
	// kept (a resumed request needs them for its body to mean what it
	// meant): the opposite of SecretHeaders, for who would rather name
	// what may be kept. Headers are kept by name, so a listed header whose
	// name looks like a credential is kept; Authorization,
	// Proxy-Authorization, Cookie, the key header and SecretHeaders never
	// are, and New refuses a list that names one. Default nil: every
	// header not withheld as SecretHeaders says.
	JournalHeaders []string
	// SecretQueryParams lists URL query parameters whose values are never
	// written to the journal, put in an Error or logged, besides those
	// whose names say they carry a credential by the rule SecretHeaders
	// gives (api_key, apiKey, access_token, token, key, signature, sig,
	// password, secret, client_secret, X-Amz-Signature, ...). Names are
	// matched in any case. User information in the URL (user:password@)
	// is never kept either. The live request is sent as it is; the
	// journal keeps such a parameter in its place with its value left out
	// (?api_key=&amount=5), so a resumed operation goes out without it:
	// PrepareRequest must put it back (r.URL.Query(), Set, and
	// r.URL.RawQuery = q.Encode()). The request's fingerprint is taken
	// over the URL as the journal keeps it. Default nil.
	SecretQueryParams []string
	// PrepareRequest, if set, is called on every attempt's request just
	// before it is sent, resumed operations included: the place to set
	// credentials, which the journal does not keep. Each attempt's request
	// starts from the operation's header, URL and Host as they were before
	// the hook, so what it adds on one attempt (a signature, a timestamp)
	// is not there on the next; it may change them freely, the caller's
	// request is never touched. An error stops the operation (it stays
	// pending) and is returned.
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
	// OnResumed, if set, is called once for each operation Resume is done
	// with, with what Resume will return for it: answered, failed,
	// expired, left pending (the context ended), or unreadable. It is
	// called for an unreadable record at once, from the goroutine that
	// called Resume, and for each other operation from the goroutine
	// that resumed it, as it ends, so calls come concurrently (up to
	// ResumeConcurrency at once, more for operations the context cut
	// short) and in no set order: OnResumed must be safe for concurrent
	// use. Every call has been made when Resume returns. A progress bar
	// counts operations done with it. Default nil.
	OnResumed func(Resumed)

	// Observer, if set, hears of each operation's call, attempts, retries
	// and refusals by the retry budget, for metrics and traces (see
	// Observer; otelidem.NewClientObserver makes one). Default nil: no
	// events, at no cost.
	Observer *Observer
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
	// RetryHint is the server's explicit retry hint, from a header
	// Options.RetryHints names: nil if it gave none.
	RetryHint *bool
	// Retry reports that another attempt was decided on, to follow after
	// Wait. It does not come if the context ends during the wait, the
	// operation is abandoned meanwhile, or PrepareRequest fails on it; the
	// budget gets back what that retry took.
	Retry bool
	Wait  time.Duration
}

// withDefaults returns o with its zero fields set to their defaults, or an
// error naming the first field that is invalid or contradicts another.
func (o Options) withDefaults() (Options, error) {
	o = o.Profile.apply(o)
	switch {
	case o.Header != "" && o.BodyKey != "":
		return o, fmt.Errorf("idem: Options.Header (%q) and Options.BodyKey (%q) are both set; the key goes in one place", o.Header, o.BodyKey)
	case o.BodyKey != "":
		if _, err := bodykey.ParsePath(o.BodyKey); err != nil {
			return o, fmt.Errorf("idem: Options.BodyKey: %w", err)
		}
	case o.Header == "":
		o.Header = "Idempotency-Key"
	}
	if o.Header != "" {
		if !validHeaderName(o.Header) {
			return o, fmt.Errorf("idem: Options.Header %q is not a valid header name", o.Header)
		}
		o.Header = http.CanonicalHeaderKey(o.Header)
		if slices.Contains(reservedHeaders, o.Header) {
			return o, fmt.Errorf("idem: Options.Header is %s, a header HTTP gives another meaning; the key needs a header of its own", o.Header)
		}
	}
	if o.KeyFormat != UUIDv7 && o.KeyFormat != ULID {
		return o, fmt.Errorf("idem: unknown Options.KeyFormat %v", o.KeyFormat)
	}
	switch {
	case o.MaxKeyLen < 0 || o.MaxKeyLen > MaxKeyLen:
		return o, fmt.Errorf("idem: Options.MaxKeyLen is %d; it must be 1 to %d, or zero for %d", o.MaxKeyLen, MaxKeyLen, MaxKeyLen)
	case o.MaxKeyLen == 0:
		o.MaxKeyLen = MaxKeyLen
	}
	if n := o.KeyFormat.keyLen(); n > o.MaxKeyLen {
		return o, fmt.Errorf("idem: Options.KeyFormat %v makes %d-byte keys, longer than Options.MaxKeyLen (%d): choose a format that fits, or raise the limit", o.KeyFormat, n, o.MaxKeyLen)
	}
	var err error
	if o.RetryHints, err = headerNames("RetryHints", o.RetryHints); err != nil {
		return o, err
	}
	if o.RequiredHeaders, err = headerNames("RequiredHeaders", o.RequiredHeaders); err != nil {
		return o, err
	}
	if _, err = headerNames("SecretHeaders", o.SecretHeaders); err != nil {
		return o, err
	}
	if _, err = headerNames("JournalHeaders", o.JournalHeaders); err != nil {
		return o, err
	}
	if _, err = o.SameRequest.compile(); err != nil {
		return o, err
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxAttempts", int64(o.MaxAttempts)},
		{"AttemptTimeout", int64(o.AttemptTimeout)},
		{"BaseDelay", int64(o.BaseDelay)},
		{"MaxDelay", int64(o.MaxDelay)},
		{"MaxRetryAfter", int64(o.MaxRetryAfter)},
		{"KeyRetention", int64(o.KeyRetention)},
		{"MaxRequestBody", o.MaxRequestBody},
		{"MaxResponseBody", o.MaxResponseBody},
		{"MaxJournalBody", int64(o.MaxJournalBody)},
		{"MaxErrorBody", int64(o.MaxErrorBody)},
		{"ResumeConcurrency", int64(o.ResumeConcurrency)},
		{"Budget.RetryCost", int64(o.Budget.RetryCost)},
		{"Budget.TimeoutCost", int64(o.Budget.TimeoutCost)},
		{"Budget.SuccessRefund", int64(o.Budget.SuccessRefund)},
	} {
		if f.v < 0 {
			return o, fmt.Errorf("idem: Options.%s is negative (%v); leave it zero for the default", f.name, f.v)
		}
	}
	set := func(d *time.Duration, v time.Duration) string {
		if *d == 0 {
			*d = v
			return ", the default"
		}
		return ""
	}
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	defInt(&o.MaxAttempts, 5)
	attemptDefault := set(&o.AttemptTimeout, 30*time.Second)
	maxDefault := set(&o.MaxDelay, 10*time.Second)
	baseDefault := set(&o.BaseDelay, min(200*time.Millisecond, o.MaxDelay))
	set(&o.MaxRetryAfter, 60*time.Second)
	retentionDefault := set(&o.KeyRetention, 24*time.Hour)
	if o.BaseDelay > o.MaxDelay {
		return o, fmt.Errorf("idem: Options.BaseDelay (%v%s) is above Options.MaxDelay (%v%s)",
			o.BaseDelay, baseDefault, o.MaxDelay, maxDefault)
	}
	if o.AttemptTimeout >= o.KeyRetention {
		return o, fmt.Errorf("idem: Options.AttemptTimeout (%v%s) is not below Options.KeyRetention (%v%s): no attempt could be sure to arrive while the server keeps the key",
			o.AttemptTimeout, attemptDefault, o.KeyRetention, retentionDefault)
	}
	defInt(&o.MaxJournalBody, 64<<10)
	defInt(&o.MaxErrorBody, 4<<10)
	defInt(&o.ResumeConcurrency, 4)
	if o.ResumeJitter == 0 {
		o.ResumeJitter = 500 * time.Millisecond
	}
	if o.MaxRequestBody == 0 {
		o.MaxRequestBody = 8 << 20
	}
	if o.MaxResponseBody == 0 {
		o.MaxResponseBody = 16 << 20
	}
	capacity := o.Budget.Capacity
	o.Budget = o.Budget.withDefaults()
	if b := o.Budget; b.Capacity >= 0 && b.Capacity < b.RetryCost {
		return o, fmt.Errorf("idem: Options.Budget.Capacity (%d%s) is below Options.Budget.RetryCost (%d): the budget could never pay for a retry; set Capacity to -1 for no budget",
			b.Capacity, map[bool]string{true: ", the default"}[capacity == 0], b.RetryCost)
	}
	if o.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		o.Transport = t
	}
	return o, nil
}

// reservedHeaders are the headers that cannot carry the key: HTTP gives
// them another meaning, or the journal treats them as credentials.
var reservedHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Content-Type",
	"Content-Encoding", "Content-Length", "Transfer-Encoding", "Host"}

// headerNames returns names canonicalised, or an error naming the field
// and the first that is no header name.
func headerNames(field string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := make([]string, len(names))
	for i, n := range names {
		if !validHeaderName(n) {
			return nil, fmt.Errorf("idem: Options.%s has %q, which is not a valid header name", field, n)
		}
		out[i] = http.CanonicalHeaderKey(n)
	}
	return out, nil
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
