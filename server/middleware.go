// This file holds Middleware: reading a request's key, scope and body,
// claiming the key, and running, recording and answering a first request.

package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sync"
)

// Middleware returns net/http middleware that runs each request with an
// idempotency key at most once per (scope, key) and answers its repeats
// from store. It panics if store is nil or opts is invalid (neither or both
// of Scope and SingleTenant, a negative duration or size): a
// misconfiguration found at start-up, not per request. The problem
// documents it answers with are built then too.
//
// For a request whose method is one of Options.Methods (default POST and
// PATCH) it:
//
//   - reads the key from the Options.Header field, or, with
//     Options.BodyKey, from a JSON body field, claiming it with the
//     fingerprint of the body without that field;
//   - answers 400 if the key is missing (unless Options.Optional) or
//     malformed, 401 if Options.Scope finds no scope, 413 if the body is
//     over Options.MaxBody;
//   - claims the key with the request's [Fingerprint] (or its fingerprint
//     under Options.Fingerprint's rule: a Func that refuses the body is
//     answered 400 with [ProblemBodyRefused]). A store failure is
//     answered 503 with Retry-After and logged; nothing runs. A full
//     store ([ErrStoreFull]) is answered 503 with [ProblemStoreFull] and
//     a longer Retry-After, and logged as a warning without the key;
//   - on the first request, starts the work within Options.StartTimeout
//     (a slot under Options.MaxConcurrent, the store's unit of work, or,
//     with a [WorkClaimer], the claim that begins it) or releases the key
//     and answers 503 with [ProblemOverloaded] and Retry-After, the
//     handler not run; then runs the handler with a buffering
//     ResponseWriter, records the outcome, then answers it. The whole
//     response is held in memory and stored, so endpoints behind the
//     middleware should answer with bounded bodies; Flush sends nothing
//     and the connection cannot be hijacked. The handler sees the header
//     fields the chain around the middleware set, as without it;
//   - on a repeat with the same fingerprint, replays the recorded status,
//     headers (those Options.ReplayHeaders allows, as Options.OnReplay
//     leaves them) and body with "Idempotent-Replayed: true"; while the
//     first still runs, answers 409 with Retry-After or waits
//     (Options.Wait);
//   - on a repeat with a different fingerprint, answers 422.
//
// Options.Routes gives routes options of their own (methods, fingerprint
// rule, retention, wait, body limit, replayed headers), found by the
// request's ServeMux pattern, whether the middleware wraps the mux or
// each of its routes; everything else, the registry of running keys and
// the bound on concurrent work included, the routes share.
//
// Outcomes with status 2xx, 3xx and 4xx are recorded, except 408, 425 and
// 429, which are released together with 5xx (see Options.StoreServerErrors)
// and panics, so that a retry runs the handler again. A panic is answered
// 500 with [ProblemHandlerFailed]; a panic with http.ErrAbortHandler is
// re-raised after the release.
//
// Once a first request holds its key, its work runs to its end whatever
// the client does: the handler's request context keeps the request's
// values but not the connection's cancellation, so a client that times
// out, a proxy's read timeout or a dropped connection never aborts a
// provider call or a statement half done (the outcome is recorded and the
// client's retry collects it: 409 while it runs, or a wait, then the
// replay). The work is bounded on the server's side instead: its context
// is cancelled with cause [ErrWorkTimeout] after Options.WorkTimeout
// (default 2 minutes), with [ErrShutdown] when Options.Shutdown is closed,
// and with cause [ErrLeaseLost] when the lease renewal finds the key taken
// over (the outcome is then not recorded and the client gets 409) or has
// not got through for a whole lease (the key may be another worker's by
// now; the fenced completion decides). A handler that would rather stop
// when the client leaves watches [ClientContext]. The claim itself is not
// cancelled by the client either (a claim that landed is run); it is
// bounded by one lease. Recording the outcome is bounded by one lease
// too: a store that does not answer by then does not hold the request.
// [KeyFrom] gives the handler the key it holds, from which the idem client
// derives the keys of its calls to other services (idem.Step).
// A handler that returns without answering at all (no status, no header
// field, no body) once its context is cancelled is taken to have given up:
// its key is released, so a retry runs it. A handler that did its work
// and answers 200 with no body says so with WriteHeader.
// If the store implements [WorkClaimer], keys are claimed with ClaimWork,
// the handler runs with the context it returns, and a recorded outcome is
// committed with the work; otherwise, if the store implements
// [Transactor], the handler runs with the context from BeginWork and a
// recorded outcome is committed with the work.
//
// The returned middleware and the handlers it wraps are safe for
// concurrent use; handlers wrapped by one call share the local registry of
// running keys that Options.Wait uses.
func Middleware(store Store, opts Options) func(http.Handler) http.Handler {
	if store == nil {
		panic("idem/server: Middleware needs a Store")
	}
	cfg, err := opts.config()
	if err != nil {
		panic(err)
	}
	cl := newClaimer(store)
	cl.lease, cl.renewEvery, cl.wait, cl.startLimit = cfg.lease, cfg.renewEvery, cfg.wait, cfg.startLimit
	cl.workLimit, cl.shutdown = cfg.workLimit, cfg.shutdown
	cl.slots, cl.log, cl.renewer, cl.obs = newSlots(cfg.maxConcurrent), cfg.log, newRenewer(cfg.renewEvery), cfg.obs
	cl.starts = newDeadlines(cfg.startLimit, ErrOverloaded)
	if cfg.workLimit > 0 {
		cl.limits = newDeadlines(cfg.workLimit, ErrWorkTimeout)
	}
	routes := make(map[string]*routeConfig, len(opts.Routes))
	for pattern, ro := range opts.Routes {
		rcfg, err := opts.forRoute(ro).config()
		if err != nil {
			panic(fmt.Errorf("idem/server: Options.Routes[%q]: %w", pattern, err))
		}
		routes[pattern] = &routeConfig{cfg: rcfg, claims: cl}
	}
	waits := cfg.wait > 0
	for _, rt := range routes {
		waits = waits || rt.cfg.wait > 0
	}
	if waits {
		cl.local = newFlights() // one registry: a key may be repeated on another route
	}
	base := &routeConfig{cfg: cfg, claims: cl}
	for _, rt := range routes {
		rt.claims.local, rt.claims.wait = cl.local, rt.cfg.wait
	}
	return func(next http.Handler) http.Handler {
		h := &handler{routeConfig: base, next: next}
		if len(routes) > 0 {
			h.routes = make(map[string]*handler, len(routes))
			for pattern, rt := range routes {
				h.routes[pattern] = &handler{routeConfig: rt, next: next}
			}
			h.mux, _ = next.(*http.ServeMux)
		}
		return h
	}
}

// routeConfig is the configuration one set of routes runs with: the Options,
// or a RouteOptions over them. Its claimer shares the middleware's
// slots, renewer and local registry of running keys.
type routeConfig struct {
	cfg    config
	claims claimer
}

type handler struct {
	*routeConfig
	next   http.Handler
	routes map[string]*handler // Options.Routes, by pattern; nil: none
	mux    *http.ServeMux      // next, if it is one: it names a request's pattern
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.routes != nil {
		pattern := r.Pattern
		if pattern == "" && h.mux != nil {
			_, pattern = h.mux.Handler(r)
		}
		if rh, ok := h.routes[pattern]; ok {
			h = rh
		}
	}
	if !h.cfg.handles(r.Method) {
		h.next.ServeHTTP(w, r)
		return
	}
	if h.cfg.bodyKey != nil {
		h.serveBodyKeyed(w, r)
		return
	}
	vals := r.Header[h.cfg.header]
	if len(vals) == 0 {
		if h.cfg.optional {
			h.next.ServeHTTP(w, r)
			return
		}
		h.refuse(w, r, h.cfg.problems.keyMissing, OutcomeKeyMissing)
		return
	}
	if len(vals) > 1 {
		h.refuse(w, r, h.cfg.problems.keyInvalid, OutcomeKeyInvalid)
		return
	}
	key, err := ParseKey(vals[0])
	if err != nil {
		h.refuse(w, r, h.cfg.problems.keyInvalid, OutcomeKeyInvalid)
		return
	}
	scope, ok := h.scope(r)
	if !ok {
		h.refuse(w, r, problemScopeUnavailable, OutcomeScopeUnavailable)
		return
	}
	var buf *bodyBuf
	if r.ContentLength > 0 && r.ContentLength <= min(maxPooledBody, h.cfg.maxBody) && r.Body != nil && r.Body != http.NoBody {
		buf = bodyBufs.Get().(*bodyBuf)
	}
	body, ok := h.bodyOrRefuse(w, r, buf)
	if !ok {
		buf.put()
		return
	}
	h.serveKeyed(w, r, Key{Scope: scope, Key: key}, body, body, buf)
}

// serveKeyed claims k for r, whose body is body and whose fingerprint
// covers fpBody, and runs, replays or refuses it. If body is read into
// buf, buf is put back once r is answered (see bodyBuf).
func (h *handler) serveKeyed(w http.ResponseWriter, r *http.Request, k Key, body, fpBody []byte, buf *bodyBuf) {
	fp, err := h.cfg.fp.fingerprint(r, fpBody)
	if err != nil {
		if h.cfg.log != nil {
			h.cfg.log.Debug("idem: body refused by the fingerprint rule", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		h.refuse(w, r, problemBodyRefused, OutcomeBodyRefused)
		buf.put()
		return
	}
	// The claim's context is an allocation of its own, and the first
	// execution's state another (run): a replay, the commoner request
	// after a failure, does not clear and collect the larger one.
	base := newWorkBase(r.Context(), k)
	ans, v, err := h.claims.claim(base, k, fp)
	switch {
	case errors.Is(err, ErrOverloaded):
		// ClaimWork did not claim and begin the work in time: refused
		// like work that did not start (finish), nothing held.
		h.overloaded(w, r, k)
	case err != nil:
		h.observe(r, storeResult(err))
		h.storeFailed(w, r, k, "claim", err)
	case v == claimAcquired:
		h.run(w, r, base, k, fp, ans, body, buf)
	default:
		h.answerClaim(w, r, &ans.Claim, v, fp, nil)
	}
	// The handler has returned (run empties the reader it read the body
	// through): the storage is the next request's. (A panic that leaves
	// skips this: buf is dropped.)
	buf.put()
}

// answerClaim answers r, which claimed its key with fingerprint fp and
// got c, not acquired, classified as v: a replay, a refusal for key reuse,
// or in flight. If the claim was a deferred one that a acquired and the
// store then refused (see WorkClaimer), a's end is reported with the same
// outcome.
func (h *handler) answerClaim(w http.ResponseWriter, r *http.Request, c *Claim, v verdict, fp string, a *attempt) {
	res := v.outcome()
	var p *problem
	switch {
	case v == claimReused && h.cfg.fp.onlyCheckDiffers(c.Record.Fingerprint, fp):
		p = problemCheckFailed
	case v == claimReused:
		p = problemKeyReused
	case v != claimReplay:
		p = problemInFlight
	}
	if a != nil {
		a.observeEnd(res)
	}
	if p != nil {
		h.refuse(w, r, p, res)
		return
	}
	h.observe(r, res)
	h.replay(w, r, &c.Record)
}

// maxPooledBody is the largest request body read into a pooled buffer.
const maxPooledBody = 64 << 10

// bodyBuf is a pooled buffer for a request body whose length is known: the
// body is read for the fingerprint and handed to the handler through a
// reader, and no store, observer or stored response keeps it, so its
// storage is reused once the request is answered.
type bodyBuf struct{ b []byte }

var bodyBufs = sync.Pool{New: func() any { return new(bodyBuf) }}

// take returns n bytes of the buffer's storage, grown if needed.
func (buf *bodyBuf) take(n int) []byte {
	if cap(buf.b) < n {
		buf.b = make([]byte, n, max(n, 512))
	}
	return buf.b[:n]
}

// put gives buf back to the pool. A nil buf does nothing.
func (buf *bodyBuf) put() {
	if buf != nil {
		bodyBufs.Put(buf)
	}
}

// observe reports r, answered with res, to the observer.
func (h *handler) observe(r *http.Request, res Outcome) {
	h.cfg.obs.request(r.Context(), r.Method, r.Pattern, res)
}

// refuse answers r with p, reported as res.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, p *problem, res Outcome) {
	h.observe(r, res)
	p.write(w)
}

// scope returns the request's scope, or false if it has none.
func (h *handler) scope(r *http.Request) (string, bool) {
	if h.cfg.scope == nil {
		return "", true
	}
	s, err := h.cfg.scope(r)
	if err == nil && s != "" && !ValidScope(s) {
		err = ErrInvalidScope
	}
	if err != nil || s == "" {
		if h.cfg.log != nil {
			h.cfg.log.Debug("idem: no scope for request", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		return "", false
	}
	return s, true
}

// bodyOrRefuse reads r's body, or answers r with the problem and reports
// false.
func (h *handler) bodyOrRefuse(w http.ResponseWriter, r *http.Request, buf *bodyBuf) ([]byte, bool) {
	body, p := h.readBody(r, buf)
	if p != nil {
		res := OutcomeBodyUnreadable
		if p.status == http.StatusRequestEntityTooLarge {
			res = OutcomeBodyTooLarge
		}
		h.refuse(w, r, p, res)
		return nil, false
	}
	return body, true
}

// readBody reads the whole request body, up to the limit, into buf's
// storage if buf is not nil and the body's length is known.
func (h *handler) readBody(r *http.Request, buf *bodyBuf) ([]byte, *problem) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	limit := h.cfg.maxBody
	if r.ContentLength > limit {
		return nil, h.cfg.problems.bodyTooLarge
	}
	if r.ContentLength >= 0 {
		var body []byte
		if buf != nil {
			body = buf.take(int(r.ContentLength))
		} else {
			body = make([]byte, r.ContentLength)
		}
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, unreadable(err)
		}
		return body, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	switch {
	case err != nil:
		return nil, unreadable(err)
	case int64(len(body)) > limit:
		return nil, h.cfg.problems.bodyTooLarge
	}
	return body, nil
}

// unreadable is the answer to a body that failed to read with err: 413 if
// an outer http.MaxBytesReader cut it off (a retry would fail the same
// way; the limit is the outer one, not Options.MaxBody), 400 otherwise.
func unreadable(err error) *problem {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return problemBodyCut
	}
	return problemBodyUnreadable
}

// firstEnd is how a first execution ended, classified once by run and
// answered by finish.
type firstEnd struct {
	how    endHow
	err    error          // why the work did not start (notStarted)
	resp   StoredResponse // the handler's answer (answered)
	record bool           // resp's outcome is recorded, as stored
	stored StoredResponse
}

// run runs the handler for k, acquired with fingerprint fp in ans by the
// claim made from base, with body (read into buf, or nil), then records
// or releases its outcome and answers. The claim ends in finish, deferred
// before anything else can fail.
func (h *handler) run(w http.ResponseWriter, r *http.Request, base *workBase, k Key, fp string, ans answer, body []byte, buf *bodyBuf) {
	var fl *flight
	if h.claims.local != nil {
		fl = h.claims.local.start(k, fp)
	}
	ex := new(exchange)
	a, rec, end := &ex.attempt, &ex.rec, &ex.end
	defer func() {
		// The handler has returned, and may not read its body after
		// (net/http's rule): one that does reads nothing, never what the
		// pooled storage holds next (serveKeyed), and storage a writer
		// still holds is left to it, not reused.
		if !ex.body.end() && buf != nil {
			buf.b = nil
		}
		h.finish(w, r, a, fp, fl, end, recover())
	}()
	ctx, err := h.claims.start(a, base, k, ans)
	if err != nil {
		end.how, end.err = notStarted, err
		return
	}
	// The handler sees, and may change or delete, the headers the chain
	// around the middleware set, as it would without it; only what it
	// adds or changes is recorded.
	outer := w.Header()
	if len(outer) == 0 {
		rec.header = make(http.Header, 4)
	} else {
		rec.header = outer.Clone()
	}
	ex.body.reset(body)
	// r stays the client's: finish asks if it is still there. The
	// handler's copy lives in ex (WithContext's own does not escape).
	ex.req = *r.WithContext(ctx)
	hr := &ex.req
	hr.Body, hr.ContentLength = &ex.body, int64(len(body))

	h.next.ServeHTTP(rec, hr)

	if (ctx.Err() != nil || r.Context().Err() != nil) && !rec.wroteHeader && rec.body.Len() == 0 && sameHeader(rec.header, outer) {
		// The handler gave up on a cancelled request (the lease was
		// lost, the work timed out, or the handler watched the client
		// leave through ClientContext) without answering at all: no
		// status, no header, no body. There is no outcome to record: a
		// 200 with no body would tell every retry the work was done. (A
		// handler that did its work and answers 200 with no body says so
		// with WriteHeader, or sets a header.)
		end.how = cancelled
		return
	}
	end.how, end.resp = answered, rec.response()
	if h.cfg.storable(end.resp.Status) {
		end.record = true
		end.stored = StoredResponse{Status: end.resp.Status, Header: h.cfg.replay.stored(changedHeader(end.resp.Header, outer)), Body: end.resp.Body}
	}
}

// finish ends the claim of a first execution that ended as e says (v is
// what a panic raised), and answers as the table of a claim's end (endOf)
// says: the only way out of run.
func (h *handler) finish(w http.ResponseWriter, r *http.Request, a *attempt, fp string, fl *flight, e *firstEnd, v any) {
	res, err := a.end(outcome{record: e.record, resp: e.stored, retention: h.cfg.retention})
	if fl != nil {
		var stored *StoredResponse
		if res == recorded {
			stored = &e.stored
		}
		h.claims.local.finish(a.key, fl, stored)
	}
	if res == refused && (e.how != abandoned || v != nil && v != http.ErrAbortHandler) {
		// The store's deferred claim was refused: the handler's answer
		// (or its panic) came from work that never held the key, and
		// nothing of it committed. The request is answered as its claim.
		c, v := a.refusedAnswer(fp)
		h.answerClaim(w, r, c, v, fp, a)
		return
	}
	end := endOf(e.how, e.err, e.record, res)
	a.observeEnd(end.outcome)
	h.observe(r, end.outcome)
	k, log := a.key, h.cfg.log
	if end.reply != replyCommitFailed || r.Context().Err() == nil {
		// (A failed commit is not worth an error once the client has
		// gone: its cancellation is the likely cause.)
		end.logNote(log, k, err, "status", e.resp.Status)
	}
	switch end.reply {
	case replyPanic:
		if v == nil { // runtime.Goexit
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		if log != nil {
			log.Error("idem: handler panicked", "method", r.Method, "path", r.URL.Path,
				"scope", k.Scope, "key", k.Key, "panic", v, "stack", string(debug.Stack()))
		}
		problemHandlerFailed.write(w)
	case replyOverloaded:
		h.refuseLate(w, k)
	case replyLeaseLost:
		problemLeaseLost.write(w)
	case replyStoreFailed:
		h.storeFailed(w, r, k, "begin work", e.err)
	case replyHandlerFailed:
		problemHandlerFailed.write(w)
	case replyCommitFailed:
		problemCommitFailed.write(w)
	default: // replyAnswer, replyUnrecorded
		sendFirst(w, e.resp)
	}
}

// overloaded answers r, whose key k could not be claimed in time, as
// work that did not start in time.
func (h *handler) overloaded(w http.ResponseWriter, r *http.Request, k Key) {
	h.observe(r, OutcomeOverloaded)
	h.refuseLate(w, k)
}

// refuseLate logs and answers the request for k whose work did not start
// in time (Options.StartTimeout): 503 with ProblemOverloaded.
func (h *handler) refuseLate(w http.ResponseWriter, k Key) {
	if log := h.cfg.log; log != nil {
		log.Warn("idem: work did not start in time, refused", "scope", k.Scope, "key", k.Key)
	}
	problemOverloaded.write(w)
}

// storeFailed logs a store failure and answers 503: a full store
// ([ErrStoreFull]) with ProblemStoreFull and a warning that names no key
// (it refuses every new key alike, and says so often), any other failure
// with ProblemStoreUnavailable and an error.
func (h *handler) storeFailed(w http.ResponseWriter, r *http.Request, k Key, op string, err error) {
	log := h.cfg.log
	if errors.Is(err, ErrStoreFull) {
		if log != nil {
			log.Warn("idem: store full, request refused", "op", op, "method", r.Method, "route", route(r.Pattern), "err", err)
		}
		problemStoreFull.write(w)
		return
	}
	if log != nil && r.Context().Err() == nil {
		log.Error("idem: store failed", "op", op, "scope", k.Scope, "key", k.Key, "err", err)
	}
	problemStoreUnavailable.write(w)
}

// storable reports whether an outcome with status is recorded and
// replayed, rather than released so a retry runs again.
func (c *config) storable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return false
	}
	return status < 500 || c.storeServerErrors
}

// exchange is the state of one first execution, allocated once: the
// work's attempt, the handler's request and its recorded answer.
type exchange struct {
	attempt
	end  firstEnd
	rec  recorder
	body bodyReader
	req  http.Request // the handler's
}

// bodyReader replays the buffered request body to the handler. It is
// safe for concurrent use, as net/http's request bodies are: a handler
// may hand it to a goroutine that reads it after the response (an
// asynchronous copy, or a transport that writes a proxied body in the
// background), and once the handler's run ends (end) such a reader reads
// nothing, never the storage's next request. WriteTo lends the storage
// to the writer (io.Writer must not keep it past Write); storage still
// lent when the run ends is not reused.
type bodyReader struct {
	mu   sync.Mutex
	s    []byte
	i    int
	lent int // WriteTo calls in a Write of s
	gen  uint32
}

// reset makes b read s from its start.
func (b *bodyReader) reset(s []byte) {
	b.mu.Lock()
	b.s, b.i = s, 0
	b.gen++
	b.mu.Unlock()
}

// end empties b: every later read reads nothing. It reports whether the
// storage b read from is free for reuse: no WriteTo still lends it.
func (b *bodyReader) end() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s, b.i = nil, 0
	b.gen++
	return b.lent == 0
}

func (b *bodyReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.i >= len(b.s) {
		return 0, io.EOF
	}
	n := copy(p, b.s[b.i:])
	b.i += n
	return n, nil
}

// WriteTo writes the rest of the body to w in one Write, as
// bytes.Reader's does, so that io.Copy needs no buffer of its own.
func (b *bodyReader) WriteTo(w io.Writer) (int64, error) {
	b.mu.Lock()
	rest, from, gen := b.s[b.i:], b.i, b.gen
	if len(rest) == 0 {
		b.mu.Unlock()
		return 0, nil
	}
	b.i = len(b.s) // concurrent reads find it read
	b.lent++
	b.mu.Unlock()
	n, err := w.Write(rest)
	if n < 0 || n > len(rest) {
		panic("idem/server: invalid Write count")
	}
	b.mu.Lock()
	b.lent--
	if b.gen == gen {
		b.i = from + n
	}
	b.mu.Unlock()
	if n != len(rest) && err == nil {
		err = io.ErrShortWrite
	}
	return int64(n), err
}

func (*bodyReader) Close() error { return nil }
