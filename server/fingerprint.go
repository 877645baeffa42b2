// This file holds Fingerprint, the request fingerprint a repeat must match,
// and its encoding, pinned by the golden tests; and FingerprintRule, the
// fingerprint by a selection of the body's fields.

package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/idemhq/idem/internal/canonjson"
	"github.com/idemhq/idem/internal/selectjson"
	"github.com/idemhq/idem/internal/wire"
)

// fingerprintVersion starts every fingerprint's input. Fingerprints are
// stored with their records, so the encoding below never changes under
// this tag: a retry across an upgrade must still match.
const fingerprintVersion = "idem-fingerprint-1"

// Fingerprint returns the fingerprint of a request with the given body: a
// lowercase hex SHA-256 (64 characters) over an unambiguous encoding of
//
//   - the method, exactly as sent;
//   - the escaped path (r.URL.EscapedPath);
//   - the query, parsed, with its names sorted and each name's values kept
//     in the order they were sent (a query that does not parse is taken as
//     its raw text);
//   - the body. If the Content-Type's media type is application/json or
//     ends in +json and the body is valid UTF-8 JSON, its canonical form is
//     used, so member order and whitespace do not matter; numbers keep
//     their literal text (1.0 and 1 differ) and arrays keep their order.
//     Any other body, or JSON that does not parse, is taken byte for byte.
//
// Every field is length-prefixed, so no two different requests encode
// alike. Headers, the host and the scheme are not part of it.
//
// The middleware calls Fingerprint with the body it has read; it is
// exported for callers that build keys for [RunOnce] or their own stores.
// It is safe for concurrent use.
func Fingerprint(r *http.Request, body []byte) string {
	f := fingerprintPool.Get().(*fingerprinter)
	defer fingerprintPool.Put(f)
	b := f.buf[:0]
	b = append(b, fingerprintVersion...)
	b = wire.AppendString(b, r.Method)
	b = wire.AppendString(b, r.URL.EscapedPath())
	b = appendQuery(b, r.URL.RawQuery)
	f.h.Reset()
	if canonjson.IsJSON(r.Header.Get("Content-Type")) {
		canon, ok := f.canon.Append(f.json[:0], body)
		f.json = canon[:0]
		if ok {
			b = wire.AppendUvarint(append(b, 'J'), uint64(len(canon)))
			f.h.Write(b)
			f.h.Write(canon)
			return f.sum(b)
		}
	}
	b = wire.AppendUvarint(append(b, 'R'), uint64(len(body)))
	f.h.Write(b)
	f.h.Write(body)
	return f.sum(b)
}

// fingerprinter holds the reusable state of one Fingerprint call.
type fingerprinter struct {
	h     hash.Hash
	buf   []byte // the encoded method, path, query and body header
	json  []byte // the canonical JSON body
	canon canonjson.Canonicalizer
}

var fingerprintPool = sync.Pool{New: func() any {
	return &fingerprinter{h: sha256.New(), buf: make([]byte, 0, 256)}
}}

// sum finishes the hash and keeps b's storage for the next call.
func (f *fingerprinter) sum(b []byte) string {
	sum := f.h.Sum(b[:0])
	f.buf = b[:0]
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum)
	return string(out[:])
}

// appendQuery appends a query: "Q", the number of names, then each name
// (sorted) with the number of its values and the values in order; or "q"
// and the raw text when it does not parse.
func appendQuery(b []byte, raw string) []byte {
	if raw == "" {
		return append(b, 'Q', 0)
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return wire.AppendString(append(b, 'q'), raw)
	}
	names := make([]string, 0, len(vals))
	for name := range vals {
		names = append(names, name)
	}
	slices.Sort(names)
	b = append(b, 'Q')
	b = wire.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = wire.AppendString(b, name)
		b = wire.AppendUvarint(b, uint64(len(vals[name])))
		for _, v := range vals[name] {
			b = wire.AppendString(b, v)
		}
	}
	return b
}

// FingerprintRule says which parts of a JSON request body make two
// requests under one key the same request, for services whose clients
// put values in a retry that may differ from the first attempt's (a
// client timestamp, a trace ID) without making it another request. The
// zero value is the default rule: the whole body, as [Fingerprint] takes
// it.
//
// The method, path and query always count, as in Fingerprint. Of the
// body, only what Select names counts (or what Func returns); a retry
// that differs anywhere else is the same request, answered by a replay,
// where the default rule answers 422. That is the trade-off: a field left
// out of Select may differ silently, and the replay answers the first
// request's values for it. A field that must not change on a retry but
// does not say which request it is belongs in Check: a repeat that
// differs there is refused like any other key reuse (422, with the
// [ProblemKeyReused] type every idem client recognises), with a detail
// that says the request was recognised and a checked field changed.
//
// A body that is not JSON (by its Content-Type: application/json or
// *+json), not valid UTF-8 JSON, or in which a pointer's target is
// ambiguous (an object on the way with a repeated member name, or the
// name under another case, which decoders read differently) counts whole,
// as under the default rule: such a request is the same as another only
// if its bodies are.
//
// A fingerprint taken under a rule starts with "v2:sel:", 16 hex
// characters naming the rule (its Select, Check and Version: the order
// pointers are listed in does not matter) and ':', so a record made under
// another rule, or under the default, never matches: changing a route's
// rule makes the retries of its recorded keys answer 422 until their
// records expire. Change it with a new Version (or Select) only between
// deployments whose clients do not retry across them, or accept those
// 422s. The idem client takes the same pointers (idem.Options.SameRequest)
// so that its journal agrees.
type FingerprintRule struct {
	// Select lists RFC 6901 JSON Pointers to the body's values that make
	// the request: "/amount", "/customer/id", "/items/0/sku" ("" is the
	// whole body). A value absent from a body counts as absent, unlike
	// null; values compare by their canonical JSON (member order and
	// whitespace do not matter; numbers keep their literal text). At most
	// 64 pointers.
	Select []string

	// Check lists pointers to values that must be the same on a repeat
	// but do not key it: a repeat that differs in one is refused 422 with
	// the key-reuse problem type and its own detail. A body the pointers
	// cannot select from (see above) counts whole for the check too, so
	// with Func only bytes equal to the first request's pass it. At most
	// 64.
	Check []string

	// Func, if set in place of Select, returns the bytes that stand for
	// the body in the fingerprint, for a rule pointers cannot say (a form
	// body, a body whose meaning depends on a header). It is called once
	// per request with a key, with the body as read; it must be
	// deterministic and must not keep body. An error answers the request
	// 400 with [ProblemBodyRefused] (the error is logged at debug level,
	// never sent) and nothing runs.
	Func func(r *http.Request, body []byte) ([]byte, error)

	// Version names Func's rule; it is required with Func, and part of
	// the rule's name in its fingerprints: change it whenever Func's
	// output for some body changes. Without Func it must be empty.
	Version string
}

// ProblemBodyRefused is the problem type of a request whose body a
// FingerprintRule's Func refused (400).
const ProblemBodyRefused = "https://idem.dev/problems/body-refused"

// OutcomeBodyRefused: a FingerprintRule's Func refused the body (400).
const OutcomeBodyRefused Outcome = "body_refused"

var problemBodyRefused = newProblem(http.StatusBadRequest, ProblemBodyRefused,
	"Request body refused",
	"The request body is not one this endpoint takes, so its idempotency key cannot be used. Nothing ran.", "")

// problemCheckFailed answers a repeat that matches the first request
// under its key but for a field FingerprintRule.Check names.
var problemCheckFailed = newProblem(http.StatusUnprocessableEntity, ProblemKeyReused,
	"Idempotency key reused",
	"This idempotency key was used with the same request but for a field that must not change on a retry. Send the first request's value, or use a new key for a new operation.", "")

// ruleTags start the input of a rule's two hashes.
const (
	selTag   = "idem-fingerprint-sel-1"
	checkTag = "idem-fingerprint-check-1"
)

// fingerprinter of a rule: nil is the default rule.
type ruleFingerprint struct {
	rule   *selectjson.Rule
	fn     func(*http.Request, []byte) ([]byte, error)
	prefix string // "v2:sel:<rule ID>:"
}

// compile validates r and returns its fingerprinter, or nil for the
// default rule.
func (r FingerprintRule) compile() (*ruleFingerprint, error) {
	switch {
	case r.Select == nil && r.Check == nil && r.Func == nil && r.Version == "":
		return nil, nil
	case r.Func != nil && r.Version == "":
		return nil, fmt.Errorf("FingerprintRule.Func needs a Version naming its rule")
	case r.Func == nil && r.Version != "":
		return nil, fmt.Errorf("FingerprintRule.Version names a Func, and there is none")
	}
	rule, err := selectjson.NewRule(r.Select, r.Check, r.Version)
	if err != nil {
		return nil, fmt.Errorf("FingerprintRule: %w", err)
	}
	return &ruleFingerprint{rule: rule, fn: r.Func, prefix: "v2:sel:" + rule.ID + ":"}, nil
}

// fingerprint returns r's fingerprint under the rule: the prefix, the hex
// SHA-256 of the method, path, query and the body's selection, and, if
// the rule checks fields, ':' and the hex SHA-256 of their selection. An
// error is Func's.
func (f *ruleFingerprint) fingerprint(r *http.Request, body []byte) (string, error) {
	if f == nil {
		return Fingerprint(r, body), nil
	}
	p := fingerprintPool.Get().(*fingerprinter)
	defer fingerprintPool.Put(p)
	b := append(p.buf[:0], selTag...)
	b = wire.AppendString(b, r.Method)
	b = wire.AppendString(b, r.URL.EscapedPath())
	b = appendQuery(b, r.URL.RawQuery)
	isJSON := canonjson.IsJSON(r.Header.Get("Content-Type"))
	mark := len(b)
	selected := false
	switch {
	case f.fn != nil:
		key, err := f.fn(r, body)
		if err != nil {
			p.buf = b[:0]
			return "", err
		}
		b = wire.AppendBytes(append(b, 'F'), key)
	case isJSON:
		b, selected = selectjson.Append(append(b, 'S'), body, f.rule.Select, &p.canon)
	}
	if f.fn == nil && !selected {
		b = appendWhole(b[:mark], body, p)
	}
	out := make([]byte, 0, len(f.prefix)+2*sha256.Size+1+2*sha256.Size)
	out = append(out, f.prefix...)
	out = appendSum(out, b)
	if len(f.rule.Check) > 0 {
		b = append(b[:0], checkTag...)
		checked := false
		if isJSON && (selected || f.fn != nil) {
			b, checked = selectjson.Append(append(b, 'S'), body, f.rule.Check, &p.canon)
		}
		if !checked { // not JSON, or ambiguous: the check counts the whole body
			b = appendWhole(append(b[:len(checkTag)], 'W'), body, p)
		}
		out = appendSum(append(out, ':'), b)
	}
	p.buf = b[:0]
	return string(out), nil
}

// appendWhole appends the body as the default rule counts it: 'J' and
// its canonical form, or 'R' and its bytes.
func appendWhole(b, body []byte, p *fingerprinter) []byte {
	canon, ok := p.canon.Append(p.json[:0], body)
	p.json = canon[:0]
	if ok {
		return wire.AppendBytes(append(b, 'J'), canon)
	}
	return wire.AppendBytes(append(b, 'R'), body)
}

// appendSum appends the hex SHA-256 of b.
func appendSum(out, b []byte) []byte {
	sum := sha256.Sum256(b)
	return hex.AppendEncode(out, sum[:])
}

// onlyCheckDiffers reports whether fingerprints a and b, taken under one
// rule, differ only in the part of the fields the rule checks.
func (f *ruleFingerprint) onlyCheckDiffers(a, b string) bool {
	if f == nil || len(f.rule.Check) == 0 || len(a) != len(b) || !strings.HasPrefix(a, f.prefix) || !strings.HasPrefix(b, f.prefix) {
		return false
	}
	end := len(f.prefix) + 2*sha256.Size
	return a[:end] == b[:end] && a[end:] != b[end:]
}
