// This file holds the crash test of every profile: a client process
// killed with SIGKILL mid-attempt against a fake of its API, restarted,
// resuming from the journal.

package idem

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProfilesCrashResume runs, for each profile, a client process that
// sends a batch of operations to a fake of the profile's API and is
// killed with SIGKILL while one of its attempts is in flight: half the
// time before the fake does the work, half after it did the work but
// before it answers. Each restart resumes from the journal. The fake also
// answers some attempts with its transient fault (hinting a retry where
// the API has hints) and drops some answers. Every operation must reach
// the API under one key, with the same bytes on every attempt (for
// Square, the key in the body), and run exactly once; and no operation
// may be left pending: a resumed GoCardless operation that had run gets
// GoCardless's creation conflict, which the profile takes as its answer.
func TestProfilesCrashResume(t *testing.T) {
	t.Parallel()
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			profileCrashRun(t, p)
		})
	}
}

func profileCrashRun(t *testing.T, p Profile) {
	// Each kill comes within 3 attempts of the last, and an attempt that
	// reaches the work finishes at most one operation, so operations are
	// left to send until the last kill.
	const ops, kills = 16, 4
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	faults := rand.New(rand.NewPCG(seed, 1))

	f := newFakeAPI(t, p)
	var (
		mu       sync.Mutex
		keysByOp = map[int]map[string]bool{}
		attempts int
		child    *exec.Cmd
		killAt   int
		killLate bool
		killed   int
		early    int
	)
	killIf := func(late bool) bool {
		if child != nil && killAt > 0 && attempts >= killAt && killLate == late {
			child.Process.Signal(syscall.SIGKILL)
			killAt, killed = 0, killed+1
			return true
		}
		return false
	}
	before := func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool {
		var b struct{ Op int }
		_ = json.Unmarshal(body, &b)
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if keysByOp[b.Op] == nil {
			keysByOp[b.Op] = map[string]bool{}
		}
		keysByOp[b.Op][key] = true
		if killIf(false) {
			early++
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return false
		}
		if faults.IntN(8) == 0 {
			f.fault(w)
			return false
		}
		return true
	}
	after := func(*http.Request, string) bool {
		mu.Lock()
		defer mu.Unlock()
		killIf(true)
		return faults.IntN(8) != 0
	}
	f.hooks(before, after)
	journal := filepath.Join(t.TempDir(), "client.journal")
	run := func(kill, late bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProfileCrashChild$")
		cmd.Env = childEnv("IDEM_PROFILE_CRASH="+p.Name, "IDEM_PROFILE_CRASH_URL="+f.srv.URL,
			"IDEM_PROFILE_CRASH_JOURNAL="+journal, "IDEM_PROFILE_CRASH_OPS="+strconv.Itoa(ops))
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		mu.Lock()
		child, killAt, killLate = cmd, 0, late
		if kill {
			killAt = attempts + 1 + rng.IntN(3)
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
	for i := range kills {
		run(true, i%2 == 1)
	}
	run(false, false)

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%s: killed %d children mid-attempt, %d before the work; %d attempts in all", p.Name, killed, early, attempts)
	require.Equal(t, kills, killed, "every child died during an attempt")
	require.Equal(t, kills/2, early, "half the kills left the work undone")
	require.Len(t, keysByOp, ops, "every operation reached the API")
	executed := f.executions()
	for op, keys := range keysByOp {
		require.Len(t, keys, 1, "operation %d was sent under one key across restarts", op)
		for k := range keys {
			assert.Equal(t, 1, executed[k], "operation %d ran exactly once", op)
			assert.LessOrEqual(t, len(k), p.MaxKeyLen)
		}
	}
	assert.Len(t, executed, ops)
	assert.Zero(t, f.mismatches(), "every attempt of a key carried the same bytes")
	j := openJournal(t, journal)
	pending, err := j.Pending()
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// TestHelperProfileCrashChild is the client process of
// TestProfilesCrashResume.
func TestHelperProfileCrashChild(t *testing.T) {
	name := os.Getenv("IDEM_PROFILE_CRASH")
	if name == "" {
		t.Skip("child process of TestProfilesCrashResume")
	}
	p, ok := ProfileNamed(name)
	require.True(t, ok)
	url := os.Getenv("IDEM_PROFILE_CRASH_URL")
	ops, _ := strconv.Atoi(os.Getenv("IDEM_PROFILE_CRASH_OPS"))
	var j *Journal
	var err error
	for range 100 { // the killed predecessor's lock goes with it, but be patient
		if j, err = OpenJournal(os.Getenv("IDEM_PROFILE_CRASH_JOURNAL"), JournalOptions{LockTimeout: 50 * time.Millisecond}); err == nil {
			break
		}
	}
	require.NoError(t, err)
	defer j.Close()
	c, err := New(Options{Profile: p, Journal: j, PrepareRequest: setVersion, BaseDelay: time.Millisecond,
		MaxDelay: 5 * time.Millisecond, MaxAttempts: 20, ResumeJitter: 5 * time.Millisecond})
	require.NoError(t, err)
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
		requireProfileAnswer(t, p, r.Response)
	}
	for i := range ops {
		var resp *Response
		if i%2 == 0 {
			// Keys from business IDs, in the header or the body...
			resp, err = c.Do(profileRequest(t, p, url, i, DeriveKey("profile-crash", p.Name, strconv.Itoa(i))))
		} else {
			// ...or bound to a name in the journal, and put there by idem.
			resp, err = c.DoNamed(fmt.Sprintf("profile-crash/%d", i), profileRequest(t, p, url, i, ""))
		}
		require.NoError(t, err)
		requireProfileAnswer(t, p, resp)
	}
}

// requireProfileAnswer checks resp is the API's answer to a first request,
// or GoCardless's replay of one.
func requireProfileAnswer(t *testing.T, p Profile, resp *Response) {
	t.Helper()
	if p.Name == "gocardless" && resp.Replayed {
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		return
	}
	require.Less(t, resp.StatusCode, 300, "%d %s", resp.StatusCode, resp.Body)
}
