// This file holds the middleware's reading of a key carried in a JSON
// body field (Options.BodyKey) instead of a header.

package server

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/idemhq/idem/internal/bodykey"
	"github.com/idemhq/idem/internal/key"
)

// bodyKeyProblems returns the documents for a missing and a malformed key
// carried in the body field p.
func bodyKeyProblems(p bodykey.Path) (missing, invalid *problem) {
	missing = newProblem(http.StatusBadRequest, ProblemKeyMissing,
		"Idempotency key missing",
		"This request must carry a JSON object body with an idempotency key in its "+p.String()+" field.", "")
	invalid = newProblem(http.StatusBadRequest, ProblemKeyInvalid,
		"Idempotency key invalid",
		"The body's "+p.String()+" field must appear once, in a JSON object body, and hold a string of 1 to "+
			strconv.Itoa(MaxKeyLen)+" printable ASCII characters.", "")
	return missing, invalid
}

// serveBodyKeyed handles a request whose key is in its body: it finds the
// scope, reads the body and the key in it, and claims the key with the
// fingerprint of the body without the key's field. The handler gets the
// body as it was sent.
func (h *handler) serveBodyKeyed(w http.ResponseWriter, r *http.Request) {
	scope, ok := h.scope(r)
	if !ok {
		h.refuse(w, r, problemScopeUnavailable, OutcomeScopeUnavailable)
		return
	}
	body, ok := h.bodyOrRefuse(w, r, nil) // not pooled: the handler may get it without a claim
	if !ok {
		return
	}
	k, found, err := bodykey.Get(body, h.cfg.bodyKey)
	switch {
	case err != nil:
		h.refuse(w, r, h.cfg.problems.keyInvalid, OutcomeKeyInvalid)
		return
	case !found && h.cfg.optional:
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		h.next.ServeHTTP(w, r)
		return
	case !found:
		h.refuse(w, r, h.cfg.problems.keyMissing, OutcomeKeyMissing)
		return
	case key.Validate(k) != key.OK:
		h.refuse(w, r, h.cfg.problems.keyInvalid, OutcomeKeyInvalid)
		return
	}
	stripped, _ := bodykey.Without(body, h.cfg.bodyKey)
	h.serveKeyed(w, r, Key{Scope: scope, Key: k}, body, stripped, nil)
}
