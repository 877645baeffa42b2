// This file tests CompactJournal: the space it gives back, the records it
// keeps, its lock, and a process killed with SIGKILL at any point of it,
// against a naive compaction that writes over the journal in place.

package idem

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// compactFixture writes a journal at path that once held a body of
// nearly 8 MiB, since purged, and now holds pending operations with 2 MiB
// bodies, completed and failed ones, and name bindings.
func compactFixture(t *testing.T, path string) {
	t.Helper()
	s := newScripted(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/declined":
			w.WriteHeader(http.StatusPaymentRequired)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	})
	j, err := OpenJournal(path, JournalOptions{PurgeAfter: -1})
	require.NoError(t, err)
	c := newClient(t, quickOptions(Options{Journal: j, MaxAttempts: 1}))
	_, err = c.Do(post(t, s.srv.URL+"/ok", strings.Repeat("x", 8<<20-1024)))
	require.NoError(t, err)
	n, err := j.Purge(0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	big := strings.Repeat("p", 2<<20)
	for i := range 3 {
		_, err = c.DoNamed(fmt.Sprintf("pending/%d", i), post(t, s.srv.URL+"/down", big))
		require.ErrorIs(t, err, ErrRetriesExhausted)
	}
	for i := range 20 {
		_, err = c.DoNamed(fmt.Sprintf("done/%d", i), post(t, s.srv.URL+"/ok", `{"amount":`+strconv.Itoa(i)+`}`))
		require.NoError(t, err)
	}
	_, err = c.Do(post(t, s.srv.URL+"/declined", `{"amount":402}`))
	require.NoError(t, err)
	require.NoError(t, j.Close())
}

// dumpJournal returns every record of the journal at path, bucket by
// bucket, as bbolt holds them.
func dumpJournal(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	j, err := OpenJournal(path, JournalOptions{PurgeAfter: -1, LockTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer j.Close()
	out := map[string]map[string]string{}
	require.NoError(t, j.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			m := map[string]string{}
			out[string(name)] = m
			return b.ForEach(func(k, v []byte) error {
				m[string(k)] = string(v)
				return nil
			})
		})
	}))
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Size()
}

// leftovers lists the compactions' temporary files in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.compact-*"))
	require.NoError(t, err)
	return names
}

func TestCompactJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "client.journal")
	compactFixture(t, path)
	want := dumpJournal(t, path)
	size := fileSize(t, path)
	stale := path + ".compact-123"
	require.NoError(t, os.WriteFile(stale, []byte("left by a compaction that died"), 0o600))

	before, after, err := CompactJournal(path, JournalOptions{PurgeAfter: -1})
	require.NoError(t, err)
	t.Logf("compacted %d bytes to %d", before, after)
	assert.Equal(t, size, before)
	assert.Equal(t, fileSize(t, path), after)
	assert.GreaterOrEqual(t, before, int64(14<<20), "the file kept the purged body's pages")
	assert.LessOrEqual(t, after, before/2, "the copy holds the live records alone")
	assert.Equal(t, want, dumpJournal(t, path), "every record, byte for byte")
	assert.Empty(t, leftovers(t, dir), "no temporary file is left, the stale one included")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// The compacted journal is a journal: names keep their keys, pending
	// operations resume, new ones are written.
	j, err := OpenJournal(path, JournalOptions{PurgeAfter: -1})
	require.NoError(t, err)
	pending, err := j.Pending()
	require.NoError(t, err)
	assert.Len(t, pending, 3)
	s, _ := downUntilUp(t)
	c := newClient(t, quickOptions(Options{Journal: j}))
	k, err := c.NamedKey("done/7")
	require.NoError(t, err)
	assert.Contains(t, want["ops"], k, "done/7 keeps its key")
	_, err = c.Do(post(t, s.srv.URL, `{"after":"compaction"}`))
	require.Error(t, err) // 503: pending, written
	require.NoError(t, j.Close())

	// Compacting again gives back nothing more.
	before, after, err = CompactJournal(path, JournalOptions{PurgeAfter: -1})
	require.NoError(t, err)
	assert.LessOrEqual(t, after, before)
}

func TestCompactJournalRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t.Run("no journal", func(t *testing.T) {
		path := filepath.Join(dir, "none.journal")
		_, _, err := CompactJournal(path, JournalOptions{})
		require.ErrorIs(t, err, fs.ErrNotExist)
		assert.NoFileExists(t, path, "nothing is created")
	})
	t.Run("a journal in use", func(t *testing.T) {
		path := filepath.Join(dir, "held.journal")
		j := openJournal(t, path)
		_, _, err := CompactJournal(path, JournalOptions{LockTimeout: 50 * time.Millisecond})
		require.ErrorIs(t, err, ErrJournalLocked)
		assert.Empty(t, leftovers(t, dir))
		_, err = j.Pending()
		require.NoError(t, err, "the holder goes on")
	})
	t.Run("not a journal", func(t *testing.T) {
		path := filepath.Join(dir, "notes.txt")
		require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte("not bbolt "), 1000), 0o600))
		_, _, err := CompactJournal(path, JournalOptions{})
		require.ErrorIs(t, err, ErrJournalCorrupt)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, bytes.Repeat([]byte("not bbolt "), 1000), b, "left as it was")
	})
}

// TestOpenWhileCompacting: a process that opened the journal's file
// before a compaction renamed its copy over it, and took the file's lock
// after, must let that file go and open the new one. Here the compaction
// runs, whole, between the opener's open of the file and its lock. With
// the check that the file it holds is still the journal's turned off, the
// operation it then journals lands in the old file and is lost.
func TestOpenWhileCompacting(t *testing.T) { // not parallel: it sets package hooks
	for _, naive := range []bool{false, true} {
		t.Run(map[bool]string{false: "checked", true: "naive"}[naive], func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "client.journal")
			j := openJournal(t, path)
			require.NoError(t, j.Close())

			opens := 0
			testOpened = func(name string) {
				if name != path {
					return
				}
				// The opener's first open is the check of the file, under
				// a shared lock; its second, for writing, is about to
				// take the lock.
				if opens++; opens == 2 {
					_, _, err := CompactJournal(path, JournalOptions{})
					require.NoError(t, err)
				}
			}
			testSkipReplacedCheck = naive
			defer func() { testOpened, testSkipReplacedCheck = nil, false }()
			w, err := OpenJournal(path, JournalOptions{})
			require.NoError(t, err)
			testOpened = nil
			require.Greater(t, opens, 2, "the compaction ran between the open and the lock")
			s := newScripted(t, statuses(503))
			c := newClient(t, quickOptions(Options{Journal: w, MaxAttempts: 1}))
			req := post(t, s.srv.URL, `{}`)
			req.Header.Set("Idempotency-Key", "written-after-compaction")
			_, err = c.Do(req)
			require.ErrorIs(t, err, ErrRetriesExhausted)
			require.NoError(t, w.Close())

			ops := dumpJournal(t, path)["ops"]
			if naive {
				assert.NotContains(t, ops, "written-after-compaction", "the naive opener wrote to the replaced file")
				return
			}
			assert.Contains(t, ops, "written-after-compaction", "the opener let the old file go and opened the new one")
		})
	}
}

// compactSteps are the points of a compaction testCompactStep names.
var compactSteps = []string{"chunk", "copied", "synced", "checked", "renamed", "dir synced"}

// TestCompactJournalCrash runs compactions in a child process and kills
// it with SIGKILL: at each step of a compaction, then at random moments
// while it compacts again and again. After every kill the journal opens
// and holds every record it held before, byte for byte. A naive
// compaction that writes its copy over the journal in place, killed
// halfway, loses it.
func TestCompactJournalCrash(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	path := filepath.Join(dir, "client.journal")
	compactFixture(t, path)
	want := dumpJournal(t, path)

	child := func(mode string) (*exec.Cmd, *bufio.Reader, *syncBuffer) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCompactChild$")
		cmd.Env = childEnv("IDEM_COMPACT_JOURNAL="+path, "IDEM_COMPACT_MODE="+mode)
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		return cmd, bufio.NewReader(stdout), stderr
	}
	// wait waits for the child and requires it died of SIGKILL.
	wait := func(cmd *exec.Cmd, out *bufio.Reader, stderr *syncBuffer) {
		rest, _ := out.ReadString(0) // to EOF: the child is gone
		err := cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "child: %s%s", rest, stderr)
		status, ok := exit.Sys().(syscall.WaitStatus)
		require.True(t, ok)
		require.Equal(t, syscall.SIGKILL, status.Signal(), "child: %s%s", rest, stderr)
	}

	for _, step := range compactSteps {
		cmd, out, stderr := child("step:" + step)
		wait(cmd, out, stderr)
		require.Equal(t, want, dumpJournal(t, path), "killed at %q", step)
	}
	const randomKills = 8
	for i := range randomKills {
		cmd, out, stderr := child("loop")
		line, err := out.ReadString('\n')
		require.NoError(t, err, "child: %s", stderr)
		require.Equal(t, "compacting\n", line)
		time.Sleep(time.Duration(rng.IntN(60_000)) * time.Microsecond) // a random point, not a duration asserted
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		wait(cmd, out, stderr)
		require.Equal(t, want, dumpJournal(t, path), "random kill %d", i)
	}
	_, _, err := CompactJournal(path, JournalOptions{PurgeAfter: -1})
	require.NoError(t, err)
	assert.Equal(t, want, dumpJournal(t, path))
	assert.Empty(t, leftovers(t, dir), "the last compaction removed what the killed ones left")

	t.Run("naive compaction in place", func(t *testing.T) {
		cmd, out, stderr := child("naive")
		wait(cmd, out, stderr)
		j, err := OpenJournal(path, JournalOptions{PurgeAfter: -1})
		if err == nil {
			ops, lerr := j.Operations()
			j.Close()
			assert.True(t, lerr != nil || len(ops) < len(want["ops"]), "records survived a naive compaction killed halfway")
			return
		}
		assert.ErrorIs(t, err, ErrJournalCorrupt, "the naive compaction, killed halfway, left a journal that does not open")
	})
}

// TestHelperCompactChild is the child process of TestCompactJournalCrash.
// IDEM_COMPACT_MODE is "step:NAME" (compact, and die at that step), "loop"
// (compact again and again until killed) or "naive" (write the compacted
// copy over the journal in place, and die halfway).
func TestHelperCompactChild(t *testing.T) {
	path := os.Getenv("IDEM_COMPACT_JOURNAL")
	if path == "" {
		t.Skip("child process of TestCompactJournalCrash")
	}
	die := func() {
		syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not caught; nothing runs after it
	}
	opts := JournalOptions{PurgeAfter: -1, LockTimeout: 5 * time.Second}
	mode := os.Getenv("IDEM_COMPACT_MODE")
	compactChunk = 1 << 20 // copies in several transactions
	switch {
	case strings.HasPrefix(mode, "step:"):
		testCompactStep = func(step string) {
			if step == strings.TrimPrefix(mode, "step:") {
				die()
			}
		}
		_, _, err := CompactJournal(path, opts)
		require.NoError(t, err)
		t.Fatalf("the compaction passed no step %q", mode)
	case mode == "loop":
		fmt.Println("compacting")
		for range 500 {
			_, _, err := CompactJournal(path, opts)
			require.NoError(t, err)
		}
		die() // the parent's kill came late; die as it would have
	case mode == "naive":
		j, err := OpenJournal(path, opts)
		require.NoError(t, err)
		_, err = j.stop()
		require.NoError(t, err)
		tmp, err := j.compactTo()
		require.NoError(t, err)
		b, err := os.ReadFile(tmp)
		require.NoError(t, err)
		// Naive: the copy goes over the journal itself.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		require.NoError(t, err)
		_, err = f.Write(b[:len(b)/2])
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		die()
	}
	t.Fatalf("unknown mode %q", mode)
}
