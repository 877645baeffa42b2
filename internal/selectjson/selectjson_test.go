package selectjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/internal/canonjson"
)

func TestParsePointer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in     string
		tokens []string
	}{
		{"", nil},
		{"/", []string{""}},
		{"/amount", []string{"amount"}},
		{"/customer/id", []string{"customer", "id"}},
		{"/a~1b/m~0n", []string{"a/b", "m~n"}},
		{"/~01", []string{"~1"}}, // "~0" first, then a literal '1'
		{"/items/0/sku", []string{"items", "0", "sku"}},
		{"/é", []string{"é"}},
	} {
		p, err := ParsePointer(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.tokens, p.tokens, c.in)
		assert.Equal(t, c.in, p.String())
	}
	for _, bad := range []string{"amount", "/a~", "/a~2", "/items/-", "/\xff"} {
		_, err := ParsePointer(bad)
		assert.ErrorIs(t, err, ErrPointer, "%q", bad)
	}
}

// sel selects from text by the pointers and returns the encoding.
func sel(t *testing.T, text string, ptrs ...string) ([]byte, bool) {
	t.Helper()
	r, err := NewRule(ptrs, nil, "")
	require.NoError(t, err)
	var c canonjson.Canonicalizer
	return Append(nil, []byte(text), r.Select, &c)
}

func TestSameSelection(t *testing.T) {
	t.Parallel()
	ptrs := []string{"/amount", "/customer/id", "/items/1", "/missing"}
	base := `{"amount":100,"customer":{"id":"c1","name":"Ann"},"items":["a",{"y":2,"x":1}],"ts":1}`
	want, ok := sel(t, base, ptrs...)
	require.True(t, ok)
	for name, text := range map[string]string{
		"an ignored field changed": `{"amount":100,"customer":{"id":"c1","name":"Bob"},"items":["a",{"y":2,"x":1}],"ts":2}`,
		"an ignored field dropped": `{"amount":100,"customer":{"id":"c1"},"items":["a",{"y":2,"x":1}]}`,
		"member order and space":   ` { "items" : [ "a" , {"x":1,"y":2} ], "customer":{"id":"c1"},"amount":100 } `,
		"a string's escapes":       `{"amount":100,"customer":{"\u0069d":"\u00631"},"items":["a",{"y":2,"x":1}]}`,
		"an ignored element added": `{"amount":100,"customer":{"id":"c1"},"items":["a",{"y":2,"x":1},"c"]}`,
	} {
		got, ok := sel(t, text, ptrs...)
		require.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for name, text := range map[string]string{
		"a selected number":        `{"amount":101,"customer":{"id":"c1"},"items":["a",{"y":2,"x":1}]}`,
		"a selected number's text": `{"amount":100.0,"customer":{"id":"c1"},"items":["a",{"y":2,"x":1}]}`,
		"a nested value":           `{"amount":100,"customer":{"id":"c2"},"items":["a",{"y":2,"x":1}]}`,
		"an element":               `{"amount":100,"customer":{"id":"c1"},"items":["a",{"y":3,"x":1}]}`,
		"an element moved":         `{"amount":100,"customer":{"id":"c1"},"items":[{"y":2,"x":1},"a"]}`,
		"absent becomes null":      `{"amount":100,"customer":{"id":"c1"},"items":["a",{"y":2,"x":1}],"missing":null}`,
		"a selected field dropped": `{"customer":{"id":"c1"},"items":["a",{"y":2,"x":1}]}`,
	} {
		got, ok := sel(t, text, ptrs...)
		require.True(t, ok, name)
		assert.NotEqual(t, want, got, name)
	}
}

func TestAmbiguousOrInvalid(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"a repeated member":            `{"amount":1,"amount":2}`,
		"a member under another case":  `{"amount":1,"Amount":2}`,
		"a repeated member on the way": `{"customer":{"id":"a"},"customer":{"id":"b"}}`,
		"not JSON":                     `{"amount":`,
		"two values":                   `{} {}`,
	} {
		_, ok := sel(t, text, "/amount", "/customer/id")
		assert.False(t, ok, name)
	}
	// A repeat away from the pointers' way, or inside the value selected,
	// is no ambiguity: the value is taken as written.
	_, ok := sel(t, `{"amount":1,"note":{"a":1,"a":2}}`, "/amount")
	assert.True(t, ok)
	a, ok := sel(t, `{"amount":{"a":1,"a":2}}`, "/amount")
	require.True(t, ok)
	b, _ := sel(t, `{"amount":{"a":2,"a":1}}`, "/amount")
	assert.NotEqual(t, a, b, "a value with no canonical form counts byte for byte")
}

func TestPointerIntoScalarsAndArrays(t *testing.T) {
	t.Parallel()
	absent, ok := sel(t, `{}`, "/a/b")
	require.True(t, ok)
	for _, text := range []string{`{"a":1}`, `{"a":"s"}`, `{"a":[1]}`, `{"a":{}}`, `{"a":null}`, `[1]`, `7`} {
		got, ok := sel(t, text, "/a/b")
		require.True(t, ok, text)
		assert.Equal(t, absent, got, text)
	}
	for _, tok := range []string{"01", "1x", "99999999999", ""} {
		got, ok := sel(t, `[1,2,3]`, "/"+tok)
		require.True(t, ok, tok)
		none, _ := sel(t, `[]`, "/"+tok)
		assert.Equal(t, none, got, "%q indexes nothing", tok)
	}
	// On an object, a digit token is a member name.
	a, _ := sel(t, `{"0":"x"}`, "/0")
	b, _ := sel(t, `["x"]`, "/0")
	assert.Equal(t, a[len(a)-3:], b[len(b)-3:], "the same value")
}

func TestRule(t *testing.T) {
	t.Parallel()
	a, err := NewRule([]string{"/b", "/a", "/b"}, []string{"/c"}, "")
	require.NoError(t, err)
	b, err := NewRule([]string{"/a", "/b"}, []string{"/c", "/c"}, "")
	require.NoError(t, err)
	assert.Equal(t, a.ID, b.ID, "order and repeats do not make another rule")
	assert.Len(t, a.ID, 16)
	assert.Equal(t, []string{"/a", "/b"}, []string{a.Select[0].String(), a.Select[1].String()})

	c, _ := NewRule([]string{"/a", "/b"}, nil, "")
	d, _ := NewRule([]string{"/a"}, []string{"/b"}, "")
	e, _ := NewRule(nil, []string{"/b"}, "v1")
	f, _ := NewRule(nil, []string{"/b"}, "v2")
	ids := map[string]bool{a.ID: true, c.ID: true, d.ID: true, e.ID: true, f.ID: true}
	assert.Len(t, ids, 5, "each rule has its own ID")

	for name, r := range map[string]struct {
		sel, check []string
		custom     string
	}{
		"nothing keys":        {nil, []string{"/a"}, ""},
		"two keyings":         {[]string{"/a"}, nil, "v1"},
		"a bad Select":        {[]string{"a"}, nil, ""},
		"a bad Check":         {[]string{"/a"}, []string{"/a~"}, ""},
		"too many pointers":   {manyPointers(MaxPointers + 1), nil, ""},
		"'-' names no member": {[]string{"/items/-"}, nil, ""},
	} {
		_, err := NewRule(r.sel, r.check, r.custom)
		assert.ErrorIs(t, err, ErrPointer, name)
	}
}

func manyPointers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "/f" + strconv.Itoa(i)
	}
	return out
}

// FuzzAppend checks that a selection never panics, does not depend on
// whitespace, and, in a text with no repeated member names anywhere,
// names what encoding/json finds at the pointer.
func FuzzAppend(f *testing.F) {
	for _, s := range []struct{ text, ptr string }{
		{`{"a":{"b":[1,{"c":"x"}]}}`, "/a/b/1/c"},
		{`{"a":1,"A":2}`, "/a"},
		{`[0,1,2]`, "/2"},
		{`{"a~b":{"c/d":true}}`, "/a~0b/c~1d"},
		{`{"\u0061":"\ud800"}`, "/a"},
		{` {"": {"": null}} `, "//"},
		{`"s"`, ""},
	} {
		f.Add([]byte(s.text), s.ptr)
	}
	f.Fuzz(func(t *testing.T, text []byte, ptr string) {
		p, err := ParsePointer(ptr)
		if err != nil {
			if !errors.Is(err, ErrPointer) {
				t.Fatalf("ParsePointer(%q): %v does not wrap ErrPointer", ptr, err)
			}
			return
		}
		var c canonjson.Canonicalizer
		got, ok := Append(nil, text, []Pointer{p}, &c)
		if !ok {
			return
		}
		v, found, _ := lookup(text, p.tokens)
		if found && !json.Valid(v) {
			t.Fatalf("lookup(%q, %q) = %q, not a JSON value", text, ptr, v)
		}
		if _, canon := c.Append(nil, text); !canon {
			return // repeated names somewhere, or values taken as written
		}
		var spaced bytes.Buffer
		if json.Indent(&spaced, text, "", "  ") == nil {
			again, ok := Append(nil, spaced.Bytes(), []Pointer{p}, &c)
			if !ok || !bytes.Equal(got, again) {
				t.Fatalf("whitespace changed the selection of %q by %q", text, ptr)
			}
		}
		d := json.NewDecoder(bytes.NewReader(text))
		d.UseNumber()
		var doc any
		if d.Decode(&doc) != nil {
			return
		}
		want, wantFound := walk(doc, p.tokens)
		if found != wantFound {
			t.Fatalf("lookup(%q, %q): found %v, encoding/json says %v", text, ptr, found, wantFound)
		}
		if found {
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			var val any
			if err := d.Decode(&val); err != nil || !reflect.DeepEqual(val, want) {
				t.Fatalf("lookup(%q, %q) = %q, encoding/json finds %v", text, ptr, v, want)
			}
		}
	})
}

// walk is the reference lookup over a decoded document.
func walk(doc any, tokens []string) (any, bool) {
	for _, tok := range tokens {
		switch v := doc.(type) {
		case map[string]any:
			var ok bool
			if doc, ok = v[tok]; !ok {
				return nil, false
			}
		case []any:
			n, ok := index(tok)
			if !ok || n >= len(v) {
				return nil, false
			}
			doc = v[n]
		default:
			return nil, false
		}
	}
	return doc, true
}
