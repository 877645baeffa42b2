package redisstore

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		h    http.Header
	}{
		{"nil", nil},
		{"empty", http.Header{}},
		{"values", http.Header{"Content-Type": {"application/json"}, "X-Multi": {"one", "", "three"}}},
		{"bytes JSON refuses", http.Header{"X-Raw": {"\x00\xff\xfe obs-text \x80"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeHeader(encodeHeader(tt.h))
			require.NoError(t, err)
			assert.Equal(t, tt.h, got)
		})
	}
}

func TestHeaderDecodeMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    []byte
	}{
		{"wrong version", []byte{2, 0}},
		{"count beyond input", []byte{1, 5}},
		{"truncated value", []byte{1, 1, 1, 'A', 1, 3, 'x'}},
		{"trailing bytes", []byte{1, 0, 0}},
		{"names out of order", []byte{1, 2, 1, 'B', 0, 1, 'A', 0}},
		{"long varint", []byte{1, 0x80, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeHeader(tt.b)
			assert.Error(t, err)
		})
	}
}

// FuzzHeaderDecode checks that decoding never panics and that whatever
// decodes encodes back to the same bytes.
func FuzzHeaderDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add(encodeHeader(http.Header{}))
	f.Add(encodeHeader(http.Header{"A": {"b", "c"}, "D": {""}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(b)
		if err != nil || len(b) == 0 {
			return
		}
		require.Equal(t, b, encodeHeader(h))
	})
}
