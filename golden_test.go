// This file holds the golden tests: a journal and derived keys written by
// an earlier release, which every release must read as they are.

package idem

import (
	"encoding/hex"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemhq/idem/internal/wire"
)

// The golden files under testdata/golden were written by an earlier
// release of idem. They pin the journal's binary format and the key
// derivation: every later release must read them as they are.
var writeGolden = flag.Bool("golden.write", false, "rewrite testdata/golden (only ever from a release that must stay readable)")

const goldenJournal = "testdata/golden/journal-v1.db"

// goldenOperations are the operations goldenJournal holds.
func goldenOperations() []*Operation {
	at := func(sec int64) time.Time { return time.Unix(1764500000+sec, 123456789) }
	body := []byte(`{"amount":1000,"currency":"usd"}`)
	u := "http://127.0.0.1:8080/charges?x=1"
	return []*Operation{
		{ // record version 1, pending
			Key: "0193a4c0-8f2e-7c3b-9a41-6f0e2d5c8b17", Name: "payout/2026-12-25/417",
			Method: http.MethodPost, URL: u,
			Header:      http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}},
			Body:        body,
			Fingerprint: hexFP("7ed102b47d8bce710ae8c1279de613837eeda16aabb5c120b1bbddfa1d0929be"),
			State:       Pending, CreatedAt: at(0), ExpiresAt: at(86400), UpdatedAt: at(0),
		},
		{ // record version 2 (a Host override), completed with a result
			Key: "01JDX3W5ZK8Q4G7T2N6B9C1V0E", Method: http.MethodPost, URL: u, Host: "api.example.test",
			Header:      http.Header{"Content-Type": {"application/json"}},
			Body:        body,
			Fingerprint: hexFP("7ed102b47d8bce710ae8c1279de613837eeda16aabb5c120b1bbddfa1d0929be"),
			State:       Completed, CreatedAt: at(1), ExpiresAt: at(86401), UpdatedAt: at(2), Attempts: 3,
			Response: &StoredResponse{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}, "X-Odd": {"caf\xe9"}},
				Body: []byte(`{"id":"ch_1"}`), Truncated: true, Replayed: true},
		},
		{ // failed, no body, no headers
			Key: `a key with "quotes" and \ backslash`, Method: http.MethodPatch, URL: "http://127.0.0.1:8080/o/1",
			Fingerprint: hexFP("46dc991c08b062c74b914e0b11e307e4da271aca07e8d60a6e27062c7ff2de23"),
			State:       Failed, CreatedAt: at(3), ExpiresAt: at(86403), UpdatedAt: at(4), Attempts: 1,
			Response: &StoredResponse{StatusCode: 400},
		},
		{ // expired
			Key: "expired-1", Method: http.MethodPost, URL: u, Body: []byte("not json \x00\xff"),
			Fingerprint: hexFP("a8c0d0d9b3f5d6feeaedc81cf6e4f8ab24d78f955d68e1f70176d4f7c680611c"),
			State:       Expired, CreatedAt: at(5), ExpiresAt: at(86405), UpdatedAt: at(6),
		},
	}
}

// goldenDerived pins DeriveKey and DeriveKeyHMAC.
var goldenDerived = []struct {
	secret []byte
	parts  []string
	want   string
}{
	{nil, []string{"payout", "2026-12-25", "417"}, "742a48db-cbaf-8290-b144-5804a11352c8"},
	{nil, []string{"a", "bc"}, "4d068b20-2ee9-89e0-8190-99b117794ce8"},
	{nil, []string{"ab", "c"}, "d3b6168b-c3ce-8b0d-aacd-b1b3c41ca2ce"},
	{nil, []string{""}, "25195abb-3901-86d6-babf-d9b34643fe26"},
	{[]byte("s3cret"), []string{"charge", "order-1"}, "c22c8bc7-9161-83d5-8e96-53e9784ce48f"},
}

func TestGoldenJournal(t *testing.T) {
	if *writeGolden {
		_ = os.Remove(goldenJournal)
		j, err := OpenJournal(goldenJournal, JournalOptions{PurgeAfter: -1})
		require.NoError(t, err)
		for _, op := range goldenOperations() {
			if op.Name != "" {
				require.NoError(t, j.submit(true, nil, func(tx *bolt.Tx) error {
					return tx.Bucket(bucketNames).Put([]byte(op.Name), encodeNameV1(op.Key, op.CreatedAt))
				}))
			}
			require.NoError(t, j.updateNow(op))
		}
		require.NoError(t, j.Close())
	}
	path := filepath.Join(t.TempDir(), "journal.db")
	b, err := os.ReadFile(goldenJournal)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	j, err := OpenJournal(path, JournalOptions{PurgeAfter: -1})
	require.NoError(t, err)
	defer j.Close()
	want := goldenOperations()
	for _, w := range want {
		got, ok, err := j.Lookup(w.Key)
		require.NoError(t, err, w.Key)
		require.True(t, ok, w.Key)
		assertSameOperation(t, w, got)
	}
	pending, err := j.Pending()
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, want[0].Key, pending[0].Key)
	c, err := New(Options{Journal: j})
	require.NoError(t, err)
	key, err := c.NamedKey(want[0].Name)
	require.NoError(t, err)
	assert.Equal(t, want[0].Key, key)
}

func assertSameOperation(t *testing.T, want, got *Operation) {
	t.Helper()
	for _, p := range [][2]*time.Time{{&want.CreatedAt, &got.CreatedAt}, {&want.ExpiresAt, &got.ExpiresAt}, {&want.UpdatedAt, &got.UpdatedAt}} {
		assert.True(t, p[0].Equal(*p[1]), "times differ: %v, %v", *p[0], *p[1])
	}
	cp := *got
	cp.CreatedAt, cp.ExpiresAt, cp.UpdatedAt = want.CreatedAt, want.ExpiresAt, want.UpdatedAt
	assert.Equal(t, want, &cp)
}

func TestGoldenDerivedKeys(t *testing.T) {
	for _, g := range goldenDerived {
		var got string
		if g.secret != nil {
			got = DeriveKeyHMAC(g.secret, g.parts[0], g.parts[1:]...)
		} else {
			got = DeriveKey(g.parts[0], g.parts[1:]...)
		}
		assert.Equal(t, g.want, got, "%q", g.parts)
	}
}

// encodeNameV1 is a name binding as releases before the binding
// checksum wrote it.
func encodeNameV1(key string, created time.Time) []byte {
	return wire.AppendTime(wire.AppendString(nil, key), created)
}

// hexFP decodes a fingerprint written in hex.
func hexFP(s string) (fp [32]byte) {
	if _, err := hex.Decode(fp[:], []byte(s)); err != nil {
		panic(err)
	}
	return fp
}
