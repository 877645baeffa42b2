package pgstore

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		h    http.Header
	}{
		{"nil", nil},
		{"empty", http.Header{}},
		{"one", http.Header{"Content-Type": {"application/json"}}},
		{"many values", http.Header{"X-Multi": {"one", "", "three"}, "Location": {"/orders/42"}}},
		{"not UTF-8", http.Header{"Content-Disposition": {"attachment; filename=\"caf\xe9.txt\""}}},
		{"NUL and control bytes", http.Header{"X-Odd": {"a\x00b\x01\x7f"}}},
		{"long value", http.Header{"X-Long": {string(make([]byte, 70000))}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeHeader(encodeHeader(tc.h))
			require.NoError(t, err)
			require.Equal(t, tc.h, got)
		})
	}
}

func TestHeaderDecodeRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		b    []byte
	}{
		{"empty", []byte{}},
		{"unknown version", []byte{2, 0}},
		{"no count", []byte{1}},
		{"count beyond input", []byte{1, 5, 1, 'a', 0}},
		{"truncated name", []byte{1, 1, 4, 'a'}},
		{"truncated value", []byte{1, 1, 1, 'a', 1, 3, 'x'}},
		{"trailing bytes", []byte{1, 0, 0}},
		{"duplicate name", []byte{1, 2, 1, 'a', 0, 1, 'a', 0}},
		{"varint not shortest", []byte{1, 0x80, 0x00}},
		{"names out of order", []byte{1, 2, 1, 'b', 0, 1, 'a', 0}},
		{"overlong varint", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeHeader(tc.b)
			require.ErrorIs(t, err, errBadHeader)
		})
	}
}

// FuzzHeaderDecode: decoding arbitrary bytes never panics, and whatever
// decodes encodes back to the same bytes (the format has one encoding per
// header).
func FuzzHeaderDecode(f *testing.F) {
	f.Add(encodeHeader(http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}}))
	f.Add(encodeHeader(http.Header{}))
	f.Add([]byte{1, 1, 1, 'a', 2, 0, 1, 'b'})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(b)
		if err != nil {
			return
		}
		require.Equal(t, b, encodeHeader(h))
	})
}
