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

// crashRun runs the kill-and-restart harness against an idempotent
// server and returns how often each key was executed and which keys each
// operation was sent under.
const crashKills = 6

func crashRun(t *testing.T, naive bool) (map[string]int, map[int]map[string]bool) {
	const ops = 40
	target := newOnceTarget(t)
	journal := filepath.Join(t.TempDir(), "client.journal")
	done := filepath.Join(t.TempDir(), "naive.done")
	// The naive client is only killed after the work, where a lost answer
	// makes it send again.
	got := killRun(t, crashPlan{
		ops: ops, kills: crashKills, spread: ops/crashKills + 2, faultOdds: 10, lateOnly: naive,
		child: "TestHelperCrashChild",
		env: []string{"IDEM_CRASH_URL=" + target.URL(), "IDEM_CRASH_JOURNAL=" + journal, "IDEM_CRASH_OPS=" + strconv.Itoa(ops),
			"IDEM_CRASH_NAIVE=" + strconv.FormatBool(naive), "IDEM_CRASH_DONE=" + done},
	}, target)
	if !naive {
		j := openJournal(t, journal)
		pending, err := j.Pending()
		require.NoError(t, err)
		assert.Empty(t, pending)
	}
	return got.executed, got.keysByOp
}

// crashTarget is the API a crash test's client talks to.
type crashTarget interface {
	// URL is the API's base URL.
	URL() string
	// hooks sets the functions run before the work and after it: before
	// returning false has answered on its own; after returning false
	// drops the connection instead of answering.
	hooks(before func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool, after func(r *http.Request, key string) bool)
	// fault answers a transient failure.
	fault(w http.ResponseWriter)
	executions() map[string]int
	mismatches() int
}

// onceTarget is an onceServer served over loopback, as a crashTarget.
// Its hooks are read under a lock: a child process's request carries no
// happens-before from the test that set them.
type onceTarget struct {
	*onceServer
	srv *httptest.Server

	mu     sync.Mutex
	before func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool
	after  func(r *http.Request, key string) bool
}

func newOnceTarget(t *testing.T) *onceTarget {
	o := &onceTarget{onceServer: newOnceServer(t)}
	o.onceServer.before = func(w http.ResponseWriter, r *http.Request) bool {
		o.mu.Lock()
		before := o.before
		o.mu.Unlock()
		return before == nil || before(w, r, r.Header.Get("Idempotency-Key"), o.lastBody(r))
	}
	o.onceServer.after = func(r *http.Request) bool {
		o.mu.Lock()
		after := o.after
		o.mu.Unlock()
		return after == nil || after(r, r.Header.Get("Idempotency-Key"))
	}
	o.srv = httptest.NewServer(o.onceServer) // after the hooks: the server's goroutines see them
	t.Cleanup(o.srv.Close)
	return o
}

func (o *onceTarget) URL() string { return o.srv.URL }

func (o *onceTarget) hooks(before func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool, after func(r *http.Request, key string) bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.before, o.after = before, after
}

func (o *onceTarget) fault(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }

// crashPlan says how killRun runs a crash test.
type crashPlan struct {
	ops, kills int
	// spread: each kill comes within this many attempts of the last.
	spread int
	// faultOdds: one attempt in faultOdds meets the target's fault, and
	// one answer in faultOdds is lost after the work.
	faultOdds int
	// lateOnly kills only after the work; otherwise kills alternate
	// between before the work and after it.
	lateOnly bool
	// child is the test function the child process runs, env its
	// environment besides this process's.
	child string
	env   []string
}

// crashResult is what killRun saw.
type crashResult struct {
	keysByOp                map[int]map[string]bool // the keys each operation ({"op": N} in the body) came under
	executed                map[string]int          // the target's executions by key
	attempts, killed, early int                     // early: kills that left the attempt's work undone
}

// killRun re-executes the test binary as the plan's client process, again
// and again, and kills each child but the last with SIGKILL from inside the
// target while one of its attempts is in flight: before the target does
// the work, or after it did the work but before it answers. The target
// also answers some attempts with its fault and drops some answers. The
// last child runs to its end. killRun requires that every kill came
// during an attempt, half of them before the work unless lateOnly, that
// every operation reached the target, and that every attempt of a key
// carried the same bytes.
func killRun(t *testing.T, plan crashPlan, target crashTarget) crashResult {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	faults := rand.New(rand.NewPCG(seed, 1))
	var (
		mu       sync.Mutex
		res      = crashResult{keysByOp: map[int]map[string]bool{}}
		child    *exec.Cmd
		killAt   int  // attempt number at which to kill the child
		killLate bool // kill after the work is done instead of before
	)
	killIf := func(late bool) bool {
		if child != nil && killAt > 0 && res.attempts >= killAt && killLate == late {
			child.Process.Signal(syscall.SIGKILL)
			killAt = 0
			res.killed++
			return true
		}
		return false
	}
	target.hooks(func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool {
		var b struct{ Op int }
		_ = json.Unmarshal(body, &b)
		mu.Lock()
		defer mu.Unlock()
		res.attempts++
		if res.keysByOp[b.Op] == nil {
			res.keysByOp[b.Op] = map[string]bool{}
		}
		res.keysByOp[b.Op][key] = true
		if killIf(false) {
			// The client died before the work: the work is not done, and
			// the attempt gets no answer.
			res.early++
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return false
		}
		if faults.IntN(plan.faultOdds) == 0 {
			target.fault(w)
			return false
		}
		return true
	}, func(*http.Request, string) bool {
		mu.Lock()
		defer mu.Unlock()
		killIf(true)
		return faults.IntN(plan.faultOdds) != 0 // now and then the answer is lost
	})

	run := func(kill, late bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^"+plan.child+"$")
		cmd.Env = childEnv(plan.env...)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		mu.Lock()
		child, killAt, killLate = cmd, 0, late
		if kill {
			killAt = res.attempts + 1 + rng.IntN(plan.spread)
		}
		require.NoError(t, cmd.Start())
		mu.Unlock()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if kill {
				require.Error(t, err, "the child was killed: %s", out.String())
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
	for i := range plan.kills {
		run(true, plan.lateOnly || i%2 == 1)
	}
	run(false, false) // the last process runs to the end

	mu.Lock()
	defer mu.Unlock()
	t.Logf("killed %d children mid-attempt, %d before the work; %d attempts in all", res.killed, res.early, res.attempts)
	require.Equal(t, plan.kills, res.killed, "every child died during an attempt")
	if !plan.lateOnly {
		require.Equal(t, plan.kills/2, res.early, "half the kills left the work undone")
	}
	require.Len(t, res.keysByOp, plan.ops, "every operation reached the server")
	assert.Zero(t, target.mismatches(), "every attempt of a key carried the same bytes")
	res.executed = target.executions()
	return res
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
	j := openChildJournal(t, os.Getenv("IDEM_CRASH_JOURNAL"))
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

// openChildJournal opens a crash test child's journal. The killed
// predecessor's lock goes with it, but be patient.
func openChildJournal(t *testing.T, path string) *Journal {
	t.Helper()
	var j *Journal
	var err error
	for range 100 {
		if j, err = OpenJournal(path, JournalOptions{LockTimeout: 50 * time.Millisecond}); err == nil {
			break
		}
	}
	require.NoError(t, err)
	return j
}

func crashRequest(t *testing.T, url string, i int) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url+"/charges", stringsReader(fmt.Sprintf(`{"op":%d,"amount":%d}`, i, 100+i)))
	require.NoError(t, err)
	return req
}
