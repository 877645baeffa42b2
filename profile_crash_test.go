// This file holds the crash test of every profile: a client process
// killed with SIGKILL mid-attempt against a fake of its API, restarted,
// resuming from the journal.

package idem

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
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

	"github.com/idemhq/idem/internal/bodykey"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
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
			profileCrashRun(t, p, newFakeAPI(t, p))
		})
	}
	// A body-keyed client against the server package's middleware with
	// the same body field: a resumed operation is replayed from the
	// middleware's record.
	t.Run("square through server.Middleware", func(t *testing.T) {
		t.Parallel()
		profileCrashRun(t, Square(), newMiddlewareTarget(t, Square()))
	})
}

// crashTarget is the API a crash test's client talks to.
type crashTarget interface {
	// URL is the API's base URL.
	URL() string
	// hooks sets the functions run before the work and after it (see
	// fakeAPI.hooks).
	hooks(before func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool, after func(r *http.Request, key string) bool)
	// fault answers a transient failure.
	fault(w http.ResponseWriter)
	executions() map[string]int
	mismatches() int
}

// URL returns the fake's base URL.
func (f *fakeAPI) URL() string { return f.srv.URL }

func profileCrashRun(t *testing.T, p Profile, f crashTarget) {
	// Each kill comes within 3 attempts of the last, and an attempt that
	// reaches the work finishes at most one operation, so operations are
	// left to send until the last kill.
	const ops, kills = 16, 4
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	faults := rand.New(rand.NewPCG(seed, 1))

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
		cmd.Env = childEnv("IDEM_PROFILE_CRASH="+p.Name, "IDEM_PROFILE_CRASH_URL="+f.URL(),
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

// middlewareTarget is a crash test's API built on the server package: the
// middleware, with the profile's body field, in front of a handler that
// counts executions by key. Unlike fakeAPI it answers repeats the
// middleware's way (a replay, Idempotent-Replayed: true).
type middlewareTarget struct {
	srv  *httptest.Server
	path bodykey.Path

	mu       sync.Mutex
	executed map[string]int
	bodies   map[string][][]byte
	before   func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool
	after    func(r *http.Request, key string) bool
}

func newMiddlewareTarget(t *testing.T, p Profile) *middlewareTarget {
	t.Helper()
	m := &middlewareTarget{executed: map[string]int{}, bodies: map[string][][]byte{}}
	var err error
	m.path, err = bodykey.ParsePath(p.BodyKey)
	require.NoError(t, err)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		k, _, _ := bodykey.Get(body, m.path)
		m.mu.Lock()
		m.executed[k]++
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"payment":{"id":%q,"status":"COMPLETED"}}`, k)
	})
	mw := server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true, BodyKey: p.BodyKey})(app)
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		k, _, _ := bodykey.Get(body, m.path)
		m.mu.Lock()
		m.bodies[k] = append(m.bodies[k], body)
		before, after := m.before, m.after
		m.mu.Unlock()
		if before != nil && !before(w, r, k, body) {
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		// The middleware answers into a recorder, so that the answer can
		// be lost after it recorded the outcome.
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, r)
		if after != nil && !after(r, k) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *middlewareTarget) URL() string { return m.srv.URL }

func (m *middlewareTarget) hooks(before func(w http.ResponseWriter, r *http.Request, key string, body []byte) bool, after func(r *http.Request, key string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.before, m.after = before, after
}

func (m *middlewareTarget) fault(w http.ResponseWriter) {
	w.WriteHeader(http.StatusServiceUnavailable)
}

func (m *middlewareTarget) executions() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.executed)
}

func (m *middlewareTarget) mismatches() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, bs := range m.bodies {
		for _, b := range bs[1:] {
			if !bytes.Equal(b, bs[0]) {
				n++
				break
			}
		}
	}
	return n
}
