// This file holds the crash test: a client process killed with SIGKILL
// mid-attempt and restarted, against a naive client that double-charges.

package idem

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCrashResume re-executes the test binary as a client process that
// works through a batch of operations, and kills it with SIGKILL from inside
// the server while one of its attempts is in flight: sometimes before the
// server does the work, sometimes after it did the work but before it
// answers. Each restart resumes from the journal. The server must see every
// operation under one key with one body, and execute each exactly once. The
// server also answers some attempts with 503 and drops some answers.
//
// The same harness with a naive client (a fresh key per process, no
// journal, but a record of the operations it saw answered, so that only
// an operation in flight at a kill is sent again) executes operations
// twice, which shows the test can fail.
func TestCrashResume(t *testing.T) {
	t.Parallel()
	t.Run("journal", func(t *testing.T) {
		t.Parallel()
		executed, keysByOp := crashRun(t, false)
		for op, keys := range keysByOp {
			require.Len(t, keys, 1, "operation %d was sent under one key across restarts", op)
			for k := range keys {
				assert.Equal(t, 1, executed[k], "operation %d executed exactly once", op)
			}
		}
		assert.Len(t, executed, len(keysByOp))
	})
	t.Run("naive client double-charges", func(t *testing.T) {
		t.Parallel()
		executed, keysByOp := crashRun(t, true)
		extra := len(executed) - len(keysByOp)
		t.Logf("naive client: %d operations executed %d times", len(keysByOp), len(executed))
		assert.Positive(t, extra, "without a journal, a restart sends the operation in flight again under a new key")
		assert.LessOrEqual(t, extra, crashKills, "only operations in flight at a kill run twice")
	})
}

// crashRun runs the kill-and-restart harness and returns how often each key
// was executed and which keys each operation was sent under.
const crashKills = 6

func crashRun(t *testing.T, naive bool) (map[string]int, map[int]map[string]bool) {
	const ops, kills = 40, crashKills
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	srv := newOnceServer(t)
	var (
		mu        sync.Mutex
		keysByOp  = map[int]map[string]bool{}
		attempts  int
		child     *exec.Cmd
		killAt    int  // attempt number at which to kill the child
		killLate  bool // kill after the work is done instead of before
		killed    int
		early     int // kills that left the attempt's work undone
		faultRand = rand.New(rand.NewPCG(seed, 1))
	)
	killIf := func(late bool) bool {
		if child != nil && killAt > 0 && attempts >= killAt && killLate == late {
			child.Process.Signal(syscall.SIGKILL)
			killAt = 0
			killed++
			return true
		}
		return false
	}
	srv.before = func(w http.ResponseWriter, r *http.Request) bool {
		var body struct{ Op int }
		_ = json.Unmarshal(srv.lastBody(r), &body)
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if keysByOp[body.Op] == nil {
			keysByOp[body.Op] = map[string]bool{}
		}
		keysByOp[body.Op][r.Header.Get("Idempotency-Key")] = true
		if killIf(false) {
			// The client died before the work: the work is not done, and
			// the attempt gets no answer.
			early++
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return false
		}
		if faultRand.IntN(10) == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return false
		}
		return true
	}
	srv.after = func(*http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		killIf(true)
		return faultRand.IntN(10) != 0 // now and then the answer is lost
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	journal := filepath.Join(t.TempDir(), "client.journal")
	done := filepath.Join(t.TempDir(), "naive.done")

	// Kills alternate between before and after the work; the naive client
	// is only killed after it, where a lost answer makes it send again.
	run := func(kill, late bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrashChild$")
		cmd.Env = childEnv(
			"IDEM_CRASH_URL="+ts.URL, "IDEM_CRASH_JOURNAL="+journal, "IDEM_CRASH_OPS="+strconv.Itoa(ops),
			"IDEM_CRASH_NAIVE="+strconv.FormatBool(naive), "IDEM_CRASH_DONE="+done)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		mu.Lock()
		child, killAt, killLate = cmd, 0, late
		if kill {
			killAt = attempts + 1 + rng.IntN(ops/kills+2)
		}
		require.NoError(t, cmd.Start())
		mu.Unlock()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if kill {
				require.Error(t, err, "the child was killed")
			} else {
				require.NoError(t, err, "child: %s", out.String())
			}
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Fatalf("child did not finish: %s", out.String())
		}
		mu.Lock()
		child = nil
		mu.Unlock()
	}
	for i := range kills {
		run(true, naive || i%2 == 1)
	}
	run(false, false) // the last process runs to the end
	mu.Lock()
	defer mu.Unlock()
	t.Logf("killed %d children mid-attempt, %d before the work; %d attempts in all", killed, early, attempts)
	require.Equal(t, kills, killed, "every child died during an attempt")
	if !naive {
		require.Equal(t, kills/2, early, "half the kills left the work undone")
	}

	require.Len(t, keysByOp, ops, "every operation reached the server")
	assert.Zero(t, srv.mismatches(), "every attempt of a key carried the same body")
	if !naive {
		j := openJournal(t, journal)
		pending, err := j.Pending()
		require.NoError(t, err)
		assert.Empty(t, pending)
	}
	return srv.executions(), keysByOp
}

// TestHelperCrashChild is the client process of TestCrashResume.
func TestHelperCrashChild(t *testing.T) {
	url := os.Getenv("IDEM_CRASH_URL")
	if url == "" {
		t.Skip("child process of TestCrashResume")
	}
	ops, _ := strconv.Atoi(os.Getenv("IDEM_CRASH_OPS"))
	if os.Getenv("IDEM_CRASH_NAIVE") == "true" {
		// Keys but no journal: each process mints its own. It notes the
		// operations it saw answered and skips them after a restart, as
		// a careful client without idem's journal would.
		c, err := New(Options{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxAttempts: 20})
		require.NoError(t, err)
		doneFile := os.Getenv("IDEM_CRASH_DONE")
		answered := map[int]bool{}
		if b, err := os.ReadFile(doneFile); err == nil {
			for _, line := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(line)
				answered[n] = true
			}
		}
		f, err := os.OpenFile(doneFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		require.NoError(t, err)
		defer f.Close()
		for i := range ops {
			if answered[i] {
				continue
			}
			resp, err := c.Do(crashRequest(t, url, i))
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, resp.StatusCode)
			_, err = fmt.Fprintln(f, i)
			require.NoError(t, err)
		}
		return
	}
	var j *Journal
	var err error
	for range 100 { // the killed predecessor's lock goes with it, but be patient
		if j, err = OpenJournal(os.Getenv("IDEM_CRASH_JOURNAL"), JournalOptions{LockTimeout: 50 * time.Millisecond}); err == nil {
			break
		}
	}
	require.NoError(t, err)
	defer j.Close()
	c, err := New(Options{Journal: j, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxAttempts: 20, ResumeJitter: 5 * time.Millisecond})
	require.NoError(t, err)
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	for i := range ops {
		req := crashRequest(t, url, i)
		var resp *Response
		if i%2 == 0 {
			// Keys from business IDs...
			req.Header.Set("Idempotency-Key", DeriveKey("crash-test", strconv.Itoa(i)))
			resp, err = c.Do(req)
		} else {
			// ...or bound to a name in the journal.
			resp, err = c.DoNamed("crash-test/"+strconv.Itoa(i), req)
		}
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.StatusCode)
	}
}

func crashRequest(t *testing.T, url string, i int) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url+"/charges", stringsReader(fmt.Sprintf(`{"op":%d,"amount":%d}`, i, 100+i)))
	require.NoError(t, err)
	return req
}
