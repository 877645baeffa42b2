package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
)

// TestExitStatus: each kind of failure has its exit status and a message
// on standard error that starts with "idem:".
func TestExitStatus(t *testing.T) {
	t.Parallel()
	srv := mustStartServers(t)
	dir := t.TempDir()
	held := filepath.Join(dir, "held.journal")
	j, err := idem.OpenJournal(held, idem.JournalOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"help", []string{"--help"}, exitOK, ""},
		{"bad flag", []string{"ls", "--bogus"}, exitUsage, "idem: unknown flag: --bogus\nRun 'idem ls --help' for usage.\n"},
		{"missing argument", []string{"show"}, exitUsage, "idem: accepts 1 arg(s), received 0\nRun 'idem show --help' for usage.\n"},
		{"no journal named", []string{"ls"}, exitUsage, "idem: no journal: pass --journal PATH or set IDEM_JOURNAL\nRun 'idem ls --help' for usage.\n"},
		{"missing journal", []string{"ls", "--journal", filepath.Join(dir, "none")}, exitError, "idem: no journal at " + filepath.Join(dir, "none") + "\n"},
		{"locked journal", []string{"ls", "--journal", held}, exitError,
			"idem: journal " + held + " is held by a running process (the application, or another idem); stop it or wait for it to exit, then run this again\n"},
		{"unconfirmed check", []string{"check", srv.ignoring.URL}, exitUsage, ""},
		{"unsafe API", []string{"check", "--yes", "--copies", "2", "-d", "{}", srv.ignoring.URL}, exitUnsafe,
			"idem: this API can execute one keyed request more than once: retrying against it is not safe\n"},
		{"send without an answer", []string{"send", "--attempts", "1", down.URL}, exitError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runIdem(t, "", nil, tt.args...)
			assert.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			if tt.stderr != "" {
				assert.Contains(t, r.stderr, tt.stderr)
			}
			if tt.code != exitOK {
				assert.Contains(t, r.stderr, "idem: ")
			}
		})
	}
}
