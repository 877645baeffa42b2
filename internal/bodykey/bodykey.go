// Package bodykey finds, reads, writes and removes an idempotency key
// carried in a field of a JSON request body instead of a header (Square's
// idempotency_key), for the idem client and the server package alike, so
// both ends agree on where the key is and on the body they fingerprint: the
// body without that field.
//
// A field is named by a path: one member name for a top-level field
// ("idempotency_key"), or names joined by dots for a nested one
// ("payment.idempotency_key"). Every step but the last must be a JSON
// object.
//
// The body is never re-encoded. Reading a key leaves it as it is; writing
// one inserts the member's bytes and leaves every other byte where it was;
// removing one cuts the member and a comma. So a body written once is the
// same bytes on every attempt.
//
// A body in which the field is ambiguous is refused rather than guessed at:
// two members with the field's name, or a member whose name equals it only
// under case folding ("Idempotency_Key"). Decoders disagree on such
// objects (encoding/json matches names regardless of case and keeps the
// last), so the two ends could read two different keys.
package bodykey

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MaxDepth bounds the path's length.
const MaxDepth = 32

// Errors Get, Put and ParsePath return. Each is wrapped with the detail.
var (
	// ErrPath: the path is empty, has an empty step, more than MaxDepth
	// steps, or a byte that is not printable ASCII.
	ErrPath = errors.New("idem: invalid body key path")
	// ErrNotObject: the body is not a JSON object, or a step of the path
	// names a member that is not one.
	ErrNotObject = errors.New("idem: body key needs a JSON object")
	// ErrAmbiguous: the field appears twice, or under another case.
	ErrAmbiguous = errors.New("idem: body key field is ambiguous")
	// ErrNotString: the field holds something other than a string or null.
	ErrNotString = errors.New("idem: body key field is not a string")
)

// Path names a field: the member names from the outermost object inward.
type Path []string

// ParsePath splits a dotted path ("payment.idempotency_key") into its
// steps. Each step is 1 or more printable ASCII bytes other than '.'.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrPath)
	}
	p := Path(strings.Split(s, "."))
	if len(p) > MaxDepth {
		return nil, fmt.Errorf("%w %q: more than %d steps", ErrPath, s, MaxDepth)
	}
	for _, step := range p {
		if step == "" {
			return nil, fmt.Errorf("%w %q: an empty step", ErrPath, s)
		}
		for i := 0; i < len(step); i++ {
			if c := step[i]; c < 0x20 || c > 0x7e {
				return nil, fmt.Errorf("%w %q: not printable ASCII", ErrPath, s)
			}
		}
	}
	return p, nil
}

// String returns the dotted form of p.
func (p Path) String() string { return strings.Join(p, ".") }

// Get returns the key the field holds. found is false, with a nil error,
// when the field is absent or null. The key is the string decoded (escapes
// resolved); it is not validated as a key.
func Get(body []byte, p Path) (key string, found bool, err error) {
	loc, err := locate(body, p)
	if err != nil || !loc.found {
		return "", false, err
	}
	v := body[loc.m.valueStart:loc.m.valueEnd]
	switch v[0] {
	case 'n':
		return "", false, nil
	case '"':
		if err := json.Unmarshal(v, &key); err != nil {
			return "", false, fmt.Errorf("%w: %s: %v", ErrNotString, p, err)
		}
		return key, true, nil
	}
	return "", false, fmt.Errorf("%w: %s holds %.20s", ErrNotString, p, v)
}

// Put returns a copy of body with the field set to key: a null value is
// replaced, an absent field inserted as the first member of its object,
// with any missing objects along the path created. It refuses a field that
// already holds a string (ErrNotString names it): read it with Get. key
// must be printable ASCII, which every valid key is.
func Put(body []byte, p Path, key string) ([]byte, error) {
	loc, err := locate(body, p)
	if err != nil {
		return nil, err
	}
	if loc.found {
		if body[loc.m.valueStart] != 'n' {
			return nil, fmt.Errorf("%w: %s already holds a value", ErrNotString, p)
		}
		out := make([]byte, 0, len(body)+len(key)+2)
		out = append(out, body[:loc.m.valueStart]...)
		out = appendQuoted(out, key)
		return append(out, body[loc.m.valueEnd:]...), nil
	}
	// Insert "rest[0]":{"rest[1]":..."key"} after the innermost existing
	// object's brace.
	rest := p[loc.depth:]
	var ins []byte
	for i, step := range rest {
		ins = appendQuoted(ins, step)
		ins = append(ins, ':')
		if i < len(rest)-1 {
			ins = append(ins, '{')
		}
	}
	ins = appendQuoted(ins, key)
	for range len(rest) - 1 {
		ins = append(ins, '}')
	}
	if !loc.empty {
		ins = append(ins, ',')
	}
	at := loc.open + 1
	out := make([]byte, 0, len(body)+len(ins))
	out = append(out, body[:at]...)
	out = append(out, ins...)
	return append(out, body[at:]...), nil
}

// Without returns body without the field's member, and whether it removed
// one. It returns body itself (removed false) when the field is absent, or
// when body is not a JSON object or the field is ambiguous: the caller
// fingerprints such a body as it is. The result shares no memory with body
// when removed is true.
func Without(body []byte, p Path) (out []byte, removed bool) {
	loc, err := locate(body, p)
	if err != nil || !loc.found {
		return body, false
	}
	from, to := loc.m.nameStart, loc.m.valueEnd
	s := scanner{b: body, i: to}
	s.ws()
	if s.i < len(body) && body[s.i] == ',' {
		to = s.i + 1 // the member and the comma after it
	} else if loc.m.prevComma >= 0 {
		from = loc.m.prevComma // the last member and the comma before it
	}
	out = make([]byte, 0, len(body)-(to-from))
	out = append(out, body[:from]...)
	return append(out, body[to:]...), true
}

// location is where a path leads in a body.
type location struct {
	found bool
	m     member // the field's member, when found
	// When not found: the innermost existing object on the path, the
	// index of its opening brace, whether it has no members, and how many
	// steps of the path lead to it.
	open  int
	empty bool
	depth int
}

// member is one object member's spans in the body.
type member struct {
	nameStart, valueStart, valueEnd int
	prevComma                       int // the comma before the member, or -1
}

// locate follows p through body.
func locate(body []byte, p Path) (location, error) {
	if len(p) == 0 {
		return location{}, fmt.Errorf("%w: empty", ErrPath)
	}
	if !json.Valid(body) {
		return location{}, fmt.Errorf("%w: the body is not valid JSON", ErrNotObject)
	}
	s := scanner{b: body}
	s.ws()
	if body[s.i] != '{' {
		return location{}, fmt.Errorf("%w: the body is not a JSON object", ErrNotObject)
	}
	for depth, step := range p {
		open := s.i
		m, found, empty, err := s.findMember(step)
		if err != nil {
			return location{}, fmt.Errorf("%w: %s", err, p[:depth+1])
		}
		if !found {
			return location{open: open, empty: empty, depth: depth}, nil
		}
		if depth == len(p)-1 {
			return location{found: true, m: m}, nil
		}
		if body[m.valueStart] != '{' {
			return location{}, fmt.Errorf("%w: %s is not an object", ErrNotObject, p[:depth+1])
		}
		s.i = m.valueStart
	}
	panic("unreachable")
}

// scanner walks a body that json.Valid accepted.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// findMember scans the object whose brace is at s.i for the member named
// name. It reports whether the object is empty, and refuses a name that
// appears twice or under another case.
func (s *scanner) findMember(name string) (m member, found, empty bool, err error) {
	s.i++ // '{'
	s.ws()
	if s.b[s.i] == '}' {
		return member{}, false, true, nil
	}
	prevComma := -1
	for {
		start := s.i
		nameEnd := s.skipString()
		n, err := memberName(s.b[start:nameEnd])
		if err != nil {
			return member{}, false, false, err
		}
		s.ws()
		s.i++ // ':'
		s.ws()
		vs := s.i
		s.skipValue()
		if strings.EqualFold(n, name) {
			if found || n != name {
				return member{}, false, false, ErrAmbiguous
			}
			m, found = member{nameStart: start, valueStart: vs, valueEnd: s.i, prevComma: prevComma}, true
		}
		s.ws()
		if s.b[s.i] == '}' {
			return m, found, false, nil
		}
		prevComma = s.i
		s.i++ // ','
		s.ws()
	}
}

// memberName decodes a member name's JSON string.
func memberName(raw []byte) (string, error) {
	inner := raw[1 : len(raw)-1]
	if !strings.ContainsRune(string(inner), '\\') {
		return string(inner), nil
	}
	var n string
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotObject, err)
	}
	return n, nil
}

// skipString moves past the string at s.i and returns its end.
func (s *scanner) skipString() int {
	s.i++ // opening quote
	for s.b[s.i] != '"' {
		if s.b[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i++
	return s.i
}

// skipValue moves past the value at s.i. Nesting is counted, not recursed
// into, so its depth costs nothing.
func (s *scanner) skipValue() {
	switch s.b[s.i] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for {
			switch s.b[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return
			}
		}
	default: // number or literal
		for s.i < len(s.b) && !strings.ContainsRune(",}] \t\r\n", rune(s.b[s.i])) {
			s.i++
		}
	}
}

// appendQuoted appends s, printable ASCII, as a JSON string.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}
