// This file holds the recognition of key reuse: whether a final answer is
// the server saying the key was first used for a different request; and
// the recovery from a conflict over a key (Options.OnConflict).

package idem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

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
//   - a 422 whose JSON body (a problem document, RFC 9457) both names
//     idempotency and says reuse, in its "type", "title" or "code", as the
//     IETF draft's example of key reuse does
//     (draft-ietf-httpapi-idempotency-key-header, "Error Scenarios": 422,
//     title "Idempotency-Key is already used"); or whose Link header points
//     to documentation about idempotency with rel="describedby", the
//     draft's other form;
//   - a JSON body with an error object whose "type" is
//     "idempotency_error", as Stripe answers a key reused with different
//     parameters (400).
//
// A 422 that only mentions the key is not reuse: "Idempotency-Key header
// is required" and "Idempotency-Key must be at most 64 characters" are
// validation errors about the key, and sending the request again with
// another body would not change them. So a field says reuse only with one
// of reuseWords, and a URI (a "type", a Link target) counts by its last
// path segment alone: a validation error's type documented under
// /idempotency/errors/amount-invalid names no idempotency.
//
// Any other answer, a 422 that is a validation error among them, is not.
// Only a JSON content type (application/json, *+json, or text/json, which
// some servers still send) is parsed, only up to maxReuseBody bytes, and a
// UTF-8 byte order mark before the document is skipped.
func reusedBySignal(status int, h http.Header, body []byte) bool {
	if status == http.StatusUnprocessableEntity && linksToIdempotency(h.Values("Link")) {
		return true
	}
	body = bytes.TrimPrefix(body, utf8BOM)
	if len(body) == 0 || len(body) > maxReuseBody || !isJSONType(h.Get("Content-Type")) {
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
	if status == http.StatusUnprocessableEntity {
		typ, _ := doc.Type.(string)
		fields := [...]string{lastSegment(typ), stringOf(doc.Title), stringOf(doc.Code)}
		var names, reuse bool
		for _, f := range fields {
			f = normalizeWords(f)
			names = names || strings.Contains(f, "idempoten")
			reuse = reuse || saysReuse(f)
		}
		if names && reuse {
			return true
		}
	}
	if e, ok := doc.Error.(map[string]any); ok && e["type"] == "idempotency_error" {
		return true
	}
	return false
}

// utf8BOM is the byte order mark some servers put before a JSON document.
var utf8BOM = []byte("\xef\xbb\xbf")

// isJSONType reports whether a content type is JSON for the reading of
// error documents: application/json, *+json, or the unregistered
// text/json.
func isJSONType(contentType string) bool {
	if canonjson.IsJSON(contentType) {
		return true
	}
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/json")
}

// reuseWords are the words with which a problem's title, code or type
// says a key was reused, once normalizeWords has made them lower-case and
// spaced: "Idempotency-Key is already used" (the IETF draft),
// "idempotency_key_reused", "used with different parameters",
// "idempotency-key-mismatch", "only be used with the same parameters"
// (Stripe's message).
var reuseWords = []string{"already used", "already been used", "reuse", "different", "mismatch", "same parameters"}

func saysReuse(s string) bool {
	for _, w := range reuseWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// normalizeWords lower-cases s and spaces its words: '_', '-' and '.'
// become spaces, so that a code (idempotency_key_already_used) reads as a
// title does.
func normalizeWords(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.':
			return ' '
		}
		return unicode.ToLower(r)
	}, s)
}

// lastSegment returns a URI's last path segment, its query and fragment
// left out ("https://api.example/problems/idempotency-key-reused" gives
// "idempotency-key-reused"); a string without a slash, such as a URN or a
// bare code, is returned whole but for those.
func lastSegment(uri string) string {
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	uri = strings.TrimRight(uri, "/")
	return uri[strings.LastIndexByte(uri, '/')+1:]
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// linksToIdempotency reports whether Link field values name, with
// rel="describedby", a target whose last path segment mentions
// idempotency.
func linksToIdempotency(values []string) bool {
	for _, v := range values {
		for _, link := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(link, ";")
			target = strings.Trim(strings.TrimSpace(target), "<>")
			if !ok || !strings.Contains(strings.ToLower(lastSegment(target)), "idempoten") {
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

// onConflict returns Do's answer after Options.OnConflict has seen a
// conflict over the key (see there): resp and err as they are if there is
// no hook or no conflict, the hook's Response if it gives one, or its
// error joined with err.
func (c *Client) onConflict(ctx context.Context, resp *Response, err error) (*Response, error) {
	hook := c.opts.OnConflict
	if hook == nil || err == nil {
		return resp, err
	}
	e, ok := conflictOf(err)
	if !ok {
		return resp, err
	}
	got, herr := hook(ctx, e)
	switch {
	case herr != nil:
		return nil, fmt.Errorf("idem: OnConflict: %w (after %w)", herr, err)
	case got == nil:
		return nil, err
	}
	if got.Key == "" {
		got.Key = e.Key
	}
	return got, nil
}

// conflictOf returns the *Error of a call that ended in a conflict over
// its key: key reuse, or retries exhausted on a 409.
func conflictOf(err error) (*Error, bool) {
	var e *Error
	if !errors.As(err, &e) {
		return nil, false
	}
	switch {
	case errors.Is(e.Err, ErrKeyReused):
		return e, true
	case errors.Is(e.Err, ErrRetriesExhausted) && e.StatusCode == http.StatusConflict:
		return e, true
	}
	return nil, false
}
