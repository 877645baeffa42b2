// This file holds the crash test of every profile: a client process
// killed with SIGKILL mid-attempt against a fake of its API, restarted,
// resuming from the journal.

package idem

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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

// URL returns the fake's base URL.
func (f *fakeAPI) URL() string { return f.srv.URL }

// profileCrashRun runs killRun for profile p against f. Each kill comes
// within 3 attempts of the last, and an attempt that reaches the work
// finishes at most one operation, so operations are left to send until
// the last kill.
func profileCrashRun(t *testing.T, p Profile, f crashTarget) {
	const ops = 16
	journal := filepath.Join(t.TempDir(), "client.journal")
	got := killRun(t, crashPlan{
		ops: ops, kills: 4, spread: 3, faultOdds: 8,
		child: "TestHelperProfileCrashChild",
		env: []string{"IDEM_PROFILE_CRASH=" + p.Name, "IDEM_PROFILE_CRASH_URL=" + f.URL(),
			"IDEM_PROFILE_CRASH_JOURNAL=" + journal, "IDEM_PROFILE_CRASH_OPS=" + strconv.Itoa(ops)},
	}, f)
	for op, keys := range got.keysByOp {
		require.Len(t, keys, 1, "operation %d was sent under one key across restarts", op)
		for k := range keys {
			assert.Equal(t, 1, got.executed[k], "operation %d ran exactly once", op)
			assert.LessOrEqual(t, len(k), p.MaxKeyLen)
		}
	}
	assert.Len(t, got.executed, ops)
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
	j := openChildJournal(t, os.Getenv("IDEM_PROFILE_CRASH_JOURNAL"))
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
