package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// A Client sends state-changing requests so that sending again never means
// doing twice: one idempotency key per operation, the same key and bytes on
// every attempt, and, with a journal, across crashes of this process.
//
// A Client is safe for concurrent use by multiple goroutines. With a
// journal, calls with the same key run one at a time: the second waits and
// is answered from the journal. Without one they run side by side, and the
// server tells them apart (409 while the first runs, then a replay).
type Client struct {
	opts    Options
	hc      *http.Client
	journal *Journal
	budget  *budget
	secret  map[string]bool // canonical names of headers never journaled
	keys    keyLocks
	prepare func(*http.Request) error // Options.PrepareRequest, errors wrapped
	retrier *retryablehttp.Client
	rt      http.RoundTripper // Options.Transport with the attempt timeout
}

// New returns a Client configured by opts. It fails only on invalid options.
func New(opts Options) (*Client, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	rt := attemptTransport{o.Transport, o.AttemptTimeout}
	c := &Client{
		rt:      rt,
		opts:    o,
		journal: o.Journal,
		budget:  newBudget(o.Budget),
		secret:  map[string]bool{"Authorization": true, "Cookie": true, "Proxy-Authorization": true, o.Header: true},
		hc: &http.Client{
			Transport:     rt,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	if prep := o.PrepareRequest; prep != nil {
		c.prepare = func(r *http.Request) error {
			if err := prep(r); err != nil {
				return fmt.Errorf("idem: PrepareRequest: %w", err)
			}
			return nil
		}
	}
	for _, h := range o.SecretHeaders {
		c.secret[http.CanonicalHeaderKey(h)] = true
	}
	c.retrier = c.newRetrier()
	return c, nil
}

// Response is the final answer to an operation.
type Response struct {
	StatusCode int
	Header     http.Header
	// Body is the whole response body (or, when FromJournal and Truncated,
	// the part the journal kept).
	Body []byte
	// Key is the operation's idempotency key.
	Key string
	// Attempts is how many times the request was sent by this call.
	Attempts int
	// Replayed reports that the server answered from its record of an
	// earlier attempt (Idempotent-Replayed: true).
	Replayed bool
	// FromJournal reports that the answer came from the local journal,
	// without the network.
	FromJournal bool
	Truncated   bool
}

// Do sends req as one idempotent operation and returns its final answer.
//
// The key is req's idempotency key header if it has one (bare or quoted;
// an invalid one is refused with ErrInvalidKey), or a fresh one. The body is
// read once and sent byte-identical on every attempt; Do closes req.Body.
// With a journal, the operation is on disk before its first attempt, and a
// key the journal already knows is answered from it: a completed or failed
// operation with the same method, URL and body returns its recorded
// response without the network; a different request is refused with
// ErrKeyReused; a pending one continues with the same key and bytes.
//
// Transport errors and 408, 409, 425, 429, 500, 502, 503 and 504 are
// retried; other responses are final, as is any response the server marks
// Idempotent-Replayed. A final 4xx is returned as a Response with a nil
// error, except 422, which means the key was reused for a different request
// and returns an *Error wrapping ErrKeyReused. A 401, 403 or 407 that is not
// a replay is final too (Resume leaves it alone), but it is no answer to the
// operation: the server refused the request before running it, and an
// earlier attempt may have run. A call with the same key, once the
// credentials are right, continues the operation instead of being answered
// from the journal.
//
// Without a final answer (retries or budget exhausted, deadline too near,
// context cancelled) Do returns an *Error; the operation stays pending under
// the same key, to be continued by Do or Resume. A nil context is not
// possible with http.Request; a cancelled one stops Do at once.
func (c *Client) Do(req *http.Request) (*Response, error) {
	return c.doRequest(req, "")
}

// DoNamed is Do under the key bound to name in the journal (see NamedKey),
// so one logical operation keeps its key across restarts whichever process
// sends it. Any key header on req is ignored.
func (c *Client) DoNamed(name string, req *http.Request) (*Response, error) {
	if err := validName(name); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, (&Operation{Method: req.Method, u: req.URL}).error(err, 0)
	}
	return c.doRequest(req, name)
}

func (c *Client) doRequest(req *http.Request, name string) (*Response, error) {
	body, err := c.readBody(req)
	cl := &call{c: c} // one allocation for the call and its operation
	op := &cl.own
	op.Name, op.Method, op.u = name, req.Method, req.URL
	if req.Host != req.URL.Host {
		op.Host = req.Host // an override; http.NewRequest copies the URL's host
	}
	if op.Method == "" {
		op.Method = http.MethodGet
	}
	switch {
	case err != nil:
	case name != "":
		op.Key, err = c.NamedKey(name)
	default:
		if v := req.Header.Get(c.opts.Header); v != "" {
			op.Key, err = ParseKey(v)
		} else {
			op.Key, op.minted = c.opts.KeyFormat.mint(), true
		}
	}
	if err != nil {
		return nil, op.error(err, 0)
	}
	op.Body = body
	return c.do(req.Context(), cl, op, req.Header)
}

// NamedKey returns the idempotency key bound to an application name, such
// as "payout/2026-12-25/417". The first call mints a key and stores the
// binding durably in the journal; every later call, in this process or
// after a restart, returns the same key. It needs a journal
// (ErrNoJournal). The binding is purged with its operation.
func (c *Client) NamedKey(name string) (string, error) {
	if c.journal == nil {
		return "", ErrNoJournal
	}
	if err := validName(name); err != nil {
		return "", err
	}
	return c.journal.namedKey(name, c.opts.KeyFormat.mint)
}

func validName(name string) error {
	if name == "" || len(name) > 1024 {
		return fmt.Errorf("idem: operation name must be 1 to 1024 bytes, not %d", len(name))
	}
	return nil
}

func (c *Client) readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	b, err := readAtMost(req.Body, req.ContentLength, c.opts.MaxRequestBody)
	if errors.Is(err, ErrBodyTooLarge) {
		return nil, fmt.Errorf("%w: request body over %d bytes", ErrBodyTooLarge, c.opts.MaxRequestBody)
	}
	if err != nil {
		return nil, fmt.Errorf("idem: reading request body: %w", err)
	}
	return b, nil
}

// readAtMost reads r to its end, refusing more than limit bytes with
// ErrBodyTooLarge. size is the expected length if known (else -1): a body
// of known size is read into one exact allocation.
func readAtMost(r io.Reader, size, limit int64) ([]byte, error) {
	if size < 0 || size > limit {
		b, err := io.ReadAll(io.LimitReader(r, limit+1))
		if err == nil && int64(len(b)) > limit {
			err = ErrBodyTooLarge
		}
		return b, err
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	// The body must end where its length said.
	var one [1]byte
	if n, err := r.Read(one[:]); n > 0 {
		rest, err := readAtMost(io.MultiReader(bytes.NewReader(one[:n]), r), -1, limit-size)
		if err != nil {
			return nil, err
		}
		return append(b, rest...), nil
	} else if err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}

// do runs op to a final answer, journaling it if there is a journal. header
// is the live request's header (credentials included) or, for a resumed
// operation, the journaled one.
func (c *Client) do(ctx context.Context, cl *call, op *Operation, header http.Header) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, op.error(err, 0) // nothing journaled, nothing sent
	}
	if c.journal != nil {
		// Even a key minted for this call is locked: once journaled, a
		// Resume running meanwhile sees it pending.
		held, err := c.keys.lock(ctx, op.Key)
		if err != nil {
			return nil, op.error(err, 0)
		}
		defer c.keys.unlock(op.Key, held)
		now := time.Now()
		op.Fingerprint = fingerprint(op.Method, op.url(), header.Get("Content-Type"), op.Body)
		op.State = Pending
		op.CreatedAt, op.UpdatedAt = now, now
		op.ExpiresAt = now.Add(c.opts.KeyRetention)
		op.Header = c.safeHeader(header)
		prev, err := c.journal.begin(op)
		if err != nil {
			return nil, op.error(err, 0)
		}
		if prev != nil {
			if !op.sameRequest(prev.Fingerprint) {
				return nil, op.error(ErrKeyReused, 0)
			}
			// A refusal is continued by a call of the caller's (cl is set),
			// not by Resume (cl is nil), which leaves it alone.
			if prev.State != Pending && !(refused(prev) && cl != nil) {
				return c.fromJournal(prev)
			}
			prev.u = op.u // the live URL, with any user information the journal left out
			op = prev
			if c.pastRetention(op, time.Now().Add(c.opts.AttemptTimeout)) { // as before a retry
				return nil, c.expire(op)
			}
			if op.State != Pending { // a refusal, continued: pending again, on disk before it is sent
				op.State, op.Result, op.UpdatedAt = Pending, nil, time.Now()
				if err := c.journal.updateNow(op); err != nil {
					return nil, op.error(err, 0)
				}
			}
		}
	}
	return c.send(ctx, cl, op, header)
}

// fromJournal answers a repeat of a finished operation from its record.
func (c *Client) fromJournal(op *Operation) (*Response, error) {
	if op.State == Expired {
		return nil, op.error(ErrExpired, 0)
	}
	r := op.Result
	if r == nil {
		return nil, op.error(fmt.Errorf("%w: %s: %s operation %q has no result", ErrJournalCorrupt, c.journal.path, op.State, op.Key), 0)
	}
	return c.answer(op, &Response{ // copies: the record may be shared with other callers
		StatusCode:  r.StatusCode,
		Header:      r.Header.Clone(),
		Body:        bytes.Clone(r.Body),
		Key:         op.Key,
		Replayed:    r.Replayed,
		FromJournal: true,
		Truncated:   r.Truncated,
	})
}

// answer returns a final response as Do's result: a 422 means the server
// saw the key with a different request, which is ErrKeyReused.
func (c *Client) answer(op *Operation, r *Response) (*Response, error) {
	if r.StatusCode != http.StatusUnprocessableEntity {
		return r, nil
	}
	e := op.error(ErrKeyReused, r.Attempts)
	e.StatusCode, e.Header, e.Body = r.StatusCode, r.Header, c.errorBody(r.Body)
	if !r.Truncated {
		e.whole = r.Body // nil: the journal kept only part of it
	} else {
		e.partial = true
	}
	return nil, e
}

// pastRetention reports whether the server may have forgotten op's key by
// now: past the retention op was journaled with, or past the client's
// current KeyRetention, if that is shorter.
//
// It compares wall-clock times: a monotonic reading stops while a machine
// sleeps or a VM is paused, but the server's retention does not.
func (c *Client) pastRetention(op *Operation, now time.Time) bool {
	now = now.Round(0)
	return now.After(op.ExpiresAt.Round(0)) || now.After(op.CreatedAt.Round(0).Add(c.opts.KeyRetention))
}

func (c *Client) expire(op *Operation) error {
	op.State, op.UpdatedAt = Expired, time.Now()
	if err := c.journal.updateNow(op); err != nil { // Resume must not undo it
		return op.error(err, 0)
	}
	if c.opts.Logger != nil {
		c.opts.Logger.Warn("idem: operation expired before it got an answer; reconcile it",
			"key", op.Key, "name", op.Name, "method", op.Method, "url", op.url(), "created", op.CreatedAt)
	}
	return op.error(ErrExpired, 0)
}

// safeHeader returns a copy of h without the headers that must not be
// journaled.
func (c *Client) safeHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if !c.secret[http.CanonicalHeaderKey(k)] {
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}

func (c *Client) errorBody(b []byte) []byte {
	if len(b) > c.opts.MaxErrorBody {
		b = b[:c.opts.MaxErrorBody]
	}
	return bytes.Clone(b)
}

func (op *Operation) error(err error, attempts int) *Error {
	return &Error{Method: op.Method, URL: op.url(), Key: op.Key, Attempts: attempts, Err: err}
}

// keyLocks serialises calls with the same key within one process.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// lock waits until no other call holds key, then holds it; the caller
// passes the returned channel to unlock.
func (l *keyLocks) lock(ctx context.Context, key string) (chan struct{}, error) {
	for {
		l.mu.Lock()
		held, busy := l.m[key]
		if !busy {
			if l.m == nil {
				l.m = make(map[string]chan struct{})
			}
			ch := make(chan struct{})
			l.m[key] = ch
			l.mu.Unlock()
			return ch, nil
		}
		l.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (l *keyLocks) unlock(key string, ch chan struct{}) {
	l.mu.Lock()
	delete(l.m, key)
	l.mu.Unlock()
	close(ch)
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
