// This file tests the journal record's encoding: round trips, versions and
// damage, and fuzzes the decoder.

package idem

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/internal/key"
	"github.com/idemhq/idem/internal/wire"
)

func sampleOperation() *Operation {
	now := time.Unix(1764500000, 123456789)
	return &Operation{
		Key:         NewKey(),
		Name:        "payout/2026-12-25/417",
		Method:      http.MethodPost,
		URL:         "http://127.0.0.1:8080/charges?x=1",
		Header:      http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}},
		Body:        []byte(`{"amount":1000,"currency":"usd"}`),
		Fingerprint: fingerprint(http.MethodPost, "http://127.0.0.1:8080/charges?x=1", "application/json", []byte(`{"amount":1000,"currency":"usd"}`)),
		State:       Completed,
		CreatedAt:   now,
		ExpiresAt:   now.Add(24 * time.Hour),
		UpdatedAt:   now.Add(time.Second),
		Attempts:    3,
		Response: &StoredResponse{
			StatusCode: 201,
			Header:     http.Header{"Content-Type": {"application/json"}},
			Body:       []byte(`{"id":"ch_1"}`),
			Truncated:  true,
			Replayed:   true,
		},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*Operation){
		"complete":  func(*Operation) {},
		"pending":   func(op *Operation) { op.State, op.Response = Pending, nil },
		"no body":   func(op *Operation) { op.Body, op.Header = nil, nil },
		"zero time": func(op *Operation) { op.UpdatedAt = time.Time{} },
		"host":      func(op *Operation) { op.Host = "api.example.test" },
		"no result header": func(op *Operation) {
			op.Response.Header, op.Response.Body = nil, nil
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			op := sampleOperation()
			mutate(op)
			got, err := decodeOperation(op.encode(nil))
			require.NoError(t, err)
			assert.True(t, op.CreatedAt.Equal(got.CreatedAt))
			assert.True(t, op.UpdatedAt.Equal(got.UpdatedAt))
			got.CreatedAt, got.ExpiresAt, got.UpdatedAt = op.CreatedAt, op.ExpiresAt, op.UpdatedAt
			assert.Equal(t, op, got)
		})
	}
}

// TestRecordEncodeAllocatesOnce: encode sizes its slice from the record's
// fields, so a record costs one allocation, not a slice grown field by
// field. (AllocsPerRun needs the test not to run in parallel.)
func TestRecordEncodeAllocatesOnce(t *testing.T) {
	long := sampleOperation()
	long.Body = bytes.Repeat([]byte("x"), 70000) // a three-byte length
	long.Response.Header["X-Many"] = []string{"a", "b", "c", "d"}
	for name, op := range map[string]*Operation{"sample": sampleOperation(), "long": long, "empty": {Key: "k"}} {
		t.Run(name, func(t *testing.T) {
			enc := op.encode(nil)
			assert.LessOrEqual(t, len(enc), op.recordSize())
			assert.Equal(t, 1.0, testing.AllocsPerRun(10, func() { op.encode(nil) }))
		})
	}
}

func TestRecordDecodeRefusesDamage(t *testing.T) {
	t.Parallel()
	enc := sampleOperation().encode(nil)
	cases := map[string][]byte{
		"empty":          nil,
		"future version": append([]byte{recordVersion + 1}, enc[1:]...),
		"bad state":      append([]byte{1, 9}, enc[2:]...),
		"truncated":      enc[:len(enc)-3],
		"trailing bytes": append(append([]byte(nil), enc...), 0),
		"huge length":    {1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeOperation(in)
			require.Error(t, err)
		})
	}
}

// TestRecordVersions: this release writes version 3 and reads the
// versions earlier releases wrote: version 1, and version 2, which is
// version 1 with Host after the URL.
func TestRecordVersions(t *testing.T) {
	t.Parallel()
	op := sampleOperation()
	op.Header = http.Header{"Content-Type": {"application/json"}} // one header: one byte order
	require.Equal(t, byte(recordVersion), op.encode(nil)[0])

	v1 := op.appendRecord(nil, 1)
	require.Equal(t, byte(1), v1[0])
	got, err := decodeOperation(v1)
	require.NoError(t, err)
	assert.Empty(t, got.Host)
	assert.Equal(t, op.Body, got.Body)

	op.Host = "payments.internal"
	v2 := op.appendRecord(nil, 2)
	require.Equal(t, byte(2), v2[0])
	head := wire.AppendString(wire.AppendString(wire.AppendString(wire.AppendString([]byte{byte(op.State)}, op.Key), op.Name), op.Method), op.URL)
	want := append(append(append([]byte{2}, head...), wire.AppendString(nil, op.Host)...), v1[1+len(head):]...)
	require.Equal(t, want, v2)
	got, err = decodeOperation(v2)
	require.NoError(t, err)
	assert.Equal(t, "payments.internal", got.Host)

	for _, version := range []byte{1, 2, 3} {
		got, err := decodeOperation(op.appendRecord(nil, version))
		require.NoError(t, err)
		assert.Equal(t, op.Response, got.Response, "version %d", version)
	}
}

// TestRecordKeyReuse: version 3 records whether the server said the key
// was reused; a 422 in an older record reads as key reuse only if its
// header and body say so.
func TestRecordKeyReuse(t *testing.T) {
	t.Parallel()
	op := sampleOperation()
	op.State = Failed
	op.Response = &StoredResponse{StatusCode: 400, KeyReused: true}
	got, err := decodeOperation(op.encode(nil))
	require.NoError(t, err)
	assert.True(t, got.Response.KeyReused)

	problem := http.Header{"Content-Type": {"application/problem+json"}}
	cases := []struct {
		name   string
		result StoredResponse
		want   bool
	}{
		{"idem's problem type", StoredResponse{StatusCode: 422, Header: problem, Body: []byte(`{"type":"` + key.ReusedProblemType + `"}`)}, true},
		{"validation error", StoredResponse{StatusCode: 422, Header: problem, Body: []byte(`{"title":"Validation failed"}`)}, false},
		{"no body", StoredResponse{StatusCode: 422}, false},
		{"not a 422", StoredResponse{StatusCode: 400, Header: problem, Body: []byte(`{"type":"` + key.ReusedProblemType + `"}`)}, false},
	}
	for _, tc := range cases {
		r := tc.result
		op.Response = &r
		got, err := decodeOperation(op.appendRecord(nil, 2))
		require.NoError(t, err)
		assert.Equal(t, tc.want, got.Response.KeyReused, tc.name)
	}
}

func FuzzDecodeOperation(f *testing.F) {
	f.Add(sampleOperation().encode(nil))
	pending := sampleOperation()
	pending.State, pending.Response = Pending, nil
	f.Add(pending.encode(nil))
	f.Add([]byte{1, 1, 0})
	f.Add(pending.appendRecord(nil, 1))
	f.Add(sampleOperation().appendRecord(nil, 2))
	f.Fuzz(func(t *testing.T, in []byte) {
		op, err := decodeOperation(in)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes, up to header order.
		again, err := decodeOperation(op.encode(nil))
		require.NoError(t, err)
		require.Equal(t, op, again)
	})
}

// TestRecordChecksum: a change to any byte of a record of the current
// version is an error, never a record that reads as something else
// (application/json become application/jsox, a body changed by one bit).
func TestRecordChecksum(t *testing.T) {
	t.Parallel()
	enc := sampleOperation().encode(nil)
	for i := range enc {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			damaged := append([]byte(nil), enc...)
			damaged[i] ^= mask
			_, err := decodeOperation(damaged)
			require.Error(t, err, "byte %d changed by %#x", i, mask)
		}
	}
	jsox := bytes.Replace(enc, []byte("application/json"), []byte("application/jsox"), 1)
	require.NotEqual(t, enc, jsox)
	_, err := decodeOperation(jsox)
	require.ErrorIs(t, err, errChecksum)
}
