package grpcidem

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestOutcomeRoundTrip: a response message and a final status with
// details come back as they went in.
func TestOutcomeRoundTrip(t *testing.T) {
	t.Parallel()
	msg, err := structpb.NewStruct(map[string]any{"id": "ch_1", "amount": 4200})
	require.NoError(t, err)
	b, err := encodeMessage(msg)
	require.NoError(t, err)
	got, st, err := decodeOutcome(b)
	require.NoError(t, err)
	assert.Nil(t, st)
	assert.True(t, proto.Equal(msg, got))

	want, err := status.New(codes.NotFound, "no such customer").WithDetails(&errdetails.ResourceInfo{ResourceName: "customers/x"})
	require.NoError(t, err)
	b, err = encodeStatus(want)
	require.NoError(t, err)
	got, st, err = decodeOutcome(b)
	require.NoError(t, err)
	assert.Nil(t, got)
	assert.True(t, proto.Equal(want.Proto(), st.Proto()))
}

// TestOutcomeRefusesForeignBytes: what this release did not write is an
// error, never a message.
func TestOutcomeRefusesForeignBytes(t *testing.T) {
	t.Parallel()
	for name, b := range map[string][]byte{
		"empty":        nil,
		"version":      {2, kindMessage},
		"kind":         {outcomeVersion, 'X'},
		"short name":   {outcomeVersion, kindMessage, 5, 'a'},
		"unknown type": append([]byte{outcomeVersion, kindMessage, 3}, "a.B"...),
		"bad status":   {outcomeVersion, kindStatus, 0xff},
		"http body":    []byte(`{"id":"ch_1"}`),
	} {
		_, _, err := decodeOutcome(b)
		assert.ErrorIs(t, err, errBadOutcome, name)
	}
}

// FuzzDecodeOutcome: decoding any bytes returns a message, a status or an
// error, and never panics.
func FuzzDecodeOutcome(f *testing.F) {
	msg, _ := structpb.NewStruct(map[string]any{"id": "ch_1"})
	b, _ := encodeMessage(msg)
	f.Add(b)
	b, _ = encodeStatus(status.New(codes.InvalidArgument, "bad amount"))
	f.Add(b)
	f.Add([]byte{outcomeVersion, kindMessage})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, st, err := decodeOutcome(b)
		if err == nil && (m == nil) == (st == nil) {
			t.Fatalf("decodeOutcome(%x) returned neither or both", b)
		}
	})
}

// TestFingerprintGolden pins the fingerprint's encoding: fingerprints are
// stored with their records, so a retry across an upgrade must match.
func TestFingerprintGolden(t *testing.T) {
	t.Parallel()
	req, err := structpb.NewStruct(map[string]any{"b": 2, "a": "x", "c": []any{1, "two"}})
	require.NoError(t, err)
	fp, err := Fingerprint("/idem.test.v1.Charges/Charge", req)
	require.NoError(t, err)
	for range 20 { // map order varies per encoding; the fingerprint does not
		again, err := Fingerprint("/idem.test.v1.Charges/Charge", req)
		require.NoError(t, err)
		require.Equal(t, fp, again)
	}
	assert.Equal(t, goldenFingerprint, fp)
	other, err := Fingerprint("/idem.test.v1.Charges/Refund", req)
	require.NoError(t, err)
	assert.NotEqual(t, fp, other, "the method is part of it")
}

const goldenFingerprint = "37d3807ca7b097ea86e0fa61ec64614b93af0402f6c19169ee72cf2685cecf44"
