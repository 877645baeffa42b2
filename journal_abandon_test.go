// This file tests Journal.Abandon: an abandoned operation is never sent
// again, by Resume or by a call with its key.

package idem

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJournalAbandon(t *testing.T) {
	t.Parallel()
	s, up := downUntilUp(t)
	path := filepath.Join(t.TempDir(), "j")
	j := openJournal(t, path)
	c := newClient(t, Options{Journal: j, MaxAttempts: 1, ResumeJitter: -1})
	send := func(key string) (*Response, error) {
		req := post(t, s.srv.URL, `{"amount":5}`)
		req.Header.Set("Idempotency-Key", key)
		return c.Do(req)
	}
	for _, key := range []string{"given-up", "kept"} {
		_, err := send(key)
		require.ErrorIs(t, err, ErrRetriesExhausted)
	}

	op, err := j.Abandon("given-up")
	require.NoError(t, err)
	assert.Equal(t, Abandoned, op.State)
	assert.Equal(t, Abandoned, onDisk(t, j, "given-up").State, "on disk before Abandon returns")
	again, err := j.Abandon("given-up")
	require.NoError(t, err, "abandoning twice is no error")
	assert.Equal(t, Abandoned, again.State)
	assert.Equal(t, op.UpdatedAt.UnixNano(), again.UpdatedAt.UnixNano(), "and writes nothing")

	up.Store(true)
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1, "Resume leaves the abandoned operation")
	assert.Equal(t, "kept", res[0].Operation.Key)
	_, err = send("given-up")
	require.ErrorIs(t, err, ErrAbandoned, "a call with its key is refused without the network")
	assert.Len(t, s.seen(), 3)

	_, err = j.Abandon("kept")
	require.Error(t, err, "a completed operation cannot be abandoned")
	assert.Contains(t, err.Error(), "completed")
	_, err = j.Abandon("no-such-key")
	require.ErrorIs(t, err, ErrNoOperation)

	all, err := j.Operations(Abandoned)
	require.NoError(t, err)
	require.Len(t, all, 1, "the record is kept")
	require.NoError(t, j.Close())
	j = openJournal(t, path)
	got, ok, err := j.Lookup("given-up")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Abandoned, got.State, "and survives a reopen")
}
