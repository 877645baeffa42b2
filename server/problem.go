// This file holds the problem documents (RFC 9457) the middleware answers
// with itself: their type URIs, their fixed texts, and how they are written.

package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/idemhq/idem/internal/key"
)

// Problem type URIs. Every answer the middleware writes itself is an RFC
// 9457 problem document (Content-Type application/problem+json) with the
// members type, title, status and detail, whose texts are fixed: they never
// carry an internal error's text. Each condition has its own type, so a
// client can branch on it.
const (
	// ProblemKeyMissing: 400, the request's method requires an
	// idempotency key and it carried none.
	ProblemKeyMissing = "https://idem.dev/problems/key-missing"
	// ProblemKeyInvalid: 400, the key is empty, longer than 255
	// characters, not printable ASCII, holds a comma, is a malformed
	// quoted string, or is sent in more than one field line.
	ProblemKeyInvalid = "https://idem.dev/problems/key-invalid"
	// ProblemBodyUnreadable: 400, reading the request body failed.
	ProblemBodyUnreadable = "https://idem.dev/problems/body-unreadable"
	// ProblemScopeUnavailable: 401, Options.Scope found no scope for the
	// request (it returned an error, an empty scope, or one that is not
	// valid UTF-8 text: see ValidScope).
	ProblemScopeUnavailable = "https://idem.dev/problems/scope-unavailable"
	// ProblemInFlight: 409 with Retry-After, an earlier request with this
	// key is still running. Retrying later gets its outcome.
	ProblemInFlight = "https://idem.dev/problems/in-flight"
	// ProblemLeaseLost: 409 with Retry-After, this request ran but its
	// claim on the key lapsed and another request took the key over; its
	// outcome was not recorded. Retrying later gets the new owner's.
	ProblemLeaseLost = "https://idem.dev/problems/lease-lost"
	// ProblemBodyTooLarge: 413, the request body is over Options.MaxBody.
	ProblemBodyTooLarge = "https://idem.dev/problems/body-too-large"
	// ProblemKeyReused: 422, the key was first used with a different
	// request (method, path, query or body). It is not a validation error
	// of this request: the client must use a new key for a new operation.
	ProblemKeyReused = key.ReusedProblemType
	// ProblemHandlerFailed: 500, the handler panicked. Nothing was
	// recorded; a retry with the same key runs the handler again.
	ProblemHandlerFailed = "https://idem.dev/problems/handler-failed"
	// ProblemStoreUnavailable: 503 with Retry-After 1, the idempotency
	// store failed (or a unit of work's commit failed, undoing the work).
	// A retry with the same key is safe.
	ProblemStoreUnavailable = "https://idem.dev/problems/store-unavailable"
	// ProblemStoreFull: 503 with Retry-After 30, the idempotency store has
	// no room for a new key ([ErrStoreFull]): it keeps every key for its
	// retention rather than forget one that a retry may still send.
	// Nothing ran; a retry with the same key is safe, and gets in once
	// recorded keys expire and make room.
	ProblemStoreFull = "https://idem.dev/problems/store-full"
	// ProblemResponseNotKept: the body of a replay whose first answer was
	// too large for the store to keep ([ErrResponseTooLarge]). The status
	// is the first answer's: the request ran, once, and is not run again;
	// only its answer is gone.
	ProblemResponseNotKept = "https://idem.dev/problems/response-not-kept"
	// ProblemOverloaded: 503 with Retry-After, the request's work could
	// not start within Options.StartTimeout (Options.MaxConcurrent
	// requests were running, or the store's unit of work did not begin in
	// time). Its key was released and nothing ran; a retry with the same
	// key is safe.
	ProblemOverloaded = "https://idem.dev/problems/overloaded"
)

// ProblemContentType is the Content-Type of the middleware's problem
// documents.
const ProblemContentType = "application/problem+json"

// Retry-After values the middleware sends. soon goes with 409 and most
// 503s: the first request is probably done, or the store back, by then.
// full goes with ProblemStoreFull: room comes back only as recorded keys
// expire, so a client that comes back at once would be refused again.
const (
	retryAfterSoon = "1"
	retryAfterFull = "30"
)

// problem is one prepared problem document.
type problem struct {
	status     int
	retryAfter string // "": none
	body       []byte
}

func newProblem(status int, typ, title, detail string, retryAfter string) *problem {
	body, err := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{typ, title, status, detail})
	if err != nil {
		panic(err)
	}
	return &problem{status: status, retryAfter: retryAfter, body: body}
}

var (
	problemBodyUnreadable = newProblem(http.StatusBadRequest, ProblemBodyUnreadable,
		"Request body unreadable",
		"The request body could not be read. Nothing ran; retry with the same key.", "")
	problemBodyCut = newProblem(http.StatusRequestEntityTooLarge, ProblemBodyTooLarge,
		"Request body too large",
		"The request body is over the server's limit.", "")
	problemScopeUnavailable = newProblem(http.StatusUnauthorized, ProblemScopeUnavailable,
		"Scope unavailable",
		"The request is not attributed to a client, so its idempotency key cannot be used.", "")
	problemInFlight = newProblem(http.StatusConflict, ProblemInFlight,
		"Request in progress",
		"An earlier request with this idempotency key is still running. Retry later to get its outcome.", retryAfterSoon)
	problemLeaseLost = newProblem(http.StatusConflict, ProblemLeaseLost,
		"Request superseded",
		"Another request with this idempotency key took it over. Retry later to get its outcome.", retryAfterSoon)
	problemKeyReused = newProblem(http.StatusUnprocessableEntity, ProblemKeyReused,
		"Idempotency key reused",
		"This idempotency key was used with a different request. Use a new key for a new operation.", "")
	problemHandlerFailed = newProblem(http.StatusInternalServerError, ProblemHandlerFailed,
		"Request failed",
		"The request failed and nothing was recorded. Retry with the same key.", "")
	problemCommitFailed = newProblem(http.StatusServiceUnavailable, ProblemStoreUnavailable,
		"Outcome not recorded",
		"The request's work was undone, or, if it was recorded after all, a retry replays it. Retry with the same key.", retryAfterSoon)
	problemStoreUnavailable = newProblem(http.StatusServiceUnavailable, ProblemStoreUnavailable,
		"Idempotency store unavailable",
		"The request could not be checked for repeats, so it did not run. Retry with the same key.", retryAfterSoon)
	problemStoreFull = newProblem(http.StatusServiceUnavailable, ProblemStoreFull,
		"Idempotency store full",
		"The server has no room to record a new idempotency key, so the request did not run. Retry later with the same key.", retryAfterFull)
	problemOverloaded = newProblem(http.StatusServiceUnavailable, ProblemOverloaded,
		"Server busy",
		"The request could not start in time, so it did not run. Retry later with the same key.", retryAfterSoon)
)

// limitProblems are the problem documents whose texts name the
// configuration: the key's header field and the body limit. They are
// built once per Middleware, and are as fixed as the others.
type limitProblems struct {
	keyMissing, keyInvalid, bodyTooLarge *problem
}

// newLimitProblems returns the documents for the header field named header
// and bodies up to maxBody bytes.
func newLimitProblems(header string, maxBody int64) limitProblems {
	return limitProblems{
		keyMissing: newProblem(http.StatusBadRequest, ProblemKeyMissing,
			"Idempotency key missing",
			"This request must carry an "+header+" header.", ""),
		keyInvalid: newProblem(http.StatusBadRequest, ProblemKeyInvalid,
			"Idempotency key invalid",
			"The "+header+" header must hold 1 to "+strconv.Itoa(MaxKeyLen)+
				" printable ASCII characters, without a comma, sent bare or as a quoted string, in one field.", ""),
		bodyTooLarge: newProblem(http.StatusRequestEntityTooLarge, ProblemBodyTooLarge,
			"Request body too large",
			"The request body is over "+byteSize(maxBody)+", the limit for idempotent requests.", ""),
	}
}

// byteSize spells n bytes for a person: in GiB, MiB or KiB when it is a
// whole number of them, in bytes otherwise (a rounded figure would
// misstate a limit).
func byteSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// write answers with p. Headers the handler chain set before are kept,
// except those that describe a body.
func (p *problem) write(w http.ResponseWriter) {
	h := w.Header()
	h.Del("Content-Encoding")
	h.Del("Content-Length")
	h.Set("Content-Type", ProblemContentType)
	h.Set("Cache-Control", "no-store")
	if p.retryAfter != "" {
		h.Set("Retry-After", p.retryAfter)
	}
	w.WriteHeader(p.status)
	w.Write(p.body)
}

// notKept is the outcome recorded in place of an answer with status that
// the store could not keep for its size.
func notKept(status int) StoredResponse {
	p := newProblem(status, ProblemResponseNotKept, "Response not kept",
		"The request ran and was answered, but its response was too large to keep. It is not run again; look up its result another way.", "")
	return StoredResponse{Status: status, Header: http.Header{"Content-Type": {ProblemContentType}}, Body: p.body}
}
