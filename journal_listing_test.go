// This file tests the journal's listings: Operations in every state, in a
// stable order, and damaged records named, not hidden.

package idem

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

func TestJournalOperations(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j")
	j := openJournal(t, path)
	at := time.Unix(1764500000, 0)
	// Two operations share a creation time: the key breaks the tie.
	for i, st := range []State{Expired, Pending, Completed, Refused, Failed, Pending} {
		op := &Operation{Key: fmt.Sprintf("k%d", 5-i), Method: http.MethodPost, URL: "http://x/", State: st,
			CreatedAt: at.Add(time.Duration(min(i, 4)) * time.Second), UpdatedAt: time.Now()}
		if st != Pending && st != Expired {
			op.Response = &StoredResponse{StatusCode: map[State]int{Completed: 201, Refused: 401, Failed: 400}[st]}
		}
		require.NoError(t, j.updateNow(op))
	}
	keys := func(ops []*Operation) (out []string) {
		for _, op := range ops {
			out = append(out, op.Key+":"+op.State.String())
		}
		return out
	}
	all, err := j.Operations()
	require.NoError(t, err)
	assert.Equal(t, []string{"k5:expired", "k4:pending", "k3:completed", "k2:refused", "k0:pending", "k1:failed"}, keys(all),
		"oldest first, then by key")
	some, err := j.Operations(Pending, Refused)
	require.NoError(t, err)
	assert.Equal(t, []string{"k4:pending", "k2:refused", "k0:pending"}, keys(some))

	// A lazily written change is seen at once.
	op, _, err := j.Lookup("k4")
	require.NoError(t, err)
	op.State, op.Response = Completed, &StoredResponse{StatusCode: 200}
	require.NoError(t, j.update(op))
	some, err = j.Operations(Pending)
	require.NoError(t, err)
	assert.Equal(t, []string{"k0:pending"}, keys(some))

	// A damaged record is named in the error; the others are listed.
	require.NoError(t, j.Close())
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		v := append([]byte(nil), tx.Bucket(bucketOps).Get([]byte("k3"))...)
		v[len(v)/2] ^= 1
		return tx.Bucket(bucketOps).Put([]byte("k3"), v)
	}))
	require.NoError(t, db.Close())
	j = openJournal(t, path)
	all, err = j.Operations(Failed)
	require.ErrorIs(t, err, ErrJournalCorrupt)
	assert.Contains(t, err.Error(), `"k3"`)
	assert.Contains(t, err.Error(), path)
	assert.Equal(t, []string{"k1:failed"}, keys(all))
}

// TestJournalListingsSeeLazyWritesThatLand: a lazy write that is
// committed while a listing runs, after the listing read the file and
// before it read the overlay, is not missed: the operation it finished is
// neither listed as pending nor listed in its old state. The committer is
// held until the listing has read the file, then let go, and the listing
// goes on once the write has landed and left the overlay.
func TestJournalListingsSeeLazyWritesThatLand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		list func(*Journal) ([]*Operation, error)
	}{
		{"Pending", (*Journal).Pending},
		{"Operations", func(j *Journal) ([]*Operation, error) { return j.Operations() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := openJournal(t, "")
			op := &Operation{Key: "k", Method: http.MethodPost, URL: "http://x/", State: Pending,
				CreatedAt: time.Unix(1764500000, 0), UpdatedAt: time.Now()}
			require.NoError(t, j.updateNow(op))

			entered, gate := make(chan struct{}), make(chan struct{})
			held := make(chan error, 1)
			go func() { held <- j.submit(true, nil, func(*bolt.Tx) error { close(entered); <-gate; return nil }) }()
			<-entered // the committer is held inside a commit
			done := *op
			done.State, done.Response = Completed, &StoredResponse{StatusCode: 201}
			require.NoError(t, j.update(&done)) // queued behind the held commit
			j.testHookViewed = func() {
				close(gate)
				require.NoError(t, <-held)
				// A durable write queued after the lazy one is settled after it.
				require.NoError(t, j.submit(true, nil, func(*bolt.Tx) error { return nil }))
			}
			ops, err := tc.list(j)
			require.NoError(t, err)
			for _, got := range ops {
				assert.Equal(t, Completed, got.State, "the operation is listed as the lazy write left it")
			}
			if tc.name == "Operations" {
				assert.Len(t, ops, 1)
			}
		})
	}
}
