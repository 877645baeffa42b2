// This file holds the walk from a JSON text's root to the value a
// pointer names. It runs only on texts json.Valid accepted, so it checks
// structure nowhere: it only finds where values begin and end.

package selectjson

import (
	"bytes"
	"encoding/json"
)

// maxIndex bounds an array index token: no body the middleware reads holds
// an array that long, and a longer token is taken to name nothing.
const maxIndex = 1 << 30

// lookup returns the value tokens name in text, a valid JSON text:
// found is false when it names nothing, ok false when an object on the
// way makes it ambiguous (see the package documentation).
func lookup(text []byte, tokens []string) (v []byte, found, ok bool) {
	i := skipSpace(text, 0)
	for _, tok := range tokens {
		switch text[i] {
		case '{':
			at, found, ok := member(text, i, tok)
			if !ok || !found {
				return nil, false, ok
			}
			i = at
		case '[':
			at, found := element(text, i, tok)
			if !found {
				return nil, false, true
			}
			i = at
		default: // a scalar has no members
			return nil, false, true
		}
	}
	return text[i:skipValue(text, i)], true, true
}

// member returns where the value of the object at text[i] named tok
// starts. It reads the whole object: a second member named tok, or one
// whose name equals tok only under case folding, is ambiguous (ok false).
func member(text []byte, i int, tok string) (at int, found, ok bool) {
	want := []byte(tok)
	i = skipSpace(text, i+1)
	if text[i] == '}' {
		return 0, false, true
	}
	for {
		end := skipString(text, i)
		name := text[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var s string
			if json.Unmarshal(text[i:end], &s) != nil {
				return 0, false, false // unreachable in a valid text
			}
			name = []byte(s)
		}
		i = skipSpace(text, end)
		i = skipSpace(text, i+1) // the ':'
		switch {
		case bytes.Equal(name, want):
			if found {
				return 0, false, false
			}
			at, found = i, true
		case bytes.EqualFold(name, want):
			return 0, false, false
		}
		i = skipSpace(text, skipValue(text, i))
		if text[i] == '}' {
			return at, found, true
		}
		i = skipSpace(text, i+1) // the ','
	}
}

// element returns where the element of the array at text[i] that tok
// indexes starts. tok must be an index as RFC 6901 spells it: "0", or
// digits without a leading zero.
func element(text []byte, i int, tok string) (at int, found bool) {
	n, ok := index(tok)
	if !ok {
		return 0, false
	}
	i = skipSpace(text, i+1)
	if text[i] == ']' {
		return 0, false
	}
	for k := 0; ; k++ {
		if k == n {
			return i, true
		}
		i = skipSpace(text, skipValue(text, i))
		if text[i] == ']' {
			return 0, false
		}
		i = skipSpace(text, i+1) // the ','
	}
}

// index parses an array index token.
func index(tok string) (int, bool) {
	if tok == "" || len(tok) > 1 && tok[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
		if n >= maxIndex {
			return 0, false
		}
	}
	return n, true
}

// skipValue returns the end of the value that starts at text[i].
func skipValue(text []byte, i int) int {
	switch text[i] {
	case '"':
		return skipString(text, i)
	case '{', '[':
		depth := 0
		for {
			switch text[i] {
			case '"':
				i = skipString(text, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(text) {
		switch text[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// skipString returns the end of the string whose quote is text[i].
func skipString(text []byte, i int) int {
	for i++; text[i] != '"'; i++ {
		if text[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(text []byte, i int) int {
	for i < len(text) {
		switch text[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}
