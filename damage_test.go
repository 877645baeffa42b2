// This file holds the damaged-journal tests: random byte flips over a
// journal of pending operations, opened and resumed in a child process,
// against a server that compares every request with the original.

package idem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// original is one pending operation as it was first sent.
type original struct {
	Method, Path, Host, ContentType, Op string
	Body                                []byte
}

// comparingServer answers 503 until resuming is set, then 201, and checks
// every request it gets while resuming against the original with its key.
// Requests are attributed to a run by their X-Run header.
type comparingServer struct {
	mu        sync.Mutex
	resuming  bool
	originals map[string]original // by key
	sent      map[string][]string // run -> keys sent
	wrong     map[string][]string // run -> what differed
}

func (s *comparingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	got := original{Method: r.Method, Path: r.URL.RequestURI(), Host: r.Host,
		ContentType: r.Header.Get("Content-Type"), Op: r.Header.Get("X-Op"), Body: body}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.resuming {
		s.originals[key] = got
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	run := r.Header.Get("X-Run")
	s.sent[run] = append(s.sent[run], key)
	if want, ok := s.originals[key]; !ok {
		s.wrong[run] = append(s.wrong[run], fmt.Sprintf("unknown key %q", key))
	} else if want.Method != got.Method || want.Path != got.Path || want.Host != got.Host ||
		want.ContentType != got.ContentType || want.Op != got.Op || !bytes.Equal(want.Body, got.Body) {
		s.wrong[run] = append(s.wrong[run], fmt.Sprintf("key %q: sent %+v, first sent %+v", key, got, want))
	}
	w.WriteHeader(http.StatusCreated)
}

// damageReport is what the child process says it found.
type damageReport struct {
	OpenErr     string
	OpenCorrupt bool
	ResumeErr   string
	Results     []damageResult
}

type damageResult struct {
	Key string
	// QuotedKey is Key as %q writes it: a damaged key need not be UTF-8,
	// and JSON would replace its stray bytes.
	QuotedKey string
	Status    int
	Err       string
	Corrupt   bool
}

// TestDamagedJournals flips random bytes at three densities, several
// seeds each, over a journal of pending operations. Each run opens the
// damaged copy and resumes it in a child process (a panic in one of
// bbolt's goroutines would kill a test process, so the parent watches one
// die instead). Every run must end in ErrJournalCorrupt from OpenJournal,
// or in a Resume that sends only undamaged operations, exactly as first
// sent, and reports the others as corrupt, naming the file and the key.
// Never a crash, never a damaged request on the wire.
func TestDamagedJournals(t *testing.T) {
	t.Parallel()
	srv := &comparingServer{originals: map[string]original{}, sent: map[string][]string{}, wrong: map[string][]string{}}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	// A journal of pending operations: small and large bodies (a large one
	// spans bbolt overflow pages), a Host override, a name.
	const ops = 24
	path := filepath.Join(t.TempDir(), "pristine.journal")
	j, err := OpenJournal(path, JournalOptions{})
	require.NoError(t, err)
	c := newClient(t, Options{Journal: j, MaxAttempts: 1})
	for i := range ops {
		body := fmt.Sprintf(`{"op":%d,"pad":%q}`, i, strings.Repeat("x", []int{10, 300, 3000, 9000}[i%4]))
		req := post(t, ts.URL+fmt.Sprintf("/charges?n=%d", i), body)
		req.Header.Set("X-Op", fmt.Sprint(i))
		if i%5 == 0 {
			req.Host = "payments.internal"
		}
		var err error
		if i%3 == 0 {
			_, err = c.DoNamed(fmt.Sprintf("damage/%d", i), req)
		} else {
			_, err = c.Do(req)
		}
		require.ErrorIs(t, err, ErrRetriesExhausted)
	}
	require.NoError(t, j.Close())
	pristine, err := os.ReadFile(path)
	require.NoError(t, err)
	srv.mu.Lock()
	require.Len(t, srv.originals, ops)
	srv.resuming = true
	srv.mu.Unlock()
	t.Logf("journal of %d pending operations: %d bytes", ops, len(pristine))

	var opened, resumedAll, refused int
	var mu sync.Mutex
	t.Run("flips", func(t *testing.T) {
		for _, density := range []int{1, 10, 200} {
			seeds := 6
			if density == 200 {
				seeds = 4
			}
			for seed := range seeds {
				run := fmt.Sprintf("%d-bytes-seed-%d", density, seed)
				t.Run(run, func(t *testing.T) {
					t.Parallel()
					damaged := flipBytes(pristine, density, uint64(seed))
					file := filepath.Join(t.TempDir(), "damaged.journal")
					require.NoError(t, os.WriteFile(file, damaged, 0o600))
					rep := runDamagedChild(t, file, run)

					srv.mu.Lock()
					wrong, sent := srv.wrong[run], srv.sent[run]
					srv.mu.Unlock()
					require.Empty(t, wrong, "a damaged operation went on the wire")

					if rep.OpenErr != "" {
						assert.True(t, rep.OpenCorrupt, "OpenJournal: %s", rep.OpenErr)
						assert.Contains(t, rep.OpenErr, file, "the error names the file")
						assert.Empty(t, sent)
						mu.Lock()
						refused++
						mu.Unlock()
						return
					}
					if rep.ResumeErr != "" {
						assert.Contains(t, rep.ResumeErr, "corrupt", "Resume: %s", rep.ResumeErr)
						return
					}
					mu.Lock()
					opened++
					mu.Unlock()
					accounted := map[string]bool{}
					ok := 0
					for _, r := range rep.Results {
						if r.Err != "" {
							assert.True(t, r.Corrupt, "a result that is no success is a corrupt record: %s", r.Err)
							assert.Contains(t, r.Err, file, "the error names the file")
							assert.Contains(t, r.Err, r.QuotedKey, "the error names the key")
						} else {
							assert.Equal(t, http.StatusCreated, r.Status)
							ok++
						}
						accounted[r.Key] = true
					}
					assert.Len(t, sent, ok, "each success was sent once")
					if density == 1 {
						for key := range srv.originals {
							assert.True(t, accounted[key], "one flip: operation %q is resumed or reported, never lost", key)
						}
					}
					if ok == ops {
						mu.Lock()
						resumedAll++
						mu.Unlock()
					}
				})
			}
		}
	})
	t.Logf("runs: %d refused at opening, %d opened (%d of them resumed every operation)", refused, opened, resumedAll)
}

// flipBytes returns a copy of b with n bytes, at distinct random places,
// changed to other random values.
func flipBytes(b []byte, n int, seed uint64) []byte {
	out := bytes.Clone(b)
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	for _, i := range rng.Perm(len(out))[:n] {
		out[i] ^= byte(1 + rng.IntN(255))
	}
	return out
}

// runDamagedChild opens and resumes the journal at file in a child
// process, and returns its report. A child that crashes fails the test,
// with its output.
func runDamagedChild(t *testing.T, file, run string) damageReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard against a hang, not a measure
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperDamagedJournal$")
	cmd.Env = childEnv("IDEM_DAMAGED_JOURNAL="+file, "IDEM_DAMAGED_RUN="+run)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "the child crashed:\n%s\n%s", stdout.String(), stderr.String())
	assert.NotContains(t, stderr.String(), "panic")
	line, _, _ := strings.Cut(stdout.String()[strings.Index(stdout.String(), "REPORT ")+len("REPORT "):], "\n")
	var rep damageReport
	require.NoError(t, json.Unmarshal([]byte(line), &rep), "child output:\n%s", stdout.String())
	return rep
}

// TestHelperDamagedJournal is the child process of TestDamagedJournals.
func TestHelperDamagedJournal(t *testing.T) {
	file := os.Getenv("IDEM_DAMAGED_JOURNAL")
	if file == "" {
		t.Skip("child process of TestDamagedJournals")
	}
	var rep damageReport
	defer func() {
		b, _ := json.Marshal(rep)
		fmt.Printf("REPORT %s\n", b)
	}()
	j, err := OpenJournal(file, JournalOptions{PurgeAfter: -1, LockTimeout: 10 * time.Second})
	if err != nil {
		rep.OpenErr, rep.OpenCorrupt = err.Error(), errors.Is(err, ErrJournalCorrupt)
		return
	}
	defer j.Close()
	run := os.Getenv("IDEM_DAMAGED_RUN")
	c, err := New(Options{Journal: j, MaxAttempts: 1, ResumeJitter: -1, PrepareRequest: func(r *http.Request) error {
		r.Header.Set("X-Run", run)
		return nil
	}})
	require.NoError(t, err)
	res, err := c.Resume(context.Background())
	if err != nil {
		rep.ResumeErr = err.Error()
		return
	}
	for _, r := range res {
		out := damageResult{Key: r.Operation.Key, QuotedKey: fmt.Sprintf("%q", r.Operation.Key)}
		if r.Err != nil {
			out.Err, out.Corrupt = r.Err.Error(), errors.Is(r.Err, ErrJournalCorrupt)
		} else {
			out.Status = r.Response.StatusCode
		}
		rep.Results = append(rep.Results, out)
	}
}
