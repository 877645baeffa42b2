package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompactGivesSpaceBack: a journal that held a 4 MiB body, purged,
// keeps its size until idem compact, which gives the space back and
// keeps the other records.
func TestCompactGivesSpaceBack(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	journal := filepath.Join(dir, "app.journal")
	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, []byte(`{"pad":"`+strings.Repeat("x", 4<<20)+`"}`), 0o600))
	vars := []string{journalEnv + "=" + journal}

	r := runIdem(t, "", vars, "send", "--key", "big-1", "-d", "@"+big, srv.URL+"/charges")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runIdem(t, "", vars, "send", "--key", "left-1", "--attempts", "1", "-d", `{"amount":1}`, srv.URL+"/down")
	require.Equal(t, exitError, r.code, r.stderr)
	r = runIdem(t, "", vars, "purge", "--older-than", "0")
	require.Equal(t, "purged 1 finished operation\n", r.stdout, r.stderr)
	info, err := os.Stat(journal)
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(4<<20), "purging gives nothing back to the file system")

	r = runIdem(t, "", vars, "compact", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var got struct{ Before, After, Reclaimed int64 }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.Equal(t, info.Size(), got.Before)
	assert.GreaterOrEqual(t, got.Reclaimed, int64(4<<20))
	assert.Equal(t, got.Before-got.After, got.Reclaimed)
	info, err = os.Stat(journal)
	require.NoError(t, err)
	assert.Equal(t, got.After, info.Size())
	leftovers, err := filepath.Glob(journal + ".compact-*")
	require.NoError(t, err)
	assert.Empty(t, leftovers)

	r = runIdem(t, "", vars, "ls")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "left-1")
	assert.NotContains(t, r.stdout, "big-1")
}

func TestByteSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 B", 512: "512 B", 1536: "1.5 KiB", 8 << 20: "8.0 MiB", 3 << 30: "3.0 GiB"} {
		assert.Equal(t, want, byteSize(n))
	}
}
