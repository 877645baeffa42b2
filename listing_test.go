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
			op.Result = &Result{StatusCode: map[State]int{Completed: 201, Refused: 401, Failed: 400}[st]}
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
	op.State, op.Result = Completed, &Result{StatusCode: 200}
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
