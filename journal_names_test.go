// This file tests name bindings against damage: a binding whose bytes
// changed, one that names another operation's record, and one that was
// lost, each refused rather than sent under a second key.

package idem

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

var testTime = time.Unix(1764500000, 0)

// TestDamagedNameBindings: an operation sent with DoNamed is left pending;
// its journal is damaged where the name binding is; Resume and DoNamed
// then run in a new process. Whatever the damage, the server sees one key:
// DoNamed refuses with ErrJournalCorrupt and mints nothing, and Resume
// finishes the operation under its own key.
func TestDamagedNameBindings(t *testing.T) {
	t.Parallel()
	const name = "payout/417"
	cases := []struct {
		name   string
		damage func(t *testing.T, b *bolt.Bucket, key string)
	}{
		{"a byte of the bound key flipped", func(t *testing.T, b *bolt.Bucket, key string) {
			v := bytes.Clone(b.Get([]byte(name)))
			i := bytes.Index(v, []byte(key))
			require.GreaterOrEqual(t, i, 0)
			v[i+len(key)-1] ^= 1
			require.NoError(t, b.Put([]byte(name), v))
		}},
		{"a byte of the binding's time flipped", func(t *testing.T, b *bolt.Bucket, key string) {
			v := bytes.Clone(b.Get([]byte(name)))
			v[len(v)-5] ^= 0x10
			require.NoError(t, b.Put([]byte(name), v))
		}},
		{"a binding written before checksums, a byte of its key flipped", func(t *testing.T, b *bolt.Bucket, key string) {
			damaged := []byte(key)
			damaged[len(damaged)-1] ^= 1
			require.NoError(t, b.Put([]byte(name), encodeNameV1(string(damaged), testTime)))
		}},
		{"the binding names another operation's key", func(t *testing.T, b *bolt.Bucket, _ string) {
			other := b.Get([]byte("payout/other"))
			otherKey, _, err := decodeName("payout/other", other)
			require.NoError(t, err)
			require.NoError(t, b.Put([]byte(name), encodeName(name, otherKey, testTime)))
		}},
		{"the binding is lost", func(t *testing.T, b *bolt.Bucket, _ string) {
			require.NoError(t, b.Delete([]byte(name)))
		}},
		{"the binding filed under a changed name", func(t *testing.T, b *bolt.Bucket, _ string) {
			v := bytes.Clone(b.Get([]byte(name)))
			require.NoError(t, b.Delete([]byte(name)))
			require.NoError(t, b.Put([]byte("payout/41\x37\x00"), v))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, up := downUntilUp(t)
			path := filepath.Join(t.TempDir(), "j")
			j, err := OpenJournal(path, JournalOptions{})
			require.NoError(t, err)
			c := newClient(t, quickOptions(Options{Journal: j, MaxAttempts: 1}))
			_, err = c.DoNamed(name, post(t, s.srv.URL, `{"amount":417}`))
			require.ErrorIs(t, err, ErrRetriesExhausted)
			_, err = c.DoNamed("payout/other", post(t, s.srv.URL, `{"amount":1}`))
			require.ErrorIs(t, err, ErrRetriesExhausted)
			key := s.seen()[0].Key
			require.NoError(t, j.Close())

			db, err := bolt.Open(path, 0o600, nil)
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx *bolt.Tx) error {
				tc.damage(t, tx.Bucket(bucketNames), key)
				return nil
			}))
			require.NoError(t, db.Close())

			up.Store(true)
			j = openJournal(t, path)
			c = newClient(t, Options{Journal: j, ResumeJitter: -1})
			_, err = c.DoNamed(name, post(t, s.srv.URL, `{"amount":417}`))
			require.ErrorIs(t, err, ErrJournalCorrupt, "DoNamed refuses a binding it cannot trust")
			assert.Contains(t, err.Error(), path)
			_, err = c.NamedKey(name)
			require.ErrorIs(t, err, ErrJournalCorrupt)
			res, err := c.Resume(context.Background())
			require.NoError(t, err)
			require.Len(t, res, 2)
			for _, r := range res {
				require.NoError(t, r.Err)
			}
			var sent []string
			for _, r := range s.seen()[2:] {
				if r.Key != s.seen()[1].Key {
					sent = append(sent, r.Key)
				}
			}
			assert.Equal(t, []string{key}, sent, "one operation, one key")
		})
	}
}

// TestNameBindingsRead: a binding names its key across a reopen, in
// either version, and a record made with Do under a key from NamedKey
// (a record with no name) is its binding's all the same.
func TestNameBindingsRead(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	path := filepath.Join(t.TempDir(), "j")
	j, err := OpenJournal(path, JournalOptions{})
	require.NoError(t, err)
	c := newClient(t, Options{Journal: j})
	k, err := c.NamedKey("by-hand")
	require.NoError(t, err)
	req := post(t, s.srv.URL, `{}`)
	req.Header.Set("Idempotency-Key", k)
	_, err = c.Do(req)
	require.NoError(t, err)
	require.NoError(t, j.submit(true, nil, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketNames).Put([]byte("old"), encodeNameV1("old-key", testTime))
	}))
	require.NoError(t, j.Close())

	c = newClient(t, Options{Journal: openJournal(t, path)})
	again, err := c.NamedKey("by-hand")
	require.NoError(t, err)
	assert.Equal(t, k, again)
	old, err := c.NamedKey("old")
	require.NoError(t, err)
	assert.Equal(t, "old-key", old, "a binding written before checksums reads")
}
