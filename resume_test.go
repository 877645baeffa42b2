// This file tests Resume: credentials, expiry, bounded concurrency, and
// calls with one key running one at a time.

package idem

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

func TestResumeContinuesPendingWithCredentials(t *testing.T) {
	t.Parallel()
	s, up := downUntilUp(t)
	path := filepath.Join(t.TempDir(), "j")
	j, err := OpenJournal(path, JournalOptions{})
	require.NoError(t, err)
	c := newClient(t, quickOptions(Options{Journal: j, MaxAttempts: 1}))
	var keys []string
	for i := range 3 {
		req := post(t, s.srv.URL+"/charges", fmt.Sprintf(`{"n":%d}`, i))
		req.Header.Set("Authorization", "Bearer first-process")
		req.Header.Set("X-Request-Source", "batch")
		if i == 1 {
			req.Host = "payments.internal" // a virtual host behind the address
		}
		_, err := c.Do(req)
		var e *Error
		require.ErrorAs(t, err, &e)
		keys = append(keys, e.Key)
	}
	require.NoError(t, j.Close()) // the process ends

	up.Store(true)
	j = openJournal(t, path)
	c = newClient(t, Options{
		Journal:      j,
		ResumeJitter: -1,
		PrepareRequest: func(r *http.Request) error {
			r.Header.Set("Authorization", "Bearer second-process")
			return nil
		},
	})
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 3)
	for i, r := range res {
		require.NoError(t, r.Err)
		assert.Equal(t, 201, r.Response.StatusCode)
		assert.Equal(t, keys[i], r.Operation.Key, "oldest first")
	}
	seen := s.seen()
	require.Len(t, seen, 6)
	resent := map[string]string{}
	for _, r := range seen[3:] {
		assert.Equal(t, "Bearer second-process", r.Header.Get("Authorization"), "credentials re-applied, never journaled")
		assert.Equal(t, "batch", r.Header.Get("X-Request-Source"), "safe headers journaled")
		resent[r.Key] = string(r.Body)
	}
	resentHost := map[string]string{}
	for _, r := range seen[3:] {
		resentHost[r.Key] = r.Host
	}
	for i, r := range seen[:3] {
		assert.Equal(t, r.Body, []byte(resent[r.Key]), "op %d: same key, same bytes", i)
		assert.Equal(t, r.Host, resentHost[r.Key], "op %d: same Host", i)
	}
	assert.Equal(t, "payments.internal", seen[1].Host)
	pending, err := j.Pending()
	require.NoError(t, err)
	assert.Empty(t, pending)
	res, err = c.Resume(context.Background())
	require.NoError(t, err)
	assert.Empty(t, res, "nothing left to resume")
}

func TestResumeExpiresOldOperations(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	j := openJournal(t, "")
	op := sampleOperation()
	op.Key, op.URL, op.State, op.Response = "old-op", s.srv.URL, Pending, nil
	op.Fingerprint = fingerprint(op.Method, op.URL, op.Header.Get("Content-Type"), op.Body)
	op.CreatedAt = time.Now().Add(-25 * time.Hour)
	op.ExpiresAt = op.CreatedAt.Add(24 * time.Hour)
	_, err := j.begin(op)
	require.NoError(t, err)

	c := newClient(t, Options{Journal: j, ResumeJitter: -1})
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.ErrorIs(t, res[0].Err, ErrExpired)
	assert.Equal(t, "old-op", res[0].Operation.Key)
	assert.Empty(t, s.seen(), "an expired operation is never sent")
	got, _, err := j.Lookup("old-op")
	require.NoError(t, err)
	assert.Equal(t, Expired, got.State)

	req := post(t, s.srv.URL, string(op.Body))
	req.Header.Set("Idempotency-Key", "old-op")
	_, err = c.Do(req)
	require.ErrorIs(t, err, ErrExpired, "nor by a later Do")
	assert.Empty(t, s.seen())
}

func TestResumeBoundsConcurrency(t *testing.T) {
	t.Parallel()
	var inflight, peak atomic.Int32
	var up atomic.Bool
	s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if !up.Load() {
			w.WriteHeader(503)
			return
		}
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
		inflight.Add(-1)
		w.WriteHeader(201)
	})
	j := openJournal(t, "")
	c := newClient(t, Options{Journal: j, MaxAttempts: 1, ResumeConcurrency: 3, ResumeJitter: 20 * time.Millisecond})
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Do(post(t, s.srv.URL, fmt.Sprintf(`{"n":%d}`, i)))
			assert.ErrorIs(t, err, ErrRetriesExhausted)
		}()
	}
	wg.Wait()
	up.Store(true)
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 24)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	assert.LessOrEqual(t, peak.Load(), int32(3))
	assert.Positive(t, peak.Load())
}

func TestResumeNeedsAJournal(t *testing.T) {
	t.Parallel()
	_, err := newClient(t, Options{}).Resume(context.Background())
	require.ErrorIs(t, err, ErrNoJournal)
}

// TestSameKeyCallsRunOneAtATime: two goroutines sending one key at once
// do not both reach the server as first attempts; the second is answered
// from the journal.
func TestSameKeyCallsRunOneAtATime(t *testing.T) {
	t.Parallel()
	srv := newOnceServer(t)
	var inflight, peak atomic.Int32
	srv.before = func(http.ResponseWriter, *http.Request) bool {
		if n := inflight.Add(1); n > peak.Load() {
			peak.Store(n)
		}
		time.Sleep(20 * time.Millisecond)
		inflight.Add(-1)
		return true
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	c := newClient(t, Options{Journal: openJournal(t, "")})
	var wg sync.WaitGroup
	var fromJournal atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := post(t, ts.URL, `{"a":1}`)
			req.Header.Set("Idempotency-Key", "same")
			resp, err := c.Do(req)
			if assert.NoError(t, err) && resp.FromJournal {
				fromJournal.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), peak.Load())
	assert.Equal(t, 1, srv.attempts, "one request reached the server")
	assert.Equal(t, map[string]int{"same": 1}, srv.executions())
	assert.Equal(t, int32(7), fromJournal.Load())
}

// TestResumeAppliesAShorterKeyRetention: an operation journaled under the
// default 24 h retention is not sent again by a client that now knows the
// server keeps keys for an hour and the operation is two hours old.
func TestResumeAppliesAShorterKeyRetention(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	j := openJournal(t, "")
	created := time.Now().Add(-2 * time.Hour)
	op := &Operation{Key: "two-hours-old", Method: http.MethodPost, URL: s.srv.URL, State: Pending,
		CreatedAt: created, UpdatedAt: created, ExpiresAt: created.Add(24 * time.Hour)}
	op.Fingerprint = fingerprint(op.Method, op.URL, "", nil)
	_, err := j.begin(op)
	require.NoError(t, err)
	c := newClient(t, quickOptions(Options{Journal: j, KeyRetention: time.Hour, ResumeJitter: -1}))
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.ErrorIs(t, res[0].Err, ErrExpired)
	assert.Empty(t, s.seen())
	// Do with the same key says so too, without sending.
	req, err := http.NewRequest(http.MethodPost, s.srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "two-hours-old")
	_, err = c.Do(req)
	require.ErrorIs(t, err, ErrExpired)
	assert.Empty(t, s.seen())
}

// TestResumeWaitsForARunningCall: a Do with a minted key is in flight when
// Resume runs and finds its operation pending. Resume waits for the call
// (one key, one call at a time) and answers from its record: the server
// sees one request. synctest.Wait says when each goroutine has got as far
// as it can.
func TestResumeWaitsForARunningCall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var requests atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if requests.Add(1) == 1 {
				<-release
			}
			w.WriteHeader(201)
		})
		j := openJournal(t, "")
		c := newClient(t, quickOptions(Options{Journal: j, Transport: handlerTransport{h}, ResumeJitter: -1}))
		done := make(chan error, 1)
		go func() {
			_, err := c.Do(post(t, "http://api.test/", `{}`))
			done <- err
		}()
		synctest.Wait() // the call is in the server, its operation pending on disk
		resumed := make(chan []Resumed, 1)
		go func() {
			res, err := c.Resume(context.Background())
			assert.NoError(t, err)
			resumed <- res
		}()
		synctest.Wait() // Resume found the operation pending and waits for its key
		close(release)
		require.NoError(t, <-done)
		res := <-resumed
		require.Len(t, res, 1)
		require.NoError(t, res[0].Err)
		assert.True(t, res[0].Response.FromJournal, "answered from the record the call left")
		assert.Equal(t, int32(1), requests.Load())
	})
}

// TestResumeReportsADamagedRecordAndGoesOn: one pending record is damaged
// on disk (a header value changed, as a bad sector would); Resume sends
// the other two and reports that one as corrupt, naming the file and the
// key, without sending it.
func TestResumeReportsADamagedRecordAndGoesOn(t *testing.T) {
	t.Parallel()
	s, up := downUntilUp(t)
	path := filepath.Join(t.TempDir(), "j")
	j := openJournal(t, path)
	c := newClient(t, Options{Journal: j, MaxAttempts: 1})
	var keys []string
	for i := range 3 {
		_, err := c.Do(post(t, s.srv.URL, fmt.Sprintf(`{"n":%d}`, i)))
		var e *Error
		require.ErrorAs(t, err, &e)
		keys = append(keys, e.Key)
	}
	require.NoError(t, j.Close())
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOps)
		v := bytes.Replace(b.Get([]byte(keys[1])), []byte("application/json"), []byte("application/jsox"), 1)
		return b.Put([]byte(keys[1]), v)
	}))
	require.NoError(t, db.Close())

	up.Store(true)
	j = openJournal(t, path)
	c = newClient(t, Options{Journal: j, ResumeJitter: -1})
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 3)
	for _, r := range res[:2] {
		require.NoError(t, r.Err)
		assert.NotEqual(t, keys[1], r.Operation.Key)
	}
	assert.Equal(t, keys[1], res[2].Operation.Key, "the damaged record is reported after the others")
	require.ErrorIs(t, res[2].Err, ErrJournalCorrupt)
	assert.Contains(t, res[2].Err.Error(), path)
	assert.Contains(t, res[2].Err.Error(), keys[1])
	for _, r := range s.seen()[3:] {
		assert.NotEqual(t, keys[1], r.Key, "the damaged record is never sent")
	}
	assert.Len(t, s.seen(), 5)

	pending, err := j.Pending()
	require.ErrorIs(t, err, ErrJournalCorrupt, "Pending names it too")
	assert.Empty(t, pending)
}

// TestResumeTellsOnResumed: OnResumed hears of every operation Resume
// returns, once each and with the same outcome: one answered, one expired,
// one whose record cannot be read.
func TestResumeTellsOnResumed(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	j := openJournal(t, "")
	now := time.Now()
	for key, created := range map[string]time.Time{"answered": now, "expired": now.Add(-48 * time.Hour)} {
		op := &Operation{Key: key, Method: http.MethodPost, URL: s.srv.URL, State: Pending,
			CreatedAt: created, UpdatedAt: created, ExpiresAt: created.Add(24 * time.Hour)}
		op.Fingerprint = fingerprint(op.Method, op.URL, "", nil)
		require.NoError(t, j.updateNow(op))
	}
	require.NoError(t, j.submit(true, nil, func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketOps).Put([]byte("damaged"), []byte{recordVersion, 1, 2, 3, 4, 5, 6}); err != nil {
			return err
		}
		return tx.Bucket(bucketPending).Put([]byte("damaged"), nil)
	}))
	var mu sync.Mutex
	heard := map[string][]Resumed{}
	c := newClient(t, Options{Journal: j, ResumeJitter: -1, OnResumed: func(r Resumed) {
		mu.Lock()
		defer mu.Unlock()
		heard[r.Operation.Key] = append(heard[r.Operation.Key], r)
	}})
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 3)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, heard, 3)
	for _, r := range res {
		require.Len(t, heard[r.Operation.Key], 1, r.Operation.Key)
		got := heard[r.Operation.Key][0]
		assert.Equal(t, r.Response, got.Response, r.Operation.Key)
		assert.Equal(t, r.Err, got.Err, r.Operation.Key)
	}
	require.NoError(t, heard["answered"][0].Err)
	require.ErrorIs(t, heard["expired"][0].Err, ErrExpired)
	require.ErrorIs(t, heard["damaged"][0].Err, ErrJournalCorrupt)
}
