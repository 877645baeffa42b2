// This file holds fakeAPI, a test server that treats idempotency keys as
// one provider documents (see providers.go): where it reads the key, how
// long a key may be, what it answers a repeat, a key reused for another
// request, a transient fault, and a request missing a required header.

package idem

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/idemhq/idem/internal/bodykey"
	"github.com/idemhq/idem/internal/canonjson"
)

// fakeRecord is what the fake keeps of a key's first request.
type fakeRecord struct {
	fp     string // the request's fingerprint (see fakeAPI.fingerprint)
	id     string // the resource it created
	status int
	header http.Header
	body   []byte
}

// fakeAPI imitates one provider's idempotency behaviour. It executes each
// key once, and records every attempt's key and body.
type fakeAPI struct {
	p   Profile
	srv *httptest.Server

	mu       sync.Mutex
	records  map[string]*fakeRecord
	executed map[string]int
	bodies   map[string][][]byte // every attempt's body, by key
	attempts int
	before   func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool
	after    func(r *http.Request, key string) bool
}

// hooks sets before, which runs first on every request that got past the
// fake's checks and whose key is new (returning false means it answered on
// its own), and after, which runs once the work is done and before the
// answer (returning false drops the connection instead). Either may be
// nil.
func (f *fakeAPI) hooks(before func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool, after func(r *http.Request, key string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before, f.after = before, after
}

func newFakeAPI(t *testing.T, p Profile) *fakeAPI {
	t.Helper()
	f := &fakeAPI{p: p, records: map[string]*fakeRecord{}, executed: map[string]int{}, bodies: map[string][][]byte{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

// keyOf returns the request's key, from the profile's header or body
// field, and whether there is one.
func (f *fakeAPI) keyOf(r *http.Request, body []byte) (string, bool) {
	if f.p.BodyKey != "" {
		p, _ := bodykey.ParsePath(f.p.BodyKey)
		k, found, err := bodykey.Get(body, p)
		return k, err == nil && found
	}
	k := r.Header.Get(f.p.Header)
	return k, k != ""
}

// fingerprint is how the fake tells requests apart: the canonical body
// without the key for a body-keyed API (Square compares "request data"),
// the exact bytes otherwise.
func (f *fakeAPI) fingerprint(r *http.Request, body []byte) string {
	if f.p.BodyKey != "" {
		p, _ := bodykey.ParsePath(f.p.BodyKey)
		body, _ = bodykey.Without(body, p)
		var c canonjson.Canonicalizer
		if canon, ok := c.Append(nil, body); ok {
			body = canon
		}
	}
	return r.Method + " " + r.URL.Path + " " + string(body)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	for _, h := range f.p.RequiredHeaders {
		if r.Header.Get(h) == "" {
			f.write(w, 400, nil, f.invalid("missing header "+h))
			return
		}
	}
	key, ok := f.keyOf(r, body)
	if !ok || len(key) > f.p.MaxKeyLen {
		f.write(w, 400, nil, f.invalid("idempotency key missing or too long"))
		return
	}
	fp := f.fingerprint(r, body)
	f.mu.Lock()
	f.attempts++
	f.bodies[key] = append(f.bodies[key], body)
	rec := f.records[key]
	before, after := f.before, f.after
	f.mu.Unlock()
	if rec != nil {
		f.repeat(w, rec, rec.fp == fp)
		return
	}
	if before != nil && !before(w, r, key, body) {
		return
	}
	f.mu.Lock()
	rec = f.records[key]
	if rec == nil {
		f.executed[key]++
		id := fmt.Sprintf("res_%d", len(f.records)+1)
		status, h, b := f.created(key, id)
		rec = &fakeRecord{fp: fp, id: id, status: status, header: h, body: b}
		f.records[key] = rec
	}
	f.mu.Unlock()
	if after != nil && !after(r, key) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	f.write(w, rec.status, rec.header, rec.body)
}

// repeat answers a request whose key the fake knows, as the provider
// documents.
func (f *fakeAPI) repeat(w http.ResponseWriter, rec *fakeRecord, same bool) {
	switch f.p.Name {
	case "stripe":
		if !same {
			f.write(w, 400, nil, []byte(`{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}`))
			return
		}
		h := rec.header.Clone()
		h.Set("Idempotent-Replayed", "true")
		f.write(w, rec.status, h, rec.body)
	case "paypal":
		if !same {
			f.write(w, 422, nil, []byte(`{"name":"UNPROCESSABLE_ENTITY","message":"The requested action could not be performed, semantically incorrect, or failed business validation.","details":[{"issue":"PAYPAL_REQUEST_ID_PREVIOUSLY_USED","description":"The PayPal-Request-ID has already been used for another request."}]}`))
			return
		}
		f.write(w, rec.status, rec.header, rec.body) // "the latest status of the previous request"
	case "square":
		if !same {
			f.write(w, 400, nil, []byte(`{"errors":[{"category":"INVALID_REQUEST_ERROR","code":"IDEMPOTENCY_KEY_REUSED","detail":"The provided idempotency key has already been used."}]}`))
			return
		}
		f.write(w, rec.status, rec.header, rec.body) // "the response as the first successful" one
	case "gocardless":
		// Same request or not: the key already created a resource.
		f.write(w, 409, nil, []byte(`{"error":{"code":409,"type":"invalid_state","message":"A resource has already been created with this idempotency key","errors":[{"reason":"idempotent_creation_conflict","message":"A resource has already been created with this idempotency key","links":{"conflicting_resource_id":"`+rec.id+`"}}]}}`))
	default: // adyen: "the response to the first attempt", reuse undocumented
		f.write(w, rec.status, rec.header, rec.body)
	}
}

// created is the provider's answer to a first request.
func (f *fakeAPI) created(key, id string) (int, http.Header, []byte) {
	h := http.Header{}
	switch f.p.Name {
	case "stripe":
		return 200, h, []byte(`{"id":"` + id + `","object":"charge"}`)
	case "adyen":
		h.Set("Idempotency-Key", key) // Adyen echoes the key
		return 200, h, []byte(`{"pspReference":"` + id + `","resultCode":"Authorised"}`)
	case "paypal":
		return 201, h, []byte(`{"id":"` + id + `","status":"COMPLETED"}`)
	case "square":
		return 200, h, []byte(`{"payment":{"id":"` + id + `","status":"COMPLETED"}}`)
	}
	return 201, h, []byte(`{"payments":{"id":"` + id + `"}}`)
}

// fault answers a transient failure the provider's way, hinting a retry
// where the provider has a hint.
func (f *fakeAPI) fault(w http.ResponseWriter) {
	h := http.Header{}
	body := `{"error":"temporarily unavailable"}`
	switch f.p.Name {
	case "stripe":
		h.Set("Stripe-Should-Retry", "true")
		body = `{"error":{"type":"api_error"}}`
	case "adyen":
		h.Set("Transient-Error", "true")
		body = `{"status":503,"errorCode":"703","message":"required resource temporarily unavailable"}`
	case "square":
		body = `{"errors":[{"category":"API_ERROR","code":"SERVICE_UNAVAILABLE"}]}`
	case "gocardless":
		body = `{"error":{"code":503,"type":"gocardless","message":"unavailable"}}`
	}
	f.write(w, 503, h, []byte(body))
}

// invalid is the provider's answer to a malformed request.
func (f *fakeAPI) invalid(msg string) []byte {
	return []byte(fmt.Sprintf(`{"error":{"type":"invalid_request_error","message":%q}}`, msg))
}

func (f *fakeAPI) write(w http.ResponseWriter, status int, h http.Header, body []byte) {
	for k, vs := range h {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// mismatches reports how many keys were sent with two different bodies.
func (f *fakeAPI) mismatches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, bs := range f.bodies {
		for _, b := range bs[1:] {
			if !bytes.Equal(b, bs[0]) {
				n++
				break
			}
		}
	}
	return n
}

func (f *fakeAPI) executions() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.executed))
	for k, v := range f.executed {
		out[k] = v
	}
	return out
}

// profileRequest is the request a profile's tests send: a JSON body
// carrying op, and, for GoCardless, its version header (which the test
// clients' PrepareRequest also sets, for resumed operations).
func profileRequest(t *testing.T, p Profile, url string, op int, key string) *http.Request {
	t.Helper()
	body := fmt.Sprintf(`{"op":%d,"amount":%d,"currency":"EUR"}`, op, 100+op)
	if key != "" && p.BodyKey != "" {
		body = fmt.Sprintf(`{"op":%d,"amount":%d,"currency":"EUR","%s":%q}`, op, 100+op, p.BodyKey, key)
	}
	req, err := http.NewRequest(http.MethodPost, url+"/payments", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" && p.Header != "" {
		req.Header.Set(p.Header, key)
	}
	return req
}

// setVersion is the test clients' PrepareRequest: GoCardless requires a
// version header on every request, resumed ones included.
func setVersion(r *http.Request) error {
	r.Header.Set("GoCardless-Version", "2015-07-06")
	return nil
}
