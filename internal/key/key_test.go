package key

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string
		p        Problem
	}{
		{"abc", "abc", OK},
		{`"abc"`, "abc", OK},
		{`"a\"b\\c"`, `a"b\c`, OK},
		{strings.Repeat("k", MaxLen), strings.Repeat("k", MaxLen), OK},
		{`"` + strings.Repeat("k", MaxLen) + `"`, strings.Repeat("k", MaxLen), OK},
		{"", "", Empty},
		{`""`, "", Empty},
		{strings.Repeat("k", MaxLen+1), "", TooLong},
		{`"` + strings.Repeat(`\"`, MaxLen+1) + `"`, "", TooLong},
		{"a\tb", "", NotPrintable},
		{`"a` + "\x7f" + `"`, "", NotPrintable},
		{`"abc`, "", BadQuoting},
		{`"a\nb"`, "", BadQuoting},
		{`"abc";x=1`, "", Trailing},
		// Two field lines merged by a proxy (RFC 9110, 5.3), in each form.
		{"a, b", "", List},
		{"a,b", "", List},
		{"a,\tb", "", NotPrintable},
		{`"a, b"`, "", List},
		{`"a,b"`, "", List},
		{`"a", "b"`, "", Trailing},
		{",", "", List},
		{"a,", "", List},
	}
	for _, tc := range cases {
		got, p := Parse(tc.in)
		assert.Equal(t, tc.p, p, "%q", tc.in)
		if p == OK {
			assert.Equal(t, tc.want, got, "%q", tc.in)
			again, p := Parse(Quote(got))
			assert.Equal(t, OK, p)
			assert.Equal(t, got, again, "quoting round-trips")
		} else {
			assert.Empty(t, got)
			assert.NotEqual(t, "unknown problem", p.String())
		}
	}
}

func TestInvalidErrorQuotesTheValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"", `idem: invalid idempotency key "": empty`},
		{"a\tb", `idem: invalid idempotency key "a\tb": not printable ASCII`},
		{"a, b", `idem: invalid idempotency key "a, b": holds a comma (a list of keys, as two header lines merged into one)`},
		{`"abc`, `idem: invalid idempotency key "\"abc": malformed quoted string`},
		{strings.Repeat("k", 300), `idem: invalid idempotency key "` + strings.Repeat("k", 64) + `..." (300 bytes): longer than 255 characters`},
	} {
		_, p := Parse(tc.in)
		err := Invalid(tc.in, p)
		assert.Equal(t, tc.want, err.Error())
		assert.ErrorIs(t, err, ErrInvalid)
	}
}
