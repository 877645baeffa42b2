package redisstore

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parser under decodeHeader is internal/wire's, fuzzed there
// (FuzzDecoder) and through pgstore's header, which is this one's format;
// these tests pin what redisstore adds: the version byte, nil as no bytes,
// and the bytes records already stored in Redis hold.

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

// TestHeaderPinnedBytes: the encoding of records already in Redis does not
// change.
func TestHeaderPinnedBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		h    http.Header
		b    []byte
	}{
		{"nil", nil, nil},
		{"empty", http.Header{}, []byte{1, 0}},
		{"two fields", http.Header{"C": {"", "\xff\xfe"}, "A": {"b"}},
			[]byte("\x01\x02\x01A\x01\x01b\x01C\x02\x00\x02\xff\xfe")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.b, encodeHeader(tt.h))
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
		{"version only", []byte{1}},
		{"count beyond input", []byte{1, 5}},
		{"truncated value", []byte{1, 1, 1, 'A', 1, 3, 'x'}},
		{"trailing bytes", []byte{1, 0, 0}},
		{"names out of order", []byte{1, 2, 1, 'B', 0, 1, 'A', 0}},
		{"name repeated", []byte{1, 2, 1, 'A', 0, 1, 'A', 0}},
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
