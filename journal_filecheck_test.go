// This file tests checkFile: it passes every healthy journal, with either
// free-list setting, and finds damage without ever panicking (fuzzed).

package idem

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// healthyJournal writes a journal of n operations in every state, with
// bodies from a few bytes to many pages, name bindings, and a purge that
// leaves free pages behind; it returns the file's bytes.
func healthyJournal(t testing.TB, n int, syncFreelist bool) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j")
	j, err := OpenJournal(path, JournalOptions{syncFreelist: syncFreelist})
	require.NoError(t, err)
	now := time.Now()
	for i := range n {
		op := &Operation{Key: fmt.Sprintf("op-%05d", i), Method: http.MethodPost, URL: "http://127.0.0.1/charges",
			Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(strings.Repeat("b", []int{5, 700, 5000, 20000}[i%4])),
			State: Pending, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
		_, err := j.begin(op)
		require.NoError(t, err)
		if i%3 != 0 {
			op.State, op.Response, op.UpdatedAt = Completed, &StoredResponse{StatusCode: 201, Body: []byte(`{"id":1}`)}, now.Add(-48*time.Hour)
			require.NoError(t, j.updateNow(op))
		}
		if i%7 == 0 {
			_, err := j.namedKey(fmt.Sprintf("name/%d", i), func() string { return op.Key })
			require.NoError(t, err)
		}
	}
	_, err = j.Purge(24 * time.Hour)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestCheckFilePassesHealthyJournals(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 3, 400} {
		for _, sync := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d operations, free list synced %v", n, sync), func(t *testing.T) {
				t.Parallel()
				b := healthyJournal(t, n, sync)
				require.NoError(t, checkFile(b))
				path := filepath.Join(t.TempDir(), "copy")
				require.NoError(t, os.WriteFile(path, b, 0o600))
				j, err := OpenJournal(path, JournalOptions{PurgeAfter: -1})
				require.NoError(t, err)
				defer j.Close()
				ops, err := j.Operations()
				require.NoError(t, err)
				assert.Len(t, ops, n-n*2/3, "the pending ones are left after the purge")
			})
		}
	}
	golden, err := os.ReadFile(goldenJournal)
	require.NoError(t, err)
	require.NoError(t, checkFile(golden), "the previous release's journal")
}

// setMeta rewrites a field of both meta pages of b, at offset off within
// the meta, and their checksums.
func setMeta(b []byte, ps int, off int, v uint64) {
	for _, page := range []int{0, ps} {
		m := b[page+pageHeaderSize:]
		native.PutUint64(m[off:], v)
		h := fnv.New64a()
		h.Write(m[:metaSumLen])
		native.PutUint64(m[metaSumLen:], h.Sum64())
	}
}

func TestCheckFileFindsDamage(t *testing.T) {
	t.Parallel()
	healthy := healthyJournal(t, 60, true)
	m, ok := readMeta(healthy, 0)
	require.True(t, ok)
	ps := int(m.pageSize)
	if m1, ok := readMeta(healthy, ps); ok && m1.txid > m.txid {
		m = m1 // the meta bbolt uses
	}
	page := func(b []byte, id uint64) []byte { return b[int(id)*ps:] }
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		want   string
	}{
		{"empty", func([]byte) []byte { return nil }, "no valid meta page"},
		{"both metas", func(b []byte) []byte { b[pageHeaderSize] ^= 1; b[ps+pageHeaderSize] ^= 1; return b }, "no valid meta page"},
		{"truncated", func(b []byte) []byte { return b[:int(m.pgid-1)*ps] }, "beyond the file"},
		{"root out of bounds", func(b []byte) []byte { setMeta(b, ps, 16, m.pgid+5); return b }, "out of bounds"},
		{"root is a meta page", func(b []byte) []byte { setMeta(b, ps, 16, 1); return b }, "out of bounds"},
		{"root is the free list", func(b []byte) []byte { setMeta(b, ps, 16, m.freelist); return b }, "unexpected type"},
		{"free list out of bounds", func(b []byte) []byte { setMeta(b, ps, 32, m.pgid); return b }, "out of bounds"},
		{"free list lists a page in use", func(b []byte) []byte {
			fl := page(b, m.freelist)
			binary.NativeEndian.PutUint16(fl[10:], 1)
			binary.NativeEndian.PutUint64(fl[pageHeaderSize:], m.root)
			return b
		}, "free and in use"},
		{"page header names another page", func(b []byte) []byte { native.PutUint64(page(b, m.root), m.root+1); return b }, "header says"},
		{"elements overrun the page", func(b []byte) []byte { native.PutUint16(page(b, m.root)[10:], 0xFFFF); return b }, "overrun the page"},
		{"overflow past the end", func(b []byte) []byte { native.PutUint32(page(b, m.root)[12:], uint32(m.pgid)); return b }, "overflow"},
	}
	for _, tc := range cases {
		b := tc.damage(append([]byte(nil), healthy...))
		err := checkFile(b)
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
}

// FuzzCheckFile: checkFile never panics, and a file it passes opens and
// reads without a crash (the fuzzer reports one, even in a goroutine of
// bbolt's).
func FuzzCheckFile(f *testing.F) {
	f.Add(healthyJournal(f, 4, false))
	f.Add(healthyJournal(f, 4, true))
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkFile(b) != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "j")
		require.NoError(t, os.WriteFile(path, b, 0o600))
		j, err := OpenJournal(path, JournalOptions{PurgeAfter: -1, LockTimeout: time.Second})
		if err != nil {
			return
		}
		defer j.Close()
		_, _ = j.Operations()
		_, _ = j.Pending()
	})
}
