// This file holds Client: New, Do, DoNamed and the driver that takes an
// operation through its states (see state.go) around the retry engine.

package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemhq/idem/internal/bodykey"
)

// A Client sends state-changing requests so that sending again never means
// doing twice: one idempotency key per operation, the same key and bytes on
// every attempt, and, with a journal, across crashes of this process.
//
// A Client is safe for concurrent use by multiple goroutines. With a
// journal, calls with the same key run one at a time, whichever Client of
// the journal makes them: the second waits and is answered from the
// journal. Without one they run side by side, and the server tells them
// apart (409 while the first runs, then a replay).
type Client struct {
	opts    Options
	hc      *http.Client
	journal *Journal
	budget  *budget
	secrets *secretRule               // what of a request and its answer the journal keeps
	prepare func(*http.Request) error // Options.PrepareRequest, errors wrapped
	rt      http.RoundTripper         // Options.Transport with the attempt timeout
	bodyKey bodykey.Path              // Options.BodyKey, parsed; nil for a header key
}

// New returns a Client configured by opts. It fails on invalid or
// contradictory options, with an error that names the field: a header name
// that is no token, a key Header HTTP gives another meaning
// (Authorization, Content-Type, ...), both Header and BodyKey set, a
// BodyKey that is no path, a MaxKeyLen above MaxKeyLen or below the length
// of the keys KeyFormat mints, an unknown KeyFormat, a negative size,
// count or duration, BaseDelay above MaxDelay, AttemptTimeout not below
// KeyRetention (no attempt could be sure to reach the server while it
// keeps the key), a Budget whose Capacity cannot pay for one retry, or
// SecretHeaders and JournalHeaders that contradict each other or the
// journal's rules. Defaults are applied before the comparisons.
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
	if c.secrets, err = newSecretRule(&o); err != nil {
		return nil, err
	}
	if o.BodyKey != "" {
		c.bodyKey, _ = bodykey.ParsePath(o.BodyKey) // withDefaults checked it
	}
	return c, nil
}

// Response is the final answer to an operation.
type Response struct {
	StatusCode int
	Header     http.Header
	// Body is the whole response body, or, when Truncated, the part the
	// journal kept.
	Body []byte
	// Key is the operation's idempotency key.
	Key string
	// Attempts is how many times the request was sent by this call.
	Attempts int
	// Replayed reports that the server answered from its record of an
	// earlier attempt (Idempotent-Replayed: true, or what
	// Options.IsReplayed recognises).
	Replayed bool
	// RetryHint is the server's explicit retry hint on this answer, from a
	// header Options.RetryHints names: nil if it gave none. A final answer
	// with a hint of true is one retries ran out on.
	RetryHint *bool
	// FromJournal reports that the answer came from the local journal,
	// without the network.
	FromJournal bool
	// Truncated reports, for an answer from the journal, that the journal
	// kept only the first Options.MaxJournalBody bytes of the body, so Body
	// is not the whole body the server sent. It is false for an answer
	// from the network, whose Body is always whole.
	Truncated bool
}

// Do sends req as one idempotent operation and returns its final answer.
//
// The key is req's idempotency key header if it has one (bare or quoted;
// an invalid one, or one longer than Options.MaxKeyLen, is refused with
// ErrInvalidKey), or a fresh one. With Options.BodyKey, or a request
// context from WithBodyKey, the key is the body's field instead, or a
// fresh one written into it. The body is
// read once and sent byte-identical on every attempt; Do closes req.Body.
// With a journal, the operation is on disk before its first attempt, and a
// key the journal already knows is answered from it: a completed or failed
// operation with the same method, URL and body returns its recorded
// response without the network; a different request is refused with
// ErrKeyReused; a pending one continues with the same key and bytes; an
// expired one is ErrExpired and an abandoned one ErrAbandoned, without the
// network. State gives every move an operation can make.
//
// Transport errors and 408, 409, 425, 429, 500, 502, 503 and 504 are
// retried; other responses are final, as is any response the server marks
// Idempotent-Replayed. A final 4xx is returned as a Response with a nil
// error, a 422 validation error included, unless the server says the key
// was first used for a different request (see Options.IsKeyReused for the
// signals idem recognises): that returns an *Error wrapping ErrKeyReused
// that carries the response (Options.OnConflict may answer it instead, as
// it may retries exhausted on 409). A 401, 403 or 407 that is not a replay is
// final too, and journaled as Refused (Resume leaves it alone), but it is
// no answer to the operation: the server refused the request before
// running it, and an earlier attempt may have run. A call with the same
// key, once the credentials are right, continues the operation instead of
// being answered from the journal.
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
// sends it. Any key header on req is ignored. With Options.BodyKey the key
// is written into the body's field; a body whose field already holds
// another key is refused.
func (c *Client) DoNamed(name string, req *http.Request) (*Response, error) {
	if err := validName(name); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, (&Operation{Method: req.Method, u: req.URL, secrets: c.secrets}).error(err, 0)
	}
	return c.doRequest(req, name)
}

func (c *Client) doRequest(req *http.Request, name string) (*Response, error) {
	body, err := c.readBody(req)
	cl := &call{c: c, origin: fromCaller} // one allocation for the call and its operation
	op := &cl.own
	op.Name, op.Method, op.u, op.secrets = name, req.Method, req.URL, c.secrets
	if req.Host != req.URL.Host {
		op.Host = req.Host // an override; http.NewRequest copies the URL's host
	}
	if op.Method == "" {
		op.Method = http.MethodGet
	}
	path, field, pathErr := c.bodyKeyFor(req.Context())
	switch {
	case err != nil:
	case pathErr != nil:
		err = pathErr
	case path != nil:
		body, err = c.keyInBodyAt(req, op, name, body, path, field)
	case name != "":
		op.Key, err = c.NamedKey(name)
	default:
		// Options.Header is canonical (withDefaults), as Header.Get would
		// make it: the map is read without canonicalizing the name again.
		if vs := req.Header[c.opts.Header]; len(vs) > 0 && vs[0] != "" {
			op.Key, err = ParseKey(vs[0])
		} else {
			op.Key, op.minted = c.newKey(req)
		}
	}
	if err == nil {
		err = c.checkKeyLen(op.Key)
	}
	if err != nil {
		return nil, op.error(err, 0)
	}
	op.Body = body
	resp, err := c.do(req.Context(), cl, op, req.Header)
	return c.onConflict(req.Context(), resp, err)
}

// NamedKey returns the idempotency key bound to an application name, such
// as "payout/2026-12-25/417". The first call mints a key and stores the
// binding durably in the journal; every later call, in this process or
// after a restart, returns the same key. It needs a journal
// (ErrNoJournal). The binding is purged with its operation.
//
// A binding is checksummed. NamedKey fails with an error wrapping
// ErrJournalCorrupt, and mints no key, if the name's binding was damaged,
// if it names a record made for another name, or if a record made for the
// name exists while its binding is lost: a new key would send that
// operation a second time. DoNamed refuses the same way. Resume still
// finishes such an operation under its own key.
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

// do runs op to a final answer, journaling it if there is a journal,
// along the transitions of state.go. header is the live request's header
// (credentials included) or, for a resumed operation, the journaled one.
// Options.Observer hears of the call's start and end.
func (c *Client) do(ctx context.Context, cl *call, op *Operation, header http.Header) (*Response, error) {
	obs := c.opts.Observer
	if obs == nil {
		return c.run(ctx, cl, op, header)
	}
	resumed := cl.origin == fromResume
	cl.rpc = op.rpcMethod()
	ctx, began := obs.start(ctx, op, cl.rpc, resumed)
	resp, err := c.run(ctx, cl, op, header)
	obs.end(ctx, op, cl.rpc, resumed, began, resp, err)
	return resp, err
}

// run is do without the observer.
func (c *Client) run(ctx context.Context, cl *call, op *Operation, header http.Header) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, op.error(err, 0) // nothing journaled, nothing sent
	}
	if c.journal == nil {
		return c.conclude(cl, c.send(ctx, cl, op, header))
	}
	// Even a key minted for this call is locked: once journaled, a Resume
	// running meanwhile sees it pending. The lock is the journal's, so
	// that two Clients of one journal never send one key at once, and
	// Abandon comes only between attempts (see keyLocks).
	lock, err := c.journal.locks.lock(ctx, op.Key)
	if err != nil {
		return nil, op.error(err, 0)
	}
	cl.lock, cl.gated = lock, true
	defer func() {
		cl.closeGate()
		c.journal.locks.unlock(op.Key, lock)
	}()
	now := time.Now()
	if cl.origin == fromCaller {
		c.fingerprintAt(c.bodyKeyPath(ctx), op, header.Get("Content-Type"))
	} // else the record's, taken from the live request, which the journaled header may not match
	op.State = stateNone
	op.CreatedAt, op.UpdatedAt = now, now
	op.ExpiresAt = now.Add(c.opts.KeyRetention)
	op.Header = c.secrets.safeHeader(header)
	first, _ := transition(stateNone, evCall, cl.origin)
	var prev *Operation
	if first.write == noWrite {
		prev, err = c.journal.get(op.Key) // Resume: the record must still be there
	} else {
		op.State = first.to
		prev, err = c.journal.begin(op) // the durable write, unless the key is known
	}
	if err != nil {
		return nil, op.error(err, 0)
	}
	if prev == nil && first.then == actNoOperation {
		// Abandoned and purged since Resume listed it: sending it would
		// make it new again, with a new retention.
		return nil, op.error(fmt.Errorf("%w: %q in %s", ErrNoOperation, op.Key, c.journal.path), 0)
	}
	if prev != nil {
		if !c.sameRequest(op, prev) {
			return nil, op.error(ErrKeyReused, 0)
		}
		prev.u, prev.secrets = op.u, op.secrets // the live URL, with the credentials the journal left out
		op = prev
		s, err := c.advance(op, evCall, cl.origin)
		if err != nil {
			return nil, op.error(err, 0)
		}
		switch s.then {
		case actJournal:
			return c.fromJournal(op)
		case actExpired:
			return nil, op.error(ErrExpired, 0)
		case actAbandoned:
			return nil, op.error(ErrAbandoned, 0)
		}
	}
	return c.conclude(cl, c.send(ctx, cl, op, header))
}

// conclude journals how cl's attempts ended, along the transitions of
// state.go, and returns Do's answer: the journal is written here, never
// in the loop that made the attempts (send.go).
func (c *Client) conclude(cl *call, s sent) (*Response, error) {
	op := cl.op
	if s.resp == nil {
		var moved *movedError
		switch {
		case c.journal == nil:
		case errors.As(s.err.Err, &moved):
			// The journal no longer holds it pending: nothing to write.
		case errors.Is(s.err.Err, ErrExpired):
			c.expire(op, cl.origin)
		default:
			c.advance(op, evGiveUp, cl.origin) // no write: the operation stays pending
		}
		return nil, s.err
	}
	reused := c.keyReused(s.resp)
	if c.journal != nil {
		c.record(op, s.resp, reused, cl.origin)
	}
	return c.answer(op, s.resp, reused)
}

// advance moves op along transition(op.State, ev, o): it sets the new
// state and writes the record as the transition says, durably or lazily,
// compare-and-set: only over a record still in op's state (see
// Journal.move). It returns the step taken, and for a record that moved
// meanwhile an error matching ErrAbandoned, ErrExpired or ErrNoOperation.
func (c *Client) advance(op *Operation, ev event, o origin) (step, error) {
	from := op.State
	s, ok := transition(from, ev, o)
	if !ok {
		return s, fmt.Errorf("idem: internal error: a %s operation cannot take the event %q", from, ev)
	}
	if s.write == noWrite {
		return s, nil
	}
	op.State, op.UpdatedAt = s.to, time.Now()
	if s.to == Pending {
		op.Response = nil // a refusal, continued
	}
	return s, c.journal.move(op, from, s.write == durableWrite)
}

// fromJournal answers a repeat of a finished operation from its record.
func (c *Client) fromJournal(op *Operation) (*Response, error) {
	r := op.Response
	if r == nil {
		return nil, op.error(fmt.Errorf("%w: %s: %s operation %q has no result", ErrJournalCorrupt, c.journal.path, op.State, op.Key), 0)
	}
	return c.answer(op, &Response{ // copies: the record may be shared with other callers
		StatusCode:  r.StatusCode,
		Header:      r.Header.Clone(),
		Body:        bytes.Clone(r.Body),
		Key:         op.Key,
		Replayed:    r.Replayed,
		RetryHint:   retryHint(r.Header, c.opts.RetryHints),
		FromJournal: true,
		Truncated:   r.Truncated,
	}, r.KeyReused)
}

// answer returns a final response as Do's result, or, when the server
// said the key was reused for a different request, an *Error wrapping
// ErrKeyReused that carries the response.
func (c *Client) answer(op *Operation, r *Response, reused bool) (*Response, error) {
	if !reused {
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

// record journals a final answer: the transition for its status, lazy for
// an answer (if it is lost, the server replays it), durable for a refusal
// (the server stores none: lost, Resume would resend it).
func (c *Client) record(op *Operation, r *Response, reused bool, o origin) {
	body, truncated := r.Body, false
	if len(body) > c.opts.MaxJournalBody {
		body, truncated = body[:c.opts.MaxJournalBody], true
	}
	body = bytes.Clone(body) // the caller owns r.Body and may change it
	h := c.secrets.safeResponseHeader(r.Header)
	op.Attempts = r.Attempts
	op.Response = &StoredResponse{StatusCode: r.StatusCode, Header: h, Body: body, Truncated: truncated,
		Replayed: r.Replayed, KeyReused: reused}
	if _, err := c.advance(op, answerEvent(r.StatusCode, r.Replayed), o); err != nil && c.opts.Logger != nil {
		c.opts.Logger.Warn("idem: could not journal an outcome; the operation will be resumed and replayed",
			"key", op.Key, "error", err)
	}
}

// expire marks op Expired, durably (Resume must not undo it), and returns
// ErrExpired.
func (c *Client) expire(op *Operation, o origin) error {
	if _, err := c.advance(op, evExpire, o); err != nil {
		return op.error(err, 0)
	}
	if c.opts.Logger != nil {
		c.opts.Logger.Warn("idem: operation expired before it got an answer; reconcile it",
			"key", op.Key, "name", op.Name, "method", op.Method, "url", op.url(), "created", op.CreatedAt)
	}
	return op.error(ErrExpired, 0)
}

func (c *Client) errorBody(b []byte) []byte {
	if len(b) > c.opts.MaxErrorBody {
		b = b[:c.opts.MaxErrorBody]
	}
	return bytes.Clone(b)
}
