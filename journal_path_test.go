// This file tests OpenJournal on paths that cannot hold a journal.

package idem

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenJournalPath: a path that cannot hold a journal is named as such
// (ErrJournalPath, with what is wrong), never reported as a corrupt
// journal, and nothing is created.
func TestOpenJournalPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))

	cases := []struct {
		name, path, says string
		notExist         bool
	}{
		{"a directory", dir, dir + " is a directory", false},
		{"a device", os.DevNull, os.DevNull + " is not a regular file", false},
		{"no directory", filepath.Join(dir, "nope", "j.db"), "directory " + filepath.Join(dir, "nope") + " does not exist", true},
		{"no directories", filepath.Join(dir, "a", "b", "j.db"), "directory " + filepath.Join(dir, "a", "b") + " does not exist", true},
		{"a file for a directory", filepath.Join(file, "j.db"), file + " is not a directory", false},
		{"under a file", filepath.Join(file, "sub", "j.db"), file + " is not a directory", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, err := OpenJournal(tc.path, JournalOptions{})
			require.ErrorIs(t, err, ErrJournalPath)
			assert.Nil(t, j)
			assert.NotErrorIs(t, err, ErrJournalCorrupt)
			assert.Contains(t, err.Error(), tc.says)
			assert.Equal(t, tc.notExist, assertIs(err, fs.ErrNotExist))
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing was created")
	info, err := os.Stat(file)
	require.NoError(t, err)
	assert.Zero(t, info.Size(), "the file is left as it was")
}
