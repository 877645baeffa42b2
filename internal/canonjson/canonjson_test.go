package canonjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func canonical(src string) (string, bool) {
	var c Canonicalizer
	out, ok := c.Append(nil, []byte(src))
	return string(out), ok
}

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string // want "" means not canonicalisable
	}{
		{"scalars", ` 1 `, `1`},
		{"negative exponent", `-0.5e-10`, `-0.5e-10`},
		{"literals", `[true,false,null]`, `[true,false,null]`},
		{"sorted members", `{"b":1,"a":2,"c":{"z":0,"y":[{"q":1,"p":2}]}}`, `{"a":2,"b":1,"c":{"y":[{"p":2,"q":1}],"z":0}}`},
		{"empty containers", `{ "a" : [ ] , "b" : { } }`, `{"a":[],"b":{}}`},
		{"escapes decoded", `"\u0041\/\u00e9\ud83d\ude00"`, `"A/é😀"`},
		{"escapes kept", `"\"\\\b\f\n\r\t\u0001"`, `"\"\\\b\f\n\r\t\u0001"`},
		{"lone surrogate", `"\uD800x"`, `"\ud800x"`},
		{"high surrogate then non-low", `"\ud800\u0041"`, `"\ud800A"`},
		{"utf8 kept", `"é\u2028"`, "\"é\u2028\""},
		{"duplicate names: no canonical form", `{"a":2,"a":1}`, ""},
		{"names equal under case folding: no canonical form", `{"Amount":100,"amount":1}`, ""},
		{"names equal under Unicode folding", `{"\u212a":1,"k":2}`, ""},
		{"nested duplicates", `{"x":{"b":0,"B":1}}`, ""},
		{"a name that prefixes another", `{"ab":1,"a":2}`, `{"a":2,"ab":1}`},
		{"trailing comma", `[1,]`, ""},
		{"leading zero", `01`, ""},
		{"bare dot", `1.`, ""},
		{"missing exponent digits", `1e`, ""},
		{"plus sign", `+1`, ""},
		{"unterminated string", `"abc`, ""},
		{"control char in string", "\"a\nb\"", ""},
		{"bad escape", `"\x"`, ""},
		{"short unicode escape", `"\u12"`, ""},
		{"invalid utf8", "\"\xff\"", ""},
		{"two values", `1 2`, ""},
		{"empty", ``, ""},
		{"unquoted member", `{a:1}`, ""},
		{"missing colon", `{"a" 1}`, ""},
		{"bad literal", `tru`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := canonical(tt.in)
			if tt.want == "" {
				assert.False(t, ok, "canonical form %q", got)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2,{"d":null,"c":"\u00e9"}]}`, `"\ud800"`, `[]`, `{"a":1,"a":2}`, `-1.5e+3`, `{"a":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		var c Canonicalizer
		out, ok := c.Append(nil, src)
		if !ok {
			if json.Valid(src) && utf8.Valid(src) && bytes.Count(src, []byte("["))+bytes.Count(src, []byte("{")) < MaxDepth && !hasDuplicateMembers(src) &&
				bytes.Count(src, []byte("{")) <= 32 { // more nested objects may exceed WorkFactor
				t.Fatalf("valid JSON %q not canonicalised", src)
			}
			return
		}
		require.True(t, json.Valid(src), "canonicalised invalid JSON %q", src)
		require.True(t, json.Valid(out), "canonical form %q is not JSON", out)
		again, ok := c.Append(nil, out)
		require.True(t, ok)
		require.Equal(t, string(out), string(again), "canonicalising is idempotent")
		// The canonical form decodes to what the text decodes to, with
		// duplicate names resolved the same way (the last one wins).
		decode := func(b []byte) any {
			var v any
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			require.NoError(t, d.Decode(&v))
			return v
		}
		require.Equal(t, decode(src), decode(out), "canonical form %q of %q decodes differently", out, src)
		if bytes.Contains(out, []byte(`\ud`)) || hasDuplicateMembers(src) {
			return // encoding/json replaces lone surrogates and drops duplicates
		}
		// Re-encoding the decoded value gives the same canonical form.
		var v any
		d := json.NewDecoder(bytes.NewReader(src))
		d.UseNumber()
		require.NoError(t, d.Decode(&v))
		re, err := json.Marshal(v)
		require.NoError(t, err)
		fromRe, ok := c.Append(nil, re)
		require.True(t, ok)
		require.Equal(t, string(out), string(fromRe))
	})
}

// hasDuplicateMembers reports whether any object in the JSON text src has
// two members whose names are equal under case folding.
func hasDuplicateMembers(src []byte) bool {
	d := json.NewDecoder(bytes.NewReader(src))
	type frame struct {
		names   map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err != nil {
			return false // io.EOF, or invalid JSON
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				if top != nil && !top.wantKey && top.names != nil {
					top.wantKey = true
				}
				f := &frame{}
				if tok == '{' {
					f.names, f.wantKey = map[string]bool{}, true
				}
				stack = append(stack, f)
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.names != nil && top.wantKey {
				tok = strings.ToLower(strings.ToUpper(tok))
				if top.names[tok] {
					return true
				}
				top.names[tok] = true
				top.wantKey = false
				continue
			}
			if top != nil && top.names != nil {
				top.wantKey = true
			}
		default:
			if top != nil && top.names != nil {
				top.wantKey = true
			}
		}
	}
}

// nestedUnsorted returns a JSON text of about size bytes: depth objects,
// each with its members out of order and the next one inside.
func nestedUnsorted(depth, size int) []byte {
	pad := strings.Repeat("x", max(0, size/depth-20))
	var b strings.Builder
	for range depth {
		b.WriteString(`{"z":"` + pad + `","a":`)
	}
	b.WriteString("0")
	for range depth {
		b.WriteString("}")
	}
	return []byte(b.String())
}

// flatUnsorted returns a JSON object of about size bytes with n members in
// reverse order.
func flatUnsorted(n, size int) []byte {
	pad := strings.Repeat("x", max(0, size/n-16))
	var b strings.Builder
	b.WriteString("{")
	for i := n; i > 0; i-- {
		if i < n {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%05d":"%s"`, i, pad)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// Sorting rewrites each out-of-order object once, so its cost grows with
// size times depth; past WorkFactor times the size the text is compared
// byte for byte instead, and the cost stays linear.
func TestSortingWorkIsBounded(t *testing.T) {
	t.Parallel()
	var c Canonicalizer
	_, ok := c.Append(nil, nestedUnsorted(500, 1<<20))
	assert.False(t, ok, "500 nested out-of-order objects in 1 MiB: over the bound")
	_, ok = c.Append(nil, nestedUnsorted(WorkFactor-1, 1<<20))
	assert.True(t, ok, "a few nested levels: canonicalised")
	_, ok = c.Append(nil, nestedUnsorted(30, 2<<10))
	assert.True(t, ok, "small texts are not refused")
	out, ok := c.Append(nil, flatUnsorted(500, 1<<20))
	require.True(t, ok, "a flat object of any size: canonicalised")
	assert.True(t, bytes.HasPrefix(out, []byte(`{"k00001"`)))
}

// BenchmarkAppend compares a flat and a deeply nested 1 MiB body, both out
// of order:
//
//	go test -run '^$' -bench BenchmarkAppend -benchmem ./internal/canonjson/
func BenchmarkAppend(b *testing.B) {
	for _, tc := range []struct {
		name string
		src  []byte
	}{
		{"flat-500", flatUnsorted(500, 1<<20)},
		{"nested-8", nestedUnsorted(8, 1<<20)},
		{"nested-500", nestedUnsorted(500, 1<<20)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var c Canonicalizer
			var out []byte
			b.SetBytes(int64(len(tc.src)))
			for b.Loop() {
				out, _ = c.Append(out[:0], tc.src)
			}
		})
	}
}
