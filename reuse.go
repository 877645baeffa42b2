// This file holds the recognition of key reuse: whether a final answer is
// the server saying the key was first used for a different request.

package idem

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/idemhq/idem/internal/canonjson"
	"github.com/idemhq/idem/internal/key"
)

// maxReuseBody bounds how much of a body is parsed to recognise key reuse.
// Problem documents and error objects are small; a larger body is not one.
const maxReuseBody = 64 << 10

// keyReused reports whether a final answer says the key was reused with a
// different request: the built-in signals (see reusedBySignal), or, failing
// those, Options.IsKeyReused.
func (c *Client) keyReused(r *Response) bool {
	if r.StatusCode < 400 {
		return false
	}
	if reusedBySignal(r.StatusCode, r.Header, r.Body) {
		return true
	}
	return c.opts.IsKeyReused != nil && c.opts.IsKeyReused(r)
}

// reusedBySignal reports whether a response of status 400 or more says, in
// one of the ways servers are known to, that its idempotency key was first
// used for a different request:
//
//   - a JSON body whose "type" is idem's own problem type for key reuse
//     (the server package's ProblemKeyReused), whatever the status;
//   - a 422 whose JSON body (a problem document, RFC 9457) has a "type",
//     "title" or "code" naming idempotency, as the IETF draft's example of
//     key reuse does (draft-ietf-httpapi-idempotency-key-header, "Error
//     Scenarios": 422, title "Idempotency-Key is already used"), or whose
//     Link header points to documentation about idempotency with
//     rel="describedby", the draft's other form;
//   - a JSON body with an error object whose "type" is
//     "idempotency_error", as Stripe answers a key reused with different
//     parameters (400).
//
// Any other answer, a 422 that is a validation error among them, is not.
// Only a JSON content type (application/json or *+json) is parsed, and
// only up to maxReuseBody bytes.
func reusedBySignal(status int, h http.Header, body []byte) bool {
	if status == http.StatusUnprocessableEntity && linksToIdempotency(h.Values("Link")) {
		return true
	}
	if len(body) == 0 || len(body) > maxReuseBody || !canonjson.IsJSON(h.Get("Content-Type")) {
		return false
	}
	var doc struct {
		Type  any `json:"type"`
		Title any `json:"title"`
		Code  any `json:"code"`
		Error any `json:"error"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return false
	}
	if doc.Type == key.ReusedProblemType {
		return true
	}
	if status == http.StatusUnprocessableEntity &&
		(namesIdempotency(doc.Type) || namesIdempotency(doc.Title) || namesIdempotency(doc.Code)) {
		return true
	}
	if e, ok := doc.Error.(map[string]any); ok && e["type"] == "idempotency_error" {
		return true
	}
	return false
}

// namesIdempotency reports whether v is a string that mentions idempotency
// ("idempotency", "Idempotency-Key", "idempotent").
func namesIdempotency(v any) bool {
	s, ok := v.(string)
	return ok && strings.Contains(strings.ToLower(s), "idempoten")
}

// linksToIdempotency reports whether Link field values name, with
// rel="describedby", a target that mentions idempotency.
func linksToIdempotency(values []string) bool {
	for _, v := range values {
		for _, link := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(link, ";")
			if !ok || !namesIdempotency(target) {
				continue
			}
			for _, p := range strings.Split(params, ";") {
				name, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(name), "rel") &&
					strings.Contains(" "+strings.ToLower(strings.Trim(strings.TrimSpace(val), `"`))+" ", " describedby ") {
					return true
				}
			}
		}
	}
	return false
}
