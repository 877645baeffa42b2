// This file tests the committer's batches: writes to one key that share a
// commit, read through the batch's one cursor.

package idem

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// batchWrite is one write of a test batch: a record of key in state,
// written over one in from (stateNone: no record) as the retry engine's
// writes are; or, with del, the record's deletion as Purge makes it; or,
// with viaTx, the record put by a function given the transaction, as
// Abandon puts its own. n tells two records of one state apart.
type batchWrite struct {
	key         string
	del, viaTx  bool
	state, from State
	n           int
}

func (w batchWrite) String() string {
	switch {
	case w.del:
		return "delete " + w.key
	case w.viaTx:
		return fmt.Sprintf("put %s %s#%d in the transaction", w.key, w.state, w.n)
	}
	if w.from == stateNone {
		return fmt.Sprintf("put %s %s#%d over no record", w.key, w.state, w.n)
	}
	return fmt.Sprintf("put %s %s#%d over %s", w.key, w.state, w.n, w.from)
}

// record returns the record w writes.
func (w batchWrite) record() []byte {
	at := time.Unix(1764500000, 0)
	op := &Operation{Key: w.key, Method: http.MethodPost, URL: "http://127.0.0.1/charges", Body: []byte(`{}`),
		State: w.state, CreatedAt: at, ExpiresAt: at.Add(time.Hour), UpdatedAt: at, Attempts: w.n}
	if w.state != Pending {
		op.Response = &StoredResponse{StatusCode: http.StatusCreated}
	}
	return op.encode(nil)
}

// req returns the committer's request for w.
func (w batchWrite) req() *commitReq {
	r := newCommitReq()
	key, rec := []byte(w.key), w.record()
	switch {
	case w.del:
		r.apply = func(tx *bolt.Tx) error {
			if err := opsBucket(tx).Delete(key); err != nil {
				return err
			}
			return tx.Bucket(bucketPending).Delete(key)
		}
	case w.viaTx:
		r.apply = func(tx *bolt.Tx) error {
			if err := opsBucket(tx).Put(key, rec); err != nil {
				return err
			}
			if w.state == Pending {
				return tx.Bucket(bucketPending).Put(key, nil)
			}
			return tx.Bucket(bucketPending).Delete(key)
		}
	default:
		r.key, r.rec, r.pending, r.from = key, rec, w.state == Pending, w.from
	}
	return r
}

// journalBuckets is what a journal file holds: each record by its key,
// and the keys of its pending index.
type journalBuckets struct {
	ops     map[string][]byte
	pending map[string]bool
}

// apply makes w's write in b, as the committer must: a record write only
// over a record in the state it expects.
func (b journalBuckets) apply(t *testing.T, w batchWrite) {
	switch {
	case w.del:
		delete(b.ops, w.key)
		delete(b.pending, w.key)
		return
	case !w.viaTx:
		cur := stateNone
		if v, ok := b.ops[w.key]; ok {
			var err error
			cur, err = recordState(v)
			require.NoError(t, err)
		}
		if cur != w.from {
			return // moved: not written
		}
	}
	b.ops[w.key] = w.record()
	if w.state == Pending {
		b.pending[w.key] = true
	} else {
		delete(b.pending, w.key)
	}
}

func readBuckets(t *testing.T, db *bolt.DB) journalBuckets {
	t.Helper()
	b := journalBuckets{ops: map[string][]byte{}, pending: map[string]bool{}}
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketOps).ForEach(func(k, v []byte) error {
			b.ops[string(k)] = append([]byte(nil), v...)
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bucketPending).ForEach(func(k, _ []byte) error {
			b.pending[string(k)] = true
			return nil
		})
	}))
	return b
}

// TestBatchWritesToOneKey: writes to one key that share a commit (put
// then delete, delete then put, put then put, as the records come and in
// transactions of their own), back to back or between other keys' writes,
// leave the journal holding what the last of them says, and its pending
// index agreeing, in the journal open and in the file reopened. Each
// write reads the record it compares its state with through the batch's
// one cursor, which the batch's Puts and Deletes have moved under it.
func TestBatchWritesToOneKey(t *testing.T) {
	t.Parallel()
	// Records committed before the batch: a cursor reads them from the
	// file's pages, the batch's own writes from the transaction's nodes.
	seed := []batchWrite{
		{key: "k2", state: Pending, n: 1},
		{key: "k4", state: Pending, n: 1},
		{key: "k5", state: Pending, n: 1},
		{key: "k6", state: Pending, n: 1},
		{key: "k7", state: Completed, n: 1},
		{key: "k8", state: Pending, n: 1},
		{key: "k85", state: Pending, n: 1},
	}
	// Each key's writes, in order.
	keys := [][]batchWrite{
		{ // put then delete
			{key: "k1", state: Pending, n: 1},
			{key: "k1", del: true},
		},
		{ // delete then put
			{key: "k2", del: true},
			{key: "k2", state: Pending, n: 2},
		},
		{ // put then put: the second over the first
			{key: "k3", state: Pending, n: 1},
			{key: "k3", state: Completed, from: Pending, n: 2},
			{key: "k3", state: Pending, from: Pending, n: 3}, // moved: k3 is completed
		},
		{ // put then put over a committed record
			{key: "k4", state: Completed, from: Pending, n: 2},
			{key: "k4", state: Pending, from: Pending, n: 3}, // moved: k4 is completed
		},
		{ // put, delete, put
			{key: "k5", state: Pending, from: Pending, n: 2},
			{key: "k5", del: true},
			{key: "k5", state: Pending, n: 3},
		},
		{ // delete then a put that expects the record gone
			{key: "k6", del: true},
			{key: "k6", state: Completed, from: Pending, n: 2}, // moved: k6 is gone
		},
		{ // a put in the transaction, then a record over it
			{key: "k7", viaTx: true, state: Abandoned, n: 2},
			{key: "k7", state: Pending, from: Completed, n: 3}, // moved: k7 is abandoned
			{key: "k7", state: Failed, from: Abandoned, n: 4},
		},
		{ // a put and a delete, then a put of the next key
			{key: "k8", state: Pending, from: Pending, n: 2},
			{key: "k8", del: true},
			{key: "k85", state: Completed, from: Pending, n: 2},
		},
	}
	// What each key holds at the end, whatever the order: the last write
	// that was not moved (nil: no record).
	final := map[string]*batchWrite{
		"k1":  nil,
		"k2":  {key: "k2", state: Pending, n: 2},
		"k3":  {key: "k3", state: Completed, n: 2},
		"k4":  {key: "k4", state: Completed, n: 2},
		"k5":  {key: "k5", state: Pending, n: 3},
		"k6":  nil,
		"k7":  {key: "k7", state: Failed, n: 4},
		"k8":  nil,
		"k85": {key: "k85", state: Completed, n: 2},
	}
	// Other keys, written between: keys before, between and after the
	// ones above, so that every Seek moves the cursor.
	others := []batchWrite{
		{key: "k0", state: Pending, n: 1}, {key: "k15", state: Pending, n: 1},
		{key: "k35", state: Completed, n: 1}, {key: "k55", state: Pending, n: 1}, {key: "k9", state: Pending, n: 1},
	}
	orders := map[string]func() []batchWrite{
		"back to back": func() []batchWrite {
			var b []batchWrite
			for _, ws := range keys {
				b = append(b, ws...)
			}
			return b
		},
		"interleaved": func() []batchWrite { // round robin over the keys
			var b []batchWrite
			for i := 0; ; i++ {
				n := len(b)
				for _, ws := range keys {
					if i < len(ws) {
						b = append(b, ws[i])
					}
				}
				if len(b) == n {
					return b
				}
			}
		},
		"among other keys": func() []batchWrite {
			other := slices.Clone(others)
			var b []batchWrite
			for i, ws := range keys {
				for _, w := range ws {
					o := &other[i%len(other)]
					b = append(b, w, *o)
					o.from, o.n = o.state, o.n+1 // the next write to that key is over this one
				}
			}
			return b
		},
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			var rec recorder
			j, err := OpenJournal(path, JournalOptions{Observer: rec.journalObserver()})
			require.NoError(t, err)
			want := journalBuckets{ops: map[string][]byte{}, pending: map[string]bool{}}
			var reqs []*commitReq
			for _, w := range seed {
				want.apply(t, w)
				reqs = append(reqs, w.req())
			}
			j.commit(reqs)
			require.Equal(t, want, readBuckets(t, j.db), "the seed")

			batch := order()
			reqs = reqs[:0]
			for _, w := range batch {
				want.apply(t, w)
				reqs = append(reqs, w.req())
			}
			j.commit(reqs)
			rec.mu.Lock()
			last := rec.commits[len(rec.commits)-1]
			rec.mu.Unlock()
			require.Equal(t, len(batch), last.Writes, "the batch is one commit")
			require.False(t, last.Failed, "and no write of it failed (its writes were not made alone)")
			for k, w := range final {
				if w == nil {
					assert.NotContains(t, want.ops, k)
				} else {
					assert.Equal(t, w.record(), want.ops[k], k)
				}
			}
			assert.Equal(t, want, readBuckets(t, j.db), "the batch: %v", batch)
			require.NoError(t, j.Close())

			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			require.NoError(t, err)
			assert.Equal(t, want, readBuckets(t, db), "the file reopened")
			require.NoError(t, db.Close())

			j, err = OpenJournal(path, JournalOptions{})
			require.NoError(t, err)
			defer j.Close()
			pending, err := j.Pending()
			require.NoError(t, err, "the pending index agrees with the records")
			var got []string
			for _, op := range pending {
				got = append(got, op.Key)
			}
			var wantPending []string
			for k := range want.pending {
				wantPending = append(wantPending, k)
			}
			assert.ElementsMatch(t, wantPending, got)
		})
	}
}
