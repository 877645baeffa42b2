package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/charges"
)

// The crash scenario: an application journals crashOps operations against
// the charges service and is killed with SIGKILL. The first crashDone
// finish before the kill; of the rest, the first crashRan are executed by
// the service but their answers never reach the application, and the
// others are held before the service sees them. Then idem ls lists the
// unfinished operations, exactly, and idem resume finishes them: the
// service answers the executed ones from its record, and takes every charge
// once.
const (
	crashOps    = 200
	crashDone   = 120
	crashRan    = 10
	crashClient = "crash"
)

// crashGate stands in front of the charges service during the crash.
type crashGate struct {
	next     http.Handler
	mu       sync.Mutex
	inflight map[string]bool // keys of unfinished operations that reached the service
	all      chan struct{}   // closed when every unfinished operation has reached it
	release  chan struct{}   // closed once the application is dead
}

func (g *crashGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-g.release: // the application is dead: idem resume runs
		g.next.ServeHTTP(w, r)
		return
	default:
	}
	body, _ := io.ReadAll(r.Body)
	var req struct{ Amount int }
	json.Unmarshal(body, &req)
	n := req.Amount - 1 // operation n asks for n+1 cents
	r.Body = io.NopCloser(bytes.NewReader(body))
	if n < crashDone {
		g.next.ServeHTTP(w, r)
		return
	}
	if n < crashDone+crashRan {
		// Executed and recorded by the service; the answer is lost.
		g.next.ServeHTTP(httptest.NewRecorder(), r)
	}
	g.mu.Lock()
	g.inflight[r.Header.Get("Idempotency-Key")] = true
	if len(g.inflight) == crashOps-crashDone {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-r.Context().Done():
	}
	w.WriteHeader(http.StatusServiceUnavailable)
}

func TestCrashResume(t *testing.T) {
	t.Parallel()
	svc, err := charges.New(context.Background(), charges.Config{})
	require.NoError(t, err)
	g := &crashGate{next: svc.Handler(), inflight: map[string]bool{}, all: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	journal := filepath.Join(t.TempDir(), "app.journal")

	child := exec.Command(os.Args[0], "-test.run=^TestCrashApplication$")
	child.Env = append(os.Environ(), "IDEM_CRASH_JOURNAL="+journal, "IDEM_CRASH_URL="+srv.URL+"/charges")
	var childOut bytes.Buffer
	child.Stdout, child.Stderr = &childOut, &childOut
	require.NoError(t, child.Start())
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case <-g.all:
	case err := <-exited:
		t.Fatalf("the application exited before the kill: %v\n%s", err, childOut.String())
	case <-time.After(5 * time.Minute): // a bound, not a measurement
		child.Process.Kill()
		t.Fatalf("the unfinished operations never all reached the service\n%s", childOut.String())
	}
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	err = <-exited
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
	close(g.release)

	cs, err := svc.Charges(context.Background(), crashClient)
	require.NoError(t, err)
	require.Len(t, cs, crashDone+crashRan, "charges before idem resume")

	// idem ls --state pending: exactly the operations that reached the
	// service after the first crashDone were answered.
	r := runIdem(t, "", nil, "ls", "--journal", journal, "--state", "pending", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var pending []operationJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &pending))
	var listed []string
	for _, op := range pending {
		listed = append(listed, op.Key)
		assert.Equal(t, "pending", op.State)
	}
	var unfinished []string
	for k := range g.inflight {
		unfinished = append(unfinished, k)
	}
	slices.Sort(listed)
	slices.Sort(unfinished)
	require.Equal(t, unfinished, listed)

	// idem resume finishes them: the executed ones are replayed.
	r = runIdem(t, "", nil, "resume", "--journal", journal, "--json", "--concurrency", "8")
	require.Equal(t, exitOK, r.code, r.stderr)
	var sum resumeSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	assert.Equal(t, crashOps-crashDone, sum.Total)
	assert.Equal(t, crashOps-crashDone, sum.Completed)
	assert.Equal(t, crashRan, sum.Replayed, "the operations the service ran before the crash are answered from its record")

	// Every charge once.
	cs, err = svc.Charges(context.Background(), crashClient)
	require.NoError(t, err)
	require.Len(t, cs, crashOps)
	amounts := map[int64]int{}
	for _, c := range cs {
		amounts[c.Amount]++
	}
	for n := 1; n <= crashOps; n++ {
		assert.Equal(t, 1, amounts[int64(n)], "operation %d charged once", n-1)
	}
	r = runIdem(t, "", nil, "ls", "--journal", journal, "--state", "pending", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.JSONEq(t, "[]", r.stdout)
}

// TestCrashApplication is the application TestCrashResume runs and kills:
// it journals crashDone operations one after another through 8 workers,
// then starts the rest together, and waits to be killed.
func TestCrashApplication(t *testing.T) {
	path, url := os.Getenv("IDEM_CRASH_JOURNAL"), os.Getenv("IDEM_CRASH_URL")
	if path == "" {
		t.Skip("run by TestCrashResume")
	}
	j, err := idem.OpenJournal(path, idem.JournalOptions{})
	require.NoError(t, err)
	c, err := idem.New(idem.Options{Journal: j, AttemptTimeout: time.Hour})
	require.NoError(t, err)
	send := func(n int) {
		body := fmt.Sprintf(`{"amount": %d, "currency": "usd", "ref": "op-%d"}`, n+1, n)
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(charges.ClientHeader, crashClient)
		if _, err := c.Do(req); err != nil && n < crashDone {
			panic(err)
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				send(n)
			}
		}()
	}
	for n := range crashDone {
		work <- n
	}
	close(work)
	wg.Wait()
	for n := crashDone; n < crashOps; n++ {
		go send(n)
	}
	time.Sleep(10 * time.Minute) // killed long before
	t.Fatal("not killed")
}
