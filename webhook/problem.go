// This file holds the problem documents (RFC 9457) the receiver answers a
// refused delivery with, and how they are written.

package webhook

import (
	"encoding/json"
	"net/http"

	"github.com/idemhq/idem/server"
)

// Problem type URIs of the receiver's own refusals. The conditions it
// shares with the idem middleware (a body over the limit, an ID reused
// with another body, an ID in flight, a store that failed) answer with
// the server package's types: [server.ProblemBodyTooLarge],
// [server.ProblemKeyReused], [server.ProblemInFlight] and the others named
// in the package documentation. Every document's texts are fixed: they
// never carry an internal error's text.
const (
	// ProblemMethod: 405 with Allow: POST, the delivery is not a POST.
	ProblemMethod = "https://idem.dev/problems/webhook-method"
	// ProblemHeader: 400, a header of the scheme is missing, empty or
	// malformed ([ErrMissingHeader], [ErrMalformedHeader]).
	ProblemHeader = "https://idem.dev/problems/webhook-header"
	// ProblemSignature: 401, no signature is the body's under the
	// receiver's secret ([ErrSignature]).
	ProblemSignature = "https://idem.dev/problems/webhook-signature"
	// ProblemTimestamp: 401, the delivery's timestamp is outside the
	// tolerance ([ErrTooOld], [ErrTooNew]).
	ProblemTimestamp = "https://idem.dev/problems/webhook-timestamp"
	// ProblemFailed: 500, the receiver's handler failed. Nothing was
	// recorded; the sender's retry runs the handler again.
	ProblemFailed = "https://idem.dev/problems/webhook-failed"
)

type problem struct {
	status     int
	retryAfter string // "": none
	allow      string // "": none
	body       []byte
}

func newProblem(status int, typ, title, detail string) *problem {
	body, err := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{typ, title, status, detail})
	if err != nil {
		panic(err)
	}
	return &problem{status: status, body: body}
}

func (p *problem) with(retryAfter, allow string) *problem {
	p.retryAfter, p.allow = retryAfter, allow
	return p
}

var (
	problemMethod = newProblem(http.StatusMethodNotAllowed, ProblemMethod,
		"Method not allowed", "Webhook deliveries are POST requests.").with("", http.MethodPost)
	problemHeader = newProblem(http.StatusBadRequest, ProblemHeader,
		"Webhook headers invalid",
		"The delivery must carry webhook-id (1 to 255 printable ASCII characters, no comma), webhook-timestamp (whole seconds since the Unix epoch) and webhook-signature.")
	problemSignature = newProblem(http.StatusUnauthorized, ProblemSignature,
		"Webhook signature invalid",
		"No signature in webhook-signature matches the delivery under the endpoint's secret.")
	problemTimestamp = newProblem(http.StatusUnauthorized, ProblemTimestamp,
		"Webhook timestamp out of range",
		"The delivery's webhook-timestamp is too far from the receiver's clock. Sign each delivery attempt at the time it is sent.")
	problemUnreadable = newProblem(http.StatusBadRequest, server.ProblemBodyUnreadable,
		"Request body unreadable", "The delivery's body could not be read. Nothing ran.")
	problemTooLarge = newProblem(http.StatusRequestEntityTooLarge, server.ProblemBodyTooLarge,
		"Request body too large", "The delivery's body is over the receiver's limit. Nothing ran.")
	problemReused = newProblem(http.StatusUnprocessableEntity, server.ProblemKeyReused,
		"Webhook ID reused",
		"A delivery with this webhook-id and a different body was accepted before. Nothing ran; a new message needs a new webhook-id.")
	problemInFlight = newProblem(http.StatusConflict, server.ProblemInFlight,
		"Delivery in progress",
		"An earlier delivery of this message is still being handled. Retry later.").with("1", "")
	problemLeaseLost = newProblem(http.StatusConflict, server.ProblemLeaseLost,
		"Delivery superseded",
		"Another delivery of this message took it over. Retry later.").with("1", "")
	problemFailed = newProblem(http.StatusInternalServerError, ProblemFailed,
		"Webhook handling failed", "The delivery was not handled and nothing was recorded. Retry.")
	problemStore = newProblem(http.StatusServiceUnavailable, server.ProblemStoreUnavailable,
		"Idempotency store unavailable",
		"The delivery could not be checked for repeats, or its outcome not recorded, so it was not accepted. Retry.").with("1", "")
	problemFull = newProblem(http.StatusServiceUnavailable, server.ProblemStoreFull,
		"Idempotency store full", "The receiver has no room to record a new message. Retry later.").with("30", "")
	problemOverloaded = newProblem(http.StatusServiceUnavailable, server.ProblemOverloaded,
		"Receiver busy", "The delivery could not start in time, so it did not run. Retry later.").with("1", "")
)

// write answers with p.
func (p *problem) write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", server.ProblemContentType)
	h.Set("Cache-Control", "no-store")
	if p.retryAfter != "" {
		h.Set("Retry-After", p.retryAfter)
	}
	if p.allow != "" {
		h.Set("Allow", p.allow)
	}
	w.WriteHeader(p.status)
	w.Write(p.body)
}
