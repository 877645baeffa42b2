// Package canonjson writes JSON texts in one canonical form, so that two
// requests whose JSON bodies differ only in member order or whitespace are
// the same request, on the client (the journal's fingerprint) and on the
// server (the stored fingerprint) alike.
//
// The canonical form: no insignificant whitespace, object members sorted
// by name, every string in one spelling (escapes decoded; `"`, `\` and
// control characters escaped the same way each time; lone surrogates kept
// as lowercase \u escapes), numbers, literals and array order kept exactly
// as written (1.0 and 1 differ). Two texts with the same canonical form
// decode to the same value.
//
// Some texts have no canonical form, and a caller then compares the bytes
// as they are:
//
//   - an object with two member names equal under case folding
//     ({"a":1,"a":2}, {"Amount":1,"amount":2}): decoders read it
//     differently (encoding/json matches names regardless of case and keeps
//     the last);
//   - nesting deeper than [MaxDepth];
//   - a text whose sorting would cost more than [WorkFactor] times its
//     size in copying: every object whose members are out of order is
//     rewritten once, so deeply nested out-of-order objects would cost
//     time in proportion to size times depth. The bound keeps the cost
//     linear in the size; real request bodies stay far below it.
package canonjson

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxDepth bounds the nesting the canonicaliser follows.
const MaxDepth = 512

// WorkFactor bounds the bytes sorting may copy, as a multiple of the
// text's size (plus 64 KiB, so small texts are never refused).
const WorkFactor = 8

// IsJSON reports whether a Content-Type value names JSON:
// application/json or any media type ending in +json.
func IsJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	const suffix = "+json"
	return strings.EqualFold(mt, "application/json") ||
		len(mt) > len(suffix) && strings.EqualFold(mt[len(mt)-len(suffix):], suffix)
}

// A Canonicalizer rewrites JSON texts into their canonical form, reusing
// its buffers from one text to the next. The zero value is ready to use.
// It is not safe for concurrent use.
type Canonicalizer struct {
	src     []byte
	pos     int
	out     []byte
	members []span // member spans in out, a stack shared by nested objects
	scratch []byte
	depth   int
	budget  int // bytes sorting may still copy
}

// span is one member in out: its canonical name is out[from:colon], its
// whole text out[from:to].
type span struct{ from, colon, to int }

// Append appends the canonical form of src to dst. It reports false, with
// dst's new contents unspecified, if src is not a single valid JSON value
// in UTF-8 or has no canonical form (see the package documentation).
func (c *Canonicalizer) Append(dst, src []byte) ([]byte, bool) {
	c.src, c.pos, c.out, c.members, c.depth = src, 0, dst, c.members[:0], 0
	c.budget = WorkFactor*len(src) + 64<<10
	c.space()
	ok := c.value()
	c.space()
	ok = ok && c.pos == len(src)
	out := c.out
	c.src, c.out = nil, nil
	return out, ok
}

func (c *Canonicalizer) space() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *Canonicalizer) value() bool {
	if c.pos >= len(c.src) {
		return false
	}
	switch ch := c.src[c.pos]; {
	case ch == '{':
		return c.enter() && c.object()
	case ch == '[':
		return c.enter() && c.array()
	case ch == '"':
		return c.string()
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	default:
		return c.number()
	}
}

// enter counts one more level of nesting; object and array leave it when
// they succeed (a failure ends the whole parse).
func (c *Canonicalizer) enter() bool {
	c.depth++
	return c.depth <= MaxDepth
}

func (c *Canonicalizer) literal(word string) bool {
	if !bytes.HasPrefix(c.src[c.pos:], []byte(word)) {
		return false
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
	return true
}

// number copies a number's literal text after checking its grammar.
func (c *Canonicalizer) number() bool {
	start := c.pos
	c.accept('-')
	switch {
	case c.accept('0'):
	case c.digits() == 0:
		return false
	}
	if c.accept('.') && c.digits() == 0 {
		return false
	}
	if c.accept('e') || c.accept('E') {
		if !c.accept('+') {
			c.accept('-')
		}
		if c.digits() == 0 {
			return false
		}
	}
	c.out = append(c.out, c.src[start:c.pos]...)
	return true
}

func (c *Canonicalizer) accept(ch byte) bool {
	if c.pos < len(c.src) && c.src[c.pos] == ch {
		c.pos++
		return true
	}
	return false
}

func (c *Canonicalizer) digits() int {
	n := 0
	for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
		c.pos++
		n++
	}
	return n
}

func (c *Canonicalizer) array() bool {
	c.pos++
	c.out = append(c.out, '[')
	c.space()
	if c.accept(']') {
		c.out = append(c.out, ']')
		c.depth--
		return true
	}
	for {
		c.space()
		if !c.value() {
			return false
		}
		c.space()
		switch {
		case c.accept(','):
			c.out = append(c.out, ',')
		case c.accept(']'):
			c.out = append(c.out, ']')
			c.depth--
			return true
		default:
			return false
		}
	}
}

// object writes each member ("name":value, canonical) into out, comma
// separated. If the members are not already in order, it sorts them by
// their canonical names, stably, and rewrites them.
func (c *Canonicalizer) object() bool {
	c.pos++
	c.out = append(c.out, '{')
	start, base := len(c.out), len(c.members)
	c.space()
	if c.accept('}') {
		c.out = append(c.out, '}')
		c.depth--
		return true
	}
	sorted := true
	for {
		c.space()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return false
		}
		if len(c.members) > base {
			c.out = append(c.out, ',')
		}
		from := len(c.out)
		if !c.string() {
			return false
		}
		colon := len(c.out)
		c.space()
		if !c.accept(':') {
			return false
		}
		c.out = append(c.out, ':')
		c.space()
		if !c.value() {
			return false
		}
		m := span{from, colon, len(c.out)}
		if len(c.members) > base {
			prev := c.members[len(c.members)-1]
			sorted = sorted && c.compareNames(prev, m) <= 0
		}
		c.members = append(c.members, m)
		c.space()
		if c.accept('}') {
			break
		}
		if !c.accept(',') {
			return false
		}
	}
	if c.foldedDuplicates(c.members[base:]) {
		return false
	}
	if !sorted {
		if c.budget -= len(c.out) - start; c.budget < 0 {
			return false // too costly to sort: compared byte for byte
		}
		c.sortMembers(start, c.members[base:])
	}
	c.out = append(c.out, '}')
	c.members = c.members[:base]
	c.depth--
	return true
}

// foldedDuplicates reports whether two members share a name under case
// folding. Decoders disagree on such objects (encoding/json matches names
// case-insensitively and keeps the last match; others keep the first, or
// both), so no canonical form can stand for all of them: the body is then
// fingerprinted as it is, byte for byte.
func (c *Canonicalizer) foldedDuplicates(ms []span) bool {
	if len(ms) < 2 {
		return false
	}
	name := func(m span) []byte { return c.out[m.from:m.colon] }
	if len(ms) <= 16 {
		for i := 1; i < len(ms); i++ {
			for j := range i {
				if bytes.EqualFold(name(ms[i]), name(ms[j])) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, len(ms))
	for _, m := range ms {
		k := strings.ToLower(strings.ToUpper(string(name(m)))) // ſ and K fold too
		if _, dup := seen[k]; dup {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}

// compareNames orders members by their canonical names.
func (c *Canonicalizer) compareNames(a, b span) int {
	return bytes.Compare(c.out[a.from:a.colon], c.out[b.from:b.colon])
}

// sortMembers rewrites out[start:] with members in order.
func (c *Canonicalizer) sortMembers(start int, members []span) {
	out := c.out
	slices.SortStableFunc(members, c.compareNames)
	c.scratch = append(c.scratch[:0], out[start:]...)
	c.out = out[:start]
	for i, m := range members {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, c.scratch[m.from-start:m.to-start]...)
	}
}

// string decodes a JSON string and writes it in its canonical spelling.
// Runs of characters that need no escaping are copied as they are.
func (c *Canonicalizer) string() bool {
	c.pos++
	c.out = append(c.out, '"')
	for c.pos < len(c.src) {
		run := c.pos
		for run < len(c.src) && plain(c.src[run]) {
			run++
		}
		c.out = append(c.out, c.src[c.pos:run]...)
		c.pos = run
		if c.pos == len(c.src) {
			break
		}
		switch ch := c.src[c.pos]; {
		case ch == '"':
			c.pos++
			c.out = append(c.out, '"')
			return true
		case ch == '\\':
			if !c.escape() {
				return false
			}
		case ch < 0x20:
			return false
		default:
			r, n := utf8.DecodeRune(c.src[c.pos:])
			if r == utf8.RuneError && n == 1 {
				return false
			}
			c.pos += n
			c.out = append(c.out, c.src[c.pos-n:c.pos]...)
		}
	}
	return false
}

// plain reports whether an ASCII byte inside a string is written as it
// is: not a quote, a backslash, a control character or part of a
// multi-byte character.
func plain(ch byte) bool { return ch >= 0x20 && ch < utf8.RuneSelf && ch != '"' && ch != '\\' }

func (c *Canonicalizer) escape() bool {
	if c.pos+1 >= len(c.src) {
		return false
	}
	ch := c.src[c.pos+1]
	c.pos += 2
	switch ch {
	case '"', '\\', '/':
		c.writeRune(rune(ch))
	case 'b':
		c.writeRune('\b')
	case 'f':
		c.writeRune('\f')
	case 'n':
		c.writeRune('\n')
	case 'r':
		c.writeRune('\r')
	case 't':
		c.writeRune('\t')
	case 'u':
		r, ok := c.hex4()
		if !ok {
			return false
		}
		if utf8.ValidRune(r) {
			c.writeRune(r)
			return true
		}
		if r < 0xdc00 && bytes.HasPrefix(c.src[c.pos:], []byte(`\u`)) {
			save := c.pos
			c.pos += 2
			lo, ok := c.hex4()
			if ok && lo >= 0xdc00 && lo <= 0xdfff {
				c.writeRune(0x10000 + (r-0xd800)<<10 + (lo - 0xdc00))
				return true
			}
			c.pos = save
		}
		c.writeSurrogate(r)
	default:
		return false
	}
	return true
}

func (c *Canonicalizer) hex4() (rune, bool) {
	if c.pos+4 > len(c.src) {
		return 0, false
	}
	var r rune
	for _, h := range c.src[c.pos : c.pos+4] {
		var d byte
		switch {
		case h >= '0' && h <= '9':
			d = h - '0'
		case h >= 'a' && h <= 'f':
			d = h - 'a' + 10
		case h >= 'A' && h <= 'F':
			d = h - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	c.pos += 4
	return r, true
}

const hexDigits = "0123456789abcdef"

// writeRune writes one decoded character in its canonical spelling.
func (c *Canonicalizer) writeRune(r rune) {
	switch r {
	case '"':
		c.out = append(c.out, `\"`...)
	case '\\':
		c.out = append(c.out, `\\`...)
	case '\b':
		c.out = append(c.out, `\b`...)
	case '\f':
		c.out = append(c.out, `\f`...)
	case '\n':
		c.out = append(c.out, `\n`...)
	case '\r':
		c.out = append(c.out, `\r`...)
	case '\t':
		c.out = append(c.out, `\t`...)
	default:
		if r < 0x20 {
			c.out = append(c.out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
			return
		}
		c.out = utf8.AppendRune(c.out, r)
	}
}

// writeSurrogate writes a lone UTF-16 surrogate, which has no UTF-8 form,
// as a lowercase \u escape.
func (c *Canonicalizer) writeSurrogate(r rune) {
	c.out = append(c.out, '\\', 'u',
		hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
