package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"runtime/debug"
)

// Middleware returns net/http middleware that runs each request with an
// idempotency key at most once per (scope, key) and answers its repeats
// from store. It panics if store is nil or opts is invalid (neither or both
// of Scope and SingleTenant, a negative duration or size): a
// misconfiguration found at start-up, not per request.
//
// For a request whose method is one of Options.Methods (default POST and
// PATCH) it:
//
//   - answers 400 if the key is missing (unless Options.Optional) or
//     malformed, 401 if Options.Scope finds no scope, 413 if the body is
//     over Options.MaxBody;
//   - claims the key with the request's [Fingerprint]. A store failure is
//     answered 503 with Retry-After and logged; nothing runs;
//   - on the first request, runs the handler with a buffering
//     ResponseWriter, records the outcome, then answers it. The whole
//     response is held in memory and stored, so endpoints behind the
//     middleware should answer with bounded bodies; Flush sends nothing
//     and the connection cannot be hijacked. The handler sees the header
//     fields the chain around the middleware set, as without it;
//   - on a repeat with the same fingerprint, replays the recorded status,
//     headers and body with "Idempotent-Replayed: true"; while the first
//     still runs, answers 409 with Retry-After or waits (Options.Wait);
//   - on a repeat with a different fingerprint, answers 422.
//
// Outcomes with status 2xx, 3xx and 4xx are recorded, except 408, 425 and
// 429, which are released together with 5xx (see Options.StoreServerErrors)
// and panics, so that a retry runs the handler again. A panic is answered
// 500 with [ProblemHandlerFailed]; a panic with http.ErrAbortHandler is
// re-raised after the release.
//
// The handler's request context is cancelled when the client goes away,
// as usual, and with cause [ErrLeaseLost] when the lease renewal finds the
// key taken over (the outcome is then not recorded and the client gets
// 409) or has not got through for a whole lease (the key may be another
// worker's by now; the fenced completion decides). Recording the outcome
// is bounded by one lease too: a store that does not answer by then does
// not hold the request.
// A handler that returns without answering at all (no status, no header
// field, no body) once its context is cancelled is taken to have given up:
// its key is released, so a retry runs it. A handler that did its work
// and answers 200 with no body says so with WriteHeader.
// If the store implements [Transactor], the handler runs with the context
// from BeginWork and a recorded outcome is committed with the work.
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
	var local *flights
	if cfg.wait > 0 {
		local = newFlights()
	}
	rn := newRenewer(cfg.renewEvery)
	return func(next http.Handler) http.Handler {
		return &handler{cfg: cfg, store: store, next: next, flights: local, renewer: rn}
	}
}

type handler struct {
	cfg     config
	store   Store
	next    http.Handler
	flights *flights // nil unless Options.Wait > 0
	renewer *renewer
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cfg.handles(r.Method) {
		h.next.ServeHTTP(w, r)
		return
	}
	vals := r.Header[h.cfg.header]
	if len(vals) == 0 {
		if h.cfg.optional {
			h.next.ServeHTTP(w, r)
			return
		}
		problemKeyMissing.write(w)
		return
	}
	if len(vals) > 1 {
		problemKeyInvalid.write(w)
		return
	}
	key, err := ParseKey(vals[0])
	if err != nil {
		problemKeyInvalid.write(w)
		return
	}
	scope, ok := h.scope(r)
	if !ok {
		problemScopeUnavailable.write(w)
		return
	}
	body, p := h.readBody(r)
	if p != nil {
		p.write(w)
		return
	}
	k := Key{Scope: scope, Key: key}
	fp := Fingerprint(r, body)
	c, err := h.store.Claim(r.Context(), k, fp, h.cfg.lease)
	if err != nil {
		h.storeFailed(w, r, k, "claim", err)
		return
	}
	if !c.Acquired && h.cfg.wait > 0 && !c.Record.Completed && c.Record.Fingerprint == fp {
		c, err = await(r.Context(), h.store, k, fp, h.cfg.lease, h.cfg.wait, h.flights)
		if err != nil {
			h.storeFailed(w, r, k, "claim", err)
			return
		}
	}
	switch {
	case c.Acquired:
		h.run(w, r, k, fp, c.Token, body)
	case c.Record.Fingerprint != fp:
		problemKeyReused.write(w)
	case c.Record.Completed:
		replay(w, c.Record.Response)
	default:
		problemInFlight.write(w)
	}
}

// scope returns the request's scope, or false if it has none.
func (h *handler) scope(r *http.Request) (string, bool) {
	if h.cfg.scope == nil {
		return "", true
	}
	s, err := h.cfg.scope(r)
	if err != nil || s == "" {
		if h.cfg.log != nil {
			h.cfg.log.Debug("idem: no scope for request", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		return "", false
	}
	return s, true
}

// readBody reads the whole request body, up to the limit.
func (h *handler) readBody(r *http.Request) ([]byte, *problem) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	limit := h.cfg.maxBody
	if r.ContentLength > limit {
		return nil, problemBodyTooLarge
	}
	if r.ContentLength >= 0 {
		body := make([]byte, r.ContentLength)
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
		return nil, problemBodyTooLarge
	}
	return body, nil
}

// unreadable is the answer to a body that failed to read with err: 413 if
// an outer http.MaxBytesReader cut it off (a retry would fail the same
// way), 400 otherwise.
func unreadable(err error) *problem {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return problemBodyTooLarge
	}
	return problemBodyUnreadable
}

// run runs the handler for a key acquired with fingerprint fp under token, records or
// releases its outcome and answers.
func (h *handler) run(w http.ResponseWriter, r *http.Request, k Key, fp, token string, body []byte) {
	var fl *flight
	if h.flights != nil {
		fl = h.flights.start(k, fp)
		defer h.flights.finish(k, fl, nil)
	}
	ex := new(exchange)
	a, rec := &ex.attempt, &ex.rec
	ctx, err := a.start(r.Context(), h.store, k, token, h.cfg.lease, h.cfg.renewEvery, h.cfg.log, h.renewer)
	if err != nil {
		h.storeFailed(w, r, k, "begin work", err)
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
	ex.body.Reset(body)
	client := r.Context() // the client's own: is it still there?
	r = r.WithContext(ctx)
	r.Body, r.ContentLength = &ex.body, int64(len(body))

	returned := false
	defer func() {
		if !returned {
			h.abandon(w, r, a, recover())
		}
	}()
	h.next.ServeHTTP(rec, r)
	returned = true

	if ctx.Err() != nil && !rec.wroteHeader && rec.body.Len() == 0 && sameHeader(rec.header, outer) {
		// The handler gave up on a cancelled request (the client left,
		// or the lease was lost) without answering at all: no status,
		// no header, no body. There is no outcome to record: a 200 with
		// no body would tell every retry the work was done. (A handler
		// that did its work and answers 200 with no body says so with
		// WriteHeader, or sets a header.)
		h.cancelled(w, a)
		return
	}
	resp := rec.response()
	var stored *Response
	if !h.cfg.storable(resp.Status) {
		err = a.release()
	} else {
		stored = &Response{Status: resp.Status, Header: storedHeader(changedHeader(resp.Header, outer)), Body: resp.Body}
		if err = a.complete(*stored, h.cfg.retention); err != nil {
			stored = nil
		}
	}
	if fl != nil {
		h.flights.finish(k, fl, stored)
	}
	switch {
	case err == nil:
		sendFirst(w, resp)
	case errors.Is(err, ErrLeaseLost):
		if h.cfg.log != nil {
			h.cfg.log.Warn("idem: outcome not recorded, key taken over", "scope", k.Scope, "key", k.Key)
		}
		problemLeaseLost.write(w)
	case a.work != nil && h.cfg.storable(resp.Status):
		// The commit failed: the work was undone, or, if the commit went
		// through after all and only its answer was lost, the record is
		// there. Either way a retry with the key gets it right.
		if h.cfg.log != nil && client.Err() == nil {
			h.cfg.log.Error("idem: commit failed", "scope", k.Scope, "key", k.Key, "err", err)
		}
		problemCommitFailed.write(w)
	default:
		// The work happened but recording (or releasing) it failed. The
		// client gets the handler's answer: a 503 would invite a retry
		// that runs the work again once the lease lapses.
		if h.cfg.log != nil {
			msg := "idem: outcome not recorded"
			if !h.cfg.storable(resp.Status) {
				msg = "idem: release failed"
			}
			h.cfg.log.Error(msg, "scope", k.Scope, "key", k.Key, "status", resp.Status, "err", err)
		}
		sendFirst(w, resp)
	}
}

// cancelled releases the key of a handler that returned without
// answering a cancelled request, and answers 500 (nothing recorded, retry
// with the same key), or 409 if the lease was lost.
func (h *handler) cancelled(w http.ResponseWriter, a *attempt) {
	err := a.release()
	switch {
	case errors.Is(err, ErrLeaseLost):
		problemLeaseLost.write(w)
		return
	case err != nil && h.cfg.log != nil:
		h.cfg.log.Error("idem: release after a cancelled request failed", "scope", a.key.Scope, "key", a.key.Key, "err", err)
	}
	problemHandlerFailed.write(w)
}

// abandon handles a handler that panicked (v != nil) or called
// runtime.Goexit (v == nil): it releases the key so a retry runs again,
// then answers 500, or re-raises http.ErrAbortHandler.
func (h *handler) abandon(w http.ResponseWriter, r *http.Request, a *attempt, v any) {
	err := a.release()
	if err != nil && !errors.Is(err, ErrLeaseLost) && h.cfg.log != nil {
		h.cfg.log.Error("idem: release after panic failed", "scope", a.key.Scope, "key", a.key.Key, "err", err)
	}
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	if h.cfg.log != nil {
		h.cfg.log.Error("idem: handler panicked", "method", r.Method, "path", r.URL.Path,
			"scope", a.key.Scope, "key", a.key.Key, "panic", v, "stack", string(debug.Stack()))
	}
	problemHandlerFailed.write(w)
}

// storeFailed logs a store failure and answers 503.
func (h *handler) storeFailed(w http.ResponseWriter, r *http.Request, k Key, op string, err error) {
	if h.cfg.log != nil && r.Context().Err() == nil {
		h.cfg.log.Error("idem: store failed", "op", op, "scope", k.Scope, "key", k.Key, "err", err)
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

// exchange is the state of one first execution, allocated once.
type exchange struct {
	attempt
	rec  recorder
	body bodyReader
}

// bodyReader replays the buffered request body to the handler.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }
