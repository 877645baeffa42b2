// Package selectjson picks the parts of a JSON text that RFC 6901 JSON
// Pointers name, and encodes them unambiguously, for the fingerprints of
// requests whose bodies are the same request by some of their fields only:
// the server package's Options.Fingerprint and the idem client's
// Options.SameRequest use one rule, so both ends agree on what a retry may
// change.
//
// A [Rule] is a set of pointers that key a request (Select) and a set that
// must match without keying it (Check), each sorted and deduplicated, so
// the order they were listed in does not matter, and an ID that names the
// rule: fingerprints taken under one rule carry its ID, so that they are
// never compared with those taken under another.
//
// [Append] encodes, for each pointer in order, the pointer and the value it
// names: absent, or the value's canonical form (internal/canonjson), or, for
// a value that has none, its bytes as written. A text in which a pointer's
// target is ambiguous has no selection: an object on the way with two
// members of the token's name, or a member whose name equals the token only
// under case folding ("Amount" for "amount"). Decoders disagree on such
// objects (encoding/json matches names regardless of case and keeps the
// last), so a field the fingerprint ignored could change what a handler
// reads; the caller then fingerprints the whole text instead.
package selectjson

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/idemhq/idem/internal/canonjson"
	"github.com/idemhq/idem/internal/wire"
)

// MaxPointers bounds how many pointers one list of a rule may hold.
const MaxPointers = 64

// ErrPointer is wrapped by the errors of [ParsePointer] and [NewRule].
var ErrPointer = errors.New("invalid JSON pointer")

// Pointer is a parsed JSON Pointer (RFC 6901): its text and its reference
// tokens, unescaped ("~1" is '/', "~0" is '~').
type Pointer struct {
	text   string
	tokens []string
}

// ParsePointer parses s, which is "" (the whole text) or a sequence of
// "/"-prefixed tokens ("/amount", "/customer/id", "/items/0/sku"). A
// token "-" (the element past an array's end) names nothing and is
// refused, as is a "~" not followed by '0' or '1', and text that is not
// valid UTF-8.
func ParsePointer(s string) (Pointer, error) {
	p := Pointer{text: s}
	if s == "" {
		return p, nil
	}
	if s[0] != '/' {
		return p, fmt.Errorf("%w %q: it must be empty or start with '/'", ErrPointer, s)
	}
	if !utf8.ValidString(s) {
		return p, fmt.Errorf("%w %q: not valid UTF-8", ErrPointer, s)
	}
	for tok := range strings.SplitSeq(s[1:], "/") {
		for i := 0; i < len(tok); i++ {
			if tok[i] == '~' && (i+1 == len(tok) || tok[i+1] != '0' && tok[i+1] != '1') {
				return p, fmt.Errorf("%w %q: '~' must be followed by '0' or '1'", ErrPointer, s)
			}
		}
		if tok == "-" {
			return p, fmt.Errorf("%w %q: '-' names the element past an array's end, which no body has", ErrPointer, s)
		}
		p.tokens = append(p.tokens, strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"))
	}
	return p, nil
}

// String returns the pointer's text.
func (p Pointer) String() string { return p.text }

// Rule is a parsed selection. Its fields are read-only once NewRule
// returns it; it is safe for concurrent use.
type Rule struct {
	// Select are the pointers whose values key a request, sorted and
	// deduplicated; nil when Custom names the keying instead.
	Select []Pointer
	// Check are the pointers whose values must match without keying it,
	// sorted and deduplicated.
	Check []Pointer
	// Custom names a keying function the caller applies in place of
	// Select ("" for none).
	Custom string
	// ID is 16 lowercase hex characters naming the rule: the first 8
	// bytes of SHA-256 over an encoding of the three above.
	ID string
}

// ruleTag starts the input of every rule's ID.
const ruleTag = "idem-select-rule-1"

// NewRule parses and sorts the pointers of a rule. Exactly one of sel and
// custom must be given: the pointers that key the request, or the name of
// a function that does. check may be empty. Each list holds at most
// MaxPointers pointers; an error wrapping ErrPointer names the list and
// the first pointer that does not parse.
func NewRule(sel, check []string, custom string) (*Rule, error) {
	switch {
	case len(sel) == 0 && custom == "":
		return nil, fmt.Errorf("%w: a rule needs pointers that key the request, or a keying function", ErrPointer)
	case len(sel) > 0 && custom != "":
		return nil, fmt.Errorf("%w: a rule is keyed by pointers or by a function, not both", ErrPointer)
	}
	r := &Rule{Custom: custom}
	var err error
	if r.Select, err = parseList("Select", sel); err != nil {
		return nil, err
	}
	if r.Check, err = parseList("Check", check); err != nil {
		return nil, err
	}
	b := wire.AppendString(nil, ruleTag)
	b = appendList(append(b, 'S'), r.Select)
	b = appendList(append(b, 'C'), r.Check)
	b = wire.AppendString(append(b, 'F'), custom)
	sum := sha256.Sum256(b)
	r.ID = hex.EncodeToString(sum[:8])
	return r, nil
}

// parseList parses list, then sorts it and drops repeats.
func parseList(name string, list []string) ([]Pointer, error) {
	if len(list) == 0 {
		return nil, nil
	}
	if len(list) > MaxPointers {
		return nil, fmt.Errorf("%w: %s lists %d pointers, more than %d", ErrPointer, name, len(list), MaxPointers)
	}
	out := make([]Pointer, 0, len(list))
	for _, s := range list {
		p, err := ParsePointer(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Pointer) int { return strings.Compare(a.text, b.text) })
	return slices.CompactFunc(out, func(a, b Pointer) bool { return a.text == b.text }), nil
}

func appendList(b []byte, ps []Pointer) []byte {
	b = wire.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		b = wire.AppendString(b, p.text)
	}
	return b
}

// Value tags in an encoded selection.
const (
	tagAbsent    = 'A' // the pointer names nothing in the text
	tagCanonical = 'J' // the value's canonical form follows
	tagRaw       = 'R' // the value has no canonical form: its bytes as written follow
)

// Append appends to dst the selection of text by ptrs: the number of
// pointers, then for each its text and the value it names (see the
// package documentation). It reports false, with dst's new contents
// unspecified, if text is not one valid JSON value in UTF-8 (encoding/json
// reads invalid bytes as U+FFFD, so two names could meet) or a pointer's
// target is ambiguous in it. c is used for canonical forms; it must not be nil.
func Append(dst, text []byte, ptrs []Pointer, c *canonjson.Canonicalizer) ([]byte, bool) {
	if !utf8.Valid(text) || !json.Valid(text) {
		return dst, false
	}
	dst = wire.AppendUvarint(dst, uint64(len(ptrs)))
	var scratch []byte
	for _, p := range ptrs {
		dst = wire.AppendString(dst, p.text)
		v, found, ok := lookup(text, p.tokens)
		switch {
		case !ok:
			return dst, false
		case !found:
			dst = append(dst, tagAbsent)
			continue
		}
		canon, isCanon := c.Append(scratch[:0], v)
		scratch = canon[:0]
		if isCanon {
			dst = wire.AppendBytes(append(dst, tagCanonical), canon)
		} else {
			dst = wire.AppendBytes(append(dst, tagRaw), v)
		}
	}
	return dst, true
}
