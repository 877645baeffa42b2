// This file tests the journal: locking, damaged and foreign files, secrets,
// group commit, lazy writes, name bindings and purging.

package idem

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

func openJournal(t *testing.T, path string) *Journal {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "idem.journal")
	}
	j, err := OpenJournal(path, JournalOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}

// update and updateNow write op's record over whatever the journal
// holds, lazily and durably: for tests that set a journal up. Calls write
// through Journal.move, compare-and-set.
func (j *Journal) update(op *Operation) error {
	cp := *op
	return j.submit(false, &cp, rawWrite(op))
}

func (j *Journal) updateNow(op *Operation) error { return j.submit(true, nil, rawWrite(op)) }

func rawWrite(op *Operation) func(*bolt.Tx) error {
	enc, key, pending := op.encode(nil), []byte(op.Key), op.State == Pending
	return func(tx *bolt.Tx) error {
		if err := opsBucket(tx).Put(key, enc); err != nil {
			return err
		}
		if pending {
			return tx.Bucket(bucketPending).Put(key, nil)
		}
		return tx.Bucket(bucketPending).Delete(key)
	}
}

func TestJournalFileMode(t *testing.T) {
	t.Parallel()
	j := openJournal(t, "")
	info, err := os.Stat(j.Path())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// TestJournalLockedByAnotherProcess starts a second process that opens the
// same journal: it must get ErrJournalLocked within its timeout, not hang.
func TestJournalLockedByAnotherProcess(t *testing.T) {
	t.Parallel()
	j := openJournal(t, "")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpenJournal$")
	cmd.Env = childEnv("IDEM_HELPER_JOURNAL=" + j.Path())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "locked: true", "the second process returned, with ErrJournalLocked")
}

// TestHelperOpenJournal is the second process of the lock test.
func TestHelperOpenJournal(t *testing.T) {
	path := os.Getenv("IDEM_HELPER_JOURNAL")
	if path == "" {
		t.Skip("helper process for TestJournalLockedByAnotherProcess")
	}
	start := time.Now()
	_, err := OpenJournal(path, JournalOptions{LockTimeout: 200 * time.Millisecond})
	fmt.Printf("locked: %v after %v\n", assertIs(err, ErrJournalLocked), time.Since(start).Round(time.Millisecond))
	require.ErrorContains(t, err, path, "the error names the file")
}

func assertIs(err, target error) bool {
	return errors.Is(err, target)
}

func TestJournalRefusesForeignAndCorruptFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 1000), 0o600))

	foreign := filepath.Join(dir, "foreign")
	db, err := bolt.Open(foreign, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("someone-else"))
		return err
	}))
	require.NoError(t, db.Close())

	newer := filepath.Join(dir, "newer")
	j, err := OpenJournal(newer, JournalOptions{})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	db, err = bolt.Open(newer, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaVersion, []byte{9}) }))
	require.NoError(t, db.Close())

	for name, path := range map[string]string{"garbage": garbage, "foreign bbolt": foreign, "future version": newer} {
		t.Run(name, func(t *testing.T) {
			before, err := os.ReadFile(path)
			require.NoError(t, err)
			_, err = OpenJournal(path, JournalOptions{})
			require.ErrorIs(t, err, ErrJournalCorrupt)
			assert.Contains(t, err.Error(), path, "the error names the file")
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, before, after, "the file is left as it was")
		})
	}
}

func TestJournalCorruptRecord(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j")
	j, err := OpenJournal(path, JournalOptions{})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketOps).Put([]byte("k1"), []byte{1, 1, 0xff}); err != nil {
			return err
		}
		return tx.Bucket(bucketPending).Put([]byte("k1"), nil)
	}))
	require.NoError(t, db.Close())

	j = openJournal(t, path)
	_, _, err = j.Lookup("k1")
	require.ErrorIs(t, err, ErrJournalCorrupt)
	assert.Contains(t, err.Error(), path)
	_, err = j.Pending()
	require.ErrorIs(t, err, ErrJournalCorrupt)

	c := newClient(t, Options{Journal: j})
	req := post(t, "http://127.0.0.1:1/", `{}`)
	req.Header.Set("Idempotency-Key", "k1")
	_, err = c.Do(req)
	require.ErrorIs(t, err, ErrJournalCorrupt, "a damaged record is never overwritten")
}

// TestJournalNeverStoresSecrets sends credentials on a journaled request
// and looks for them in every byte of the file.
func TestJournalNeverStoresSecrets(t *testing.T) {
	t.Parallel()
	const token = "Bearer sk_live_51SECRETTOKENvalue"
	s := newScripted(t, statuses(503, 201))
	j := openJournal(t, "")
	c := newClient(t, quickOptions(Options{Journal: j, SecretHeaders: []string{"x-api-secret"}}))
	// A password in the URL's user information is a credential too.
	req := post(t, strings.Replace(s.srv.URL, "http://", "http://user:url-secret-value@", 1), `{"amount":5}`)
	req.Header.Set("Authorization", token)
	req.Header.Set("Cookie", "session=cookie-secret-value")
	req.Header.Set("Proxy-Authorization", "Basic proxy-secret-value")
	req.Header.Set("X-Api-Secret", "custom-secret-value")
	req.Header.Set("X-Trace", "kept-header-value")
	resp, err := c.Do(req)
	require.NoError(t, err)
	for _, r := range s.seen() {
		assert.Equal(t, token, r.Header.Get("Authorization"), "credentials still go on the wire, every attempt")
	}
	op, ok, err := j.Lookup(resp.Key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "kept-header-value", op.Header.Get("X-Trace"))
	require.NoError(t, j.Close())

	raw, err := os.ReadFile(j.Path())
	require.NoError(t, err)
	require.Contains(t, string(raw), "kept-header-value", "the file is readable as written")
	assert.NotContains(t, op.URL, "user")
	for _, secret := range []string{"SECRETTOKEN", "cookie-secret-value", "proxy-secret-value", "custom-secret-value", "url-secret-value"} {
		assert.NotContains(t, string(raw), secret)
	}
}

// TestJournalWritesBeforeTheFirstByte checks, from inside the server's
// handler, that the operation is already committed when the first attempt
// arrives.
func TestJournalWritesBeforeTheFirstByte(t *testing.T) {
	t.Parallel()
	j := openJournal(t, "")
	var mu sync.Mutex
	var states []State
	s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		var op *Operation
		err := j.db.View(func(tx *bolt.Tx) error {
			var err error
			op, err = j.read(tx, r.Header.Get("Idempotency-Key"))
			return err
		})
		mu.Lock()
		if err == nil && op != nil {
			states = append(states, op.State)
		}
		mu.Unlock()
		w.WriteHeader([]int{503, 201}[min(n, 1)])
	})
	c := newClient(t, quickOptions(Options{Journal: j}))
	resp, err := c.Do(post(t, s.srv.URL, `{"a":1}`))
	require.NoError(t, err)
	assert.Equal(t, []State{Pending, Pending}, states, "committed and pending at every attempt")
	op, _, err := j.Lookup(resp.Key)
	require.NoError(t, err)
	assert.Equal(t, Completed, op.State)
	assert.Equal(t, 2, op.Attempts)
	assert.Equal(t, 201, op.Response.StatusCode)
}

// TestJournalMintedKeySkipsLookups: a key minted for the call cannot be in
// the journal yet, so Do writes it without looking it up first (no read
// transaction); a key the caller brings is looked up.
func TestJournalMintedKeySkipsLookups(t *testing.T) {
	t.Parallel()
	j := openJournal(t, "")
	s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(201) })
	c := newClient(t, Options{Journal: j})
	reads := func() int { return j.db.Stats().TxN }

	before := reads()
	resp, err := c.Do(post(t, s.srv.URL, `{"a":1}`))
	require.NoError(t, err)
	assert.Equal(t, before, reads(), "no lookup for a minted key")
	op, ok, err := j.Lookup(resp.Key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Completed, op.State)

	before = reads()
	req := post(t, s.srv.URL, `{"a":2}`)
	req.Header.Set("Idempotency-Key", "caller-key-1")
	_, err = c.Do(req)
	require.NoError(t, err)
	assert.Equal(t, before+1, reads(), "a caller's key is looked up")
}

func TestJournalAnswersRepeats(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Set-Cookie", "session=abc")
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"charge":%d}`, n)
	})
	path := filepath.Join(t.TempDir(), "j")
	j := openJournal(t, path)
	c := newClient(t, Options{Journal: j})
	send := func(c *Client, body string) (*Response, error) {
		req := post(t, s.srv.URL+"/charges", body)
		req.Header.Set("Idempotency-Key", "order-1")
		return c.Do(req)
	}
	first, err := send(c, `{"amount":1}`)
	require.NoError(t, err)
	assert.False(t, first.FromJournal)

	again, err := send(c, `{"amount":1}`)
	require.NoError(t, err)
	assert.True(t, again.FromJournal)
	assert.Equal(t, first.Body, again.Body)
	assert.Equal(t, 201, again.StatusCode)
	assert.Empty(t, again.Header.Get("Set-Cookie"), "cookies are not journaled")

	_, err = send(c, `{"amount":2}`)
	require.ErrorIs(t, err, ErrKeyReused)
	assert.Len(t, s.seen(), 1, "repeats never reached the server")

	// The lazily written outcome is on disk after Close, for the next process.
	require.NoError(t, j.Close())
	j2 := openJournal(t, path)
	c2 := newClient(t, Options{Journal: j2})
	again, err = send(c2, `{"amount":1}`)
	require.NoError(t, err)
	assert.True(t, again.FromJournal)
	assert.Equal(t, first.Body, again.Body)
	assert.Len(t, s.seen(), 1)
}

func TestJournalRemembersKeyReuseAnswers(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeKeyReused(w) })
	c := newClient(t, Options{Journal: openJournal(t, "")})
	for range 2 {
		req := post(t, s.srv.URL, `{}`)
		req.Header.Set("Idempotency-Key", "k")
		_, err := c.Do(req)
		require.ErrorIs(t, err, ErrKeyReused)
	}
	assert.Len(t, s.seen(), 1)
}

func TestJournalPendingContinuesWithSameBytes(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503, 503, 201))
	j := openJournal(t, "")
	c := newClient(t, quickOptions(Options{Journal: j, MaxAttempts: 2}))
	req := post(t, s.srv.URL, `{"amount":7}`)
	req.Header.Set("Idempotency-Key", "pay-7")
	_, err := c.Do(req)
	require.ErrorIs(t, err, ErrRetriesExhausted)
	op, _, err := j.Lookup("pay-7")
	require.NoError(t, err)
	assert.Equal(t, Pending, op.State)

	pending, err := j.Pending()
	require.NoError(t, err)
	require.Len(t, pending, 1)

	req = post(t, s.srv.URL, `{"amount":7}`)
	req.Header.Set("Idempotency-Key", "pay-7")
	resp, err := c.Do(req)
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	for _, r := range s.seen() {
		assert.Equal(t, "pay-7", r.Key)
		assert.Equal(t, `{"amount":7}`, string(r.Body))
	}
	pending, err = j.Pending()
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// TestJournalGroupCommit: durable writes that queue while a commit is in
// progress go to disk together, in the next commit. A first write holds
// the committer until every writer has queued; in a synctest bubble,
// synctest.Wait says when they all have.
func TestJournalGroupCommit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		j := openJournal(t, "")
		gate := make(chan struct{})
		go j.submit(true, nil, func(*bolt.Tx) error { <-gate; return nil })
		synctest.Wait() // the committer is inside the first commit, held
		before := j.commits.Load()
		const writers = 64
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				op := sampleOperation()
				op.Key = fmt.Sprintf("group-%d", i)
				op.State, op.Response = Pending, nil
				prev, err := j.begin(op)
				assert.NoError(t, err)
				assert.Nil(t, prev)
			}()
		}
		synctest.Wait() // every writer has queued its write and waits for it
		close(gate)
		wg.Wait()
		assert.Equal(t, int64(1), j.commits.Load()-before, "the writes that queued together share one commit")
		pending, err := j.Pending()
		require.NoError(t, err)
		assert.Len(t, pending, writers, "and every write is there")
	})
}

// TestJournalRecordsSurviveBufferReuse: records are encoded into pooled
// buffers that bbolt reads until the commit ends. Many writers at once,
// each writing a record durably, then lazily, then durably again, with
// bodies from a few bytes to more than a pooled buffer holds: after
// reopening, every record is exactly the last one its writer wrote, so no
// buffer was reused while a commit still held it.
func TestJournalRecordsSurviveBufferReuse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j")
	j := openJournal(t, path)
	const writers, rounds = 32, 20
	want := make([][]*Operation, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				op := sampleOperation()
				op.minted, op.State, op.Response = true, Pending, nil
				op.UpdatedAt = time.Now() // not purged when the journal opens again
				op.Body = bytes.Repeat([]byte{byte('a' + w%26)}, []int{3, 900, 5000, maxPooledBuf + 1}[(w+i)%4])
				if _, err := j.begin(op); !assert.NoError(t, err) {
					return
				}
				op.State, op.Attempts = Pending, i
				assert.NoError(t, j.update(op))
				op.State, op.Response = Completed, &StoredResponse{StatusCode: 200 + i, Body: []byte(op.Key)}
				assert.NoError(t, j.updateNow(op))
				cp := *op
				cp.minted = false // not journaled
				want[w] = append(want[w], &cp)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, j.Close())
	j = openJournal(t, path)
	for _, ops := range want {
		for _, w := range ops {
			got, ok, err := j.Lookup(w.Key)
			require.NoError(t, err)
			require.True(t, ok)
			assertSameOperation(t, w, got)
		}
	}
}

func TestNamedKeysSurviveReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j")
	j := openJournal(t, path)
	c := newClient(t, Options{Journal: j, KeyFormat: ULID})
	k1, err := c.NamedKey("payout/2026-12-25/417")
	require.NoError(t, err)
	assert.Len(t, k1, 26)
	k2, err := c.NamedKey("payout/2026-12-25/417")
	require.NoError(t, err)
	other, err := c.NamedKey("payout/2026-12-25/418")
	require.NoError(t, err)
	assert.Equal(t, k1, k2)
	assert.NotEqual(t, k1, other)
	require.NoError(t, j.Close())

	c2 := newClient(t, Options{Journal: openJournal(t, path)})
	k3, err := c2.NamedKey("payout/2026-12-25/417")
	require.NoError(t, err)
	assert.Equal(t, k1, k3, "the binding is durable")

	_, err = c2.NamedKey("")
	require.Error(t, err)
	_, err = newClient(t, Options{}).NamedKey("x")
	require.ErrorIs(t, err, ErrNoJournal)
}

func TestJournalPurge(t *testing.T) {
	t.Parallel()
	j := openJournal(t, "")
	old := time.Now().Add(-48 * time.Hour)
	for i, st := range []State{Completed, Failed, Expired, Pending} {
		op := sampleOperation()
		op.Key = fmt.Sprintf("old-%d", i)
		op.State, op.UpdatedAt = st, old
		_, err := j.begin(op)
		require.NoError(t, err)
	}
	fresh := sampleOperation()
	fresh.Key, fresh.UpdatedAt = "fresh", time.Now()
	_, err := j.begin(fresh)
	require.NoError(t, err)
	_, err = j.namedKey("bound-name", func() string { return "old-0" })
	require.NoError(t, err)
	_, err = j.namedKey("waiting-name", func() string { return "not-sent-yet" })
	require.NoError(t, err)

	n, err := j.Purge(24 * time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "the three old terminal operations")
	for key, want := range map[string]bool{"old-0": false, "old-1": false, "old-2": false, "old-3": true, "fresh": true} {
		_, ok, err := j.Lookup(key)
		require.NoError(t, err)
		assert.Equal(t, want, ok, key)
	}
	n, err = j.Purge(-time.Hour) // everything terminal is "older" than the future
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	key, err := j.namedKey("bound-name", func() string { return "minted-again" })
	require.NoError(t, err)
	assert.Equal(t, "minted-again", key, "a binding goes with its purged operation")
	key, err = j.namedKey("waiting-name", func() string { return "minted-again" })
	require.NoError(t, err)
	assert.Equal(t, "not-sent-yet", key, "a binding awaiting its operation stays")
}

func TestJournalClosed(t *testing.T) {
	t.Parallel()
	j := openJournal(t, "")
	require.NoError(t, j.Close())
	require.NoError(t, j.Close(), "closing twice is harmless")
	_, _, err := j.Lookup("x")
	require.ErrorIs(t, err, ErrJournalClosed)
	c := newClient(t, Options{Journal: j})
	_, err = c.Do(post(t, "http://127.0.0.1:1/", `{}`))
	require.ErrorIs(t, err, ErrJournalClosed)
}

// TestJournalLazyWritesAreNotPutOff: lazy writes alone are committed
// within lazyFlushDelay of being written, even while more keep arriving,
// and they share commits. It runs in a synctest bubble: the committer's
// timer fires exactly when due, whatever the machine's load.
func TestJournalLazyWritesAreNotPutOff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		j := openJournal(t, "")
		committed := func(key string) bool {
			j.lazyMu.Lock()
			defer j.lazyMu.Unlock()
			_, waiting := j.lazy[key]
			return !waiting
		}
		before := j.commits.Load()
		const writes = 40
		var written []time.Time
		for i := range writes {
			key := fmt.Sprint("lazy-", i)
			require.NoError(t, j.update(&Operation{Key: key, Method: http.MethodPost, State: Completed, Response: &StoredResponse{StatusCode: 200}}))
			written = append(written, time.Now())
			time.Sleep(lazyFlushDelay / 4)
			synctest.Wait() // the committer has done all it was due to do by now
			for k, at := range written {
				if time.Since(at) >= lazyFlushDelay {
					require.True(t, committed(fmt.Sprint("lazy-", k)), "write %d, %v old, is not committed", k, time.Since(at))
				}
			}
		}
		commits := j.commits.Load() - before
		t.Logf("%d lazy writes in %d commits", writes, commits)
		assert.LessOrEqual(t, commits, int64(writes/4+1), "lazy writes share commits: one per lazyFlushDelay")
	})
}

// TestJournalCorruptFileStaysCorrupt: a file damaged so that bbolt panics
// while opening it is refused as corrupt; opening it again in the same
// process, where bbolt's lost memory map still holds the file's lock, says
// corrupt again, not locked by another process.
func TestJournalCorruptFileStaysCorrupt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j")
	j, err := OpenJournal(path, JournalOptions{})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for i := 2 * os.Getpagesize(); i < len(raw); i++ {
		raw[i] = 0xff
	}
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	for range 2 {
		_, err = OpenJournal(path, JournalOptions{LockTimeout: 100 * time.Millisecond})
		require.ErrorIs(t, err, ErrJournalCorrupt)
	}
}

// TestJournalPurgeKeepsBindingsAwaitingTheirOperation: a name bound by
// NamedKey whose operation is not journaled yet keeps its key through a
// Purge; a binding goes only with its purged operation.
func TestJournalPurgeKeepsBindingsAwaitingTheirOperation(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	j := openJournal(t, "")
	c := newClient(t, Options{Journal: j})
	waiting, err := c.NamedKey("payout/waiting")
	require.NoError(t, err)
	done, err := c.NamedKey("payout/done")
	require.NoError(t, err)
	_, err = c.DoNamed("payout/done", post(t, s.srv.URL, `{}`))
	require.NoError(t, err)
	require.NoError(t, j.Close()) // flush the lazily written outcome
	j = openJournal(t, j.Path())
	c = newClient(t, Options{Journal: j})

	n, err := j.Purge(0)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	again, err := c.NamedKey("payout/waiting")
	require.NoError(t, err)
	assert.Equal(t, waiting, again, "the binding awaiting its operation is kept")
	fresh, err := c.NamedKey("payout/done")
	require.NoError(t, err)
	assert.NotEqual(t, done, fresh, "the purged operation's binding went with it")
}

// TestJournalPurgeAfter: finished operations older than PurgeAfter go
// when the journal opens.
func TestJournalPurgeAfter(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]JournalOptions{
		"PurgeAfter": {PurgeAfter: time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "j")
			j := openJournal(t, path)
			old := sampleOperation()
			old.Key, old.UpdatedAt = "two-hours-old", time.Now().Add(-2*time.Hour)
			recent := sampleOperation()
			recent.Key, recent.UpdatedAt = "a-minute-old", time.Now().Add(-time.Minute)
			for _, op := range []*Operation{old, recent} {
				require.NoError(t, j.updateNow(op))
			}
			require.NoError(t, j.Close())
			j, err := OpenJournal(path, opts)
			require.NoError(t, err)
			defer j.Close()
			_, ok, err := j.Lookup(old.Key)
			require.NoError(t, err)
			assert.False(t, ok, "purged on opening")
			_, ok, err = j.Lookup(recent.Key)
			require.NoError(t, err)
			assert.True(t, ok)
		})
	}
}
