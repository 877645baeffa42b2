package wire

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Unix(1764500000, 123456789)
	h := http.Header{"B": {"x", ""}, "A": {"caf\xe9\x00"}}
	var b []byte
	b = AppendUvarint(b, 300)
	b = AppendString(b, "key")
	b = AppendBytes(b, nil)
	b = AppendBytes(b, []byte{0, 1})
	b = AppendTime(b, at)
	b = AppendTime(b, time.Time{})
	b = AppendTime(b, time.Unix(-5, 0))
	b = AppendHeader(b, h)
	b = AppendHeader(b, nil)

	d := NewDecoder(b)
	assert.Equal(t, uint64(300), d.Uvarint(1000))
	assert.Equal(t, "key", d.String())
	assert.Nil(t, d.Bytes())
	assert.Equal(t, []byte{0, 1}, d.Bytes())
	assert.True(t, at.Equal(d.Time()))
	assert.True(t, d.Time().IsZero())
	assert.True(t, time.Unix(-5, 0).Equal(d.Time()))
	assert.Equal(t, h, d.Header())
	assert.Nil(t, d.Header())
	require.NoError(t, d.End())
}

// The bytes are pinned: fingerprints and derived keys hash them, and
// journals and stored rows hold them.
func TestPinnedBytes(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []byte{3, 'a', 'b', 'c'}, AppendString(nil, "abc"))
	assert.Equal(t, []byte{0xac, 0x02}, AppendUvarint(nil, 300))
	assert.Equal(t, []byte{0}, AppendTime(nil, time.Time{}))
	assert.Equal(t, []byte{2, 1, 'A', 1, 1, 'x', 1, 'B', 0},
		AppendHeader(nil, http.Header{"B": {}, "A": {"x"}}), "fields in name order")
	assert.Len(t, AppendString(nil, string(make([]byte, 200))), 202)
}

func TestStrict(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   []byte
		read func(*Decoder)
	}{
		{"uvarint not shortest", []byte{0x80, 0x00}, func(d *Decoder) { d.Uvarint(1 << 20) }},
		{"varint not shortest", []byte{0x80, 0x00}, func(d *Decoder) { d.Varint() }},
		{"uvarint overflow", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, func(d *Decoder) { d.Uvarint(^uint64(0)) }},
		{"uvarint over max", []byte{10}, func(d *Decoder) { d.Uvarint(9) }},
		{"truncated varint", []byte{0x80}, func(d *Decoder) { d.Uvarint(1 << 20) }},
		{"length beyond input", []byte{5, 'a'}, func(d *Decoder) { _ = d.String() }},
		{"count beyond input", []byte{5, 1, 'a', 0}, func(d *Decoder) { d.Header() }},
		{"truncated value", []byte{1, 1, 'a', 1, 3, 'x'}, func(d *Decoder) { d.Header() }},
		{"repeated name", []byte{2, 1, 'a', 0, 1, 'a', 0}, func(d *Decoder) { d.Header() }},
		{"trailing bytes", []byte{0, 0}, func(d *Decoder) { d.Header() }},
		{"take past end", []byte{1, 2}, func(d *Decoder) { d.Take(3) }},
		{"empty", nil, func(d *Decoder) { d.Byte() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := NewDecoder(tc.in)
			tc.read(d)
			require.ErrorIs(t, d.End(), ErrMalformed)
			assert.Zero(t, d.Uvarint(1), "reads after an error return zero")
			assert.Zero(t, d.Len())
		})
	}
}

func TestHeaderAnyOrder(t *testing.T) {
	t.Parallel()
	// Headers written before AppendHeader sorted names still decode.
	d := NewDecoder([]byte{2, 1, 'b', 0, 1, 'a', 1, 1, 'x'})
	assert.Equal(t, http.Header{"b": {}, "a": {"x"}}, d.Header())
	require.NoError(t, d.End())
	d = NewDecoder([]byte{2, 1, 'b', 0, 1, 'a', 1, 1, 'x'})
	d.SortedHeader()
	require.ErrorIs(t, d.End(), ErrMalformed, "SortedHeader refuses names out of order")
}

func FuzzDecoder(f *testing.F) {
	f.Add(AppendHeader(AppendTime(AppendString(nil, "k"), time.Unix(1, 2)), http.Header{"A": {"b"}}))
	f.Add([]byte{0x80, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewDecoder(in)
		s := d.String()
		at := d.Time()
		h := d.Header()
		if d.End() != nil {
			return
		}
		// What decodes re-encodes to the same bytes, up to header order.
		again := NewDecoder(AppendHeader(AppendTime(AppendString(nil, s), at), h))
		require.Equal(t, s, again.String())
		require.True(t, at.Equal(again.Time()))
		require.Equal(t, h, again.Header())
		require.NoError(t, again.End())
	})
}
