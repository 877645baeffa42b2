package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
)

// TestResumeInterrupted: Ctrl-C during idem resume stops it at once; the
// operation in flight and those not yet sent stay pending, and a second
// resume finishes them, each charged once.
func TestResumeInterrupted(t *testing.T) {
	t.Parallel()
	const ops, answered = 8, 3
	srv := mustStartServers(t)
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	stop := make(chan struct{}) // the test is over
	var (
		mu       sync.Mutex
		up       bool
		arrivals int
	)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if up {
			arrivals++
		}
		n, ok := arrivals, up
		mu.Unlock()
		switch {
		case !ok: // down while the application ran
			http.Error(w, "down", http.StatusServiceUnavailable)
		case n <= answered || ctx.Err() != nil:
			srv.charges.Config.Handler.ServeHTTP(w, r)
		default: // Ctrl-C while this one is in flight
			io.Copy(io.Discard, r.Body) // so that the server sees the client go
			interrupt()
			select {
			case <-r.Context().Done():
			case <-stop:
				t.Errorf("the request in flight was not cancelled")
			}
		}
	}))
	t.Cleanup(gate.Close)
	t.Cleanup(func() { close(stop) })
	journal := filepath.Join(t.TempDir(), "app.journal")
	pendingOps(t, journal, gate.URL+"/charges", ops)
	mu.Lock()
	up = true
	mu.Unlock()

	r := runIdemContext(ctx, t, "resume", "--journal", journal, "--json", "--concurrency", "1")
	assert.Equal(t, exitInterrupted, r.code)
	assert.Equal(t, fmt.Sprintf("idem: interrupted: %d operations left pending\n", ops-answered), r.stderr)
	var sum resumeSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	assert.True(t, sum.Interrupted)
	assert.Equal(t, answered, sum.Completed)
	assert.Equal(t, ops-answered, sum.Pending)

	r = runIdem(t, "", nil, "ls", "--journal", journal, "--state", "pending", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var pending []operationJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &pending))
	assert.Len(t, pending, ops-answered)

	r = runIdem(t, "", nil, "resume", "--journal", journal)
	require.Equal(t, exitOK, r.code, r.stderr)
	n, err := srv.chargeCount(testClient)
	require.NoError(t, err)
	assert.Equal(t, ops, n)
}

// pendingOps journals n operations against url, which answers 503: each
// is left pending.
func pendingOps(t *testing.T, journal, url string, n int) {
	t.Helper()
	j, err := idem.OpenJournal(journal, idem.JournalOptions{})
	require.NoError(t, err)
	defer j.Close()
	c, err := idem.New(idem.Options{Journal: j, MaxAttempts: 1})
	require.NoError(t, err)
	for i := range n {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(`{"amount": %d}`, i+1)))
		require.NoError(t, err)
		req.Header.Set("X-Client-Id", testClient)
		req.Header.Set("Content-Type", "application/json")
		_, err = c.Do(req)
		require.ErrorIs(t, err, idem.ErrRetriesExhausted)
	}
}
