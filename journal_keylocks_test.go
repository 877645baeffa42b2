// This file tests the journal's locks on its keys and its compare-and-set
// writes: one key is sent by one call at a time across Clients, Abandon
// comes between attempts and is never undone, and Resume does not bring
// back an operation abandoned and purged under it.

package idem

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyedPost is a POST of body under key.
func keyedPost(t *testing.T, key, body string) *http.Request {
	req := post(t, "http://api.test/charges", body)
	req.Header.Set("Idempotency-Key", key)
	return req
}

// TestOneKeyOneCallAcrossClients: two Clients share a journal. While one
// sends an operation, a call with its key on the other, by Do or by
// Resume, waits for it and is answered from the journal: the server sees
// one request, never two at once.
func TestOneKeyOneCallAcrossClients(t *testing.T) {
	t.Parallel()
	for _, second := range []string{"Do", "Resume"} {
		t.Run(second, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var requests atomic.Int32
				h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					requests.Add(1)
					<-release
					w.WriteHeader(201)
				})
				j := openJournal(t, "")
				o := Options{Journal: j, Transport: handlerTransport{h}, ResumeJitter: -1}
				first, other := newClient(t, o), newClient(t, o)
				done := make(chan error, 2)
				go func() {
					_, err := first.Do(keyedPost(t, "shared", `{"amount":5}`))
					done <- err
				}()
				synctest.Wait() // the first call is in the server, its operation pending
				var resp *Response
				go func() {
					var err error
					if second == "Do" {
						resp, err = other.Do(keyedPost(t, "shared", `{"amount":5}`))
					} else {
						var res []Resumed
						res, err = other.Resume(context.Background())
						if err == nil && assert.Len(t, res, 1) {
							resp, err = res[0].Response, res[0].Err
						}
					}
					done <- err
				}()
				synctest.Wait() // the second call waits for the key
				assert.Equal(t, int32(1), requests.Load(), "the second call does not send while the first does")
				close(release)
				require.NoError(t, <-done)
				require.NoError(t, <-done)
				require.NotNil(t, resp)
				assert.True(t, resp.FromJournal, "answered from the first call's record")
				assert.Equal(t, int32(1), requests.Load())
			})
		})
	}
}

// TestAbandonBetweenAttempts: Abandon comes while a call waits to retry
// (a 503 with Retry-After): it returns at once, the call stops before its
// next attempt with ErrAbandoned, and the record stays abandoned.
func TestAbandonBetweenAttempts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var requests atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if requests.Add(1) == 1 {
				w.Header().Set("Retry-After", "10")
				w.WriteHeader(503)
				return
			}
			w.WriteHeader(201)
		})
		j := openJournal(t, "")
		c := newClient(t, Options{Journal: j, Transport: handlerTransport{h}})
		done := make(chan error, 1)
		go func() {
			_, err := c.Do(keyedPost(t, "k1", `{}`))
			done <- err
		}()
		synctest.Wait() // the call waits ten seconds to retry
		op, err := j.Abandon("k1")
		require.NoError(t, err, "Abandon does not wait for the backoff")
		assert.Equal(t, Abandoned, op.State)
		err = <-done
		require.ErrorIs(t, err, ErrAbandoned)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, 1, e.Attempts)
		assert.Equal(t, int32(1), requests.Load(), "no retry after Abandon")
		assert.Equal(t, Abandoned, onDisk(t, j, "k1").State)
	})
}

// TestAbandonWaitsForAnAttempt: Abandon called while an attempt is in
// flight waits for it. If the attempt is the answer, the call records it
// and Abandon fails, the operation being finished; if it is to be retried,
// Abandon comes in before the retry, which is not sent.
func TestAbandonWaitsForAnAttempt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   State
	}{{201, Completed}, {503, Abandoned}} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var requests atomic.Int32
				h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					if requests.Add(1) == 1 {
						<-release
						w.WriteHeader(tc.status)
						return
					}
					w.WriteHeader(201)
				})
				j := openJournal(t, "")
				c := newClient(t, Options{Journal: j, Transport: handlerTransport{h}})
				done := make(chan error, 1)
				go func() {
					_, err := c.Do(keyedPost(t, "k1", `{}`))
					done <- err
				}()
				synctest.Wait() // the attempt is in flight
				abandoned := make(chan error, 1)
				go func() {
					_, err := j.Abandon("k1")
					abandoned <- err
				}()
				synctest.Wait()
				select {
				case <-abandoned:
					t.Fatal("Abandon returned while an attempt was in flight")
				default:
				}
				close(release)
				callErr, abandonErr := <-done, <-abandoned
				if tc.want == Completed {
					require.NoError(t, callErr)
					require.Error(t, abandonErr, "a finished operation cannot be abandoned")
					assert.Contains(t, abandonErr.Error(), "completed")
				} else {
					require.NoError(t, abandonErr)
					require.ErrorIs(t, callErr, ErrAbandoned)
				}
				assert.Equal(t, int32(1), requests.Load())
				got, _, err := j.Lookup("k1")
				require.NoError(t, err)
				assert.Equal(t, tc.want, got.State)
			})
		})
	}
}

// TestAbandonRacesACall: a refused (or pending) operation is abandoned
// while a call with its key starts. Whichever comes first, once Abandon
// has returned nil no attempt starts and the record is never pending
// again, so Resume does not send it. Each round races the two afresh, a
// bounded number of times.
func TestAbandonRacesACall(t *testing.T) {
	t.Parallel()
	for _, first := range []int{401, 503} {
		var violations, abandonedRounds int
		for range 40 {
			var seq atomic.Int64
			var lastSent atomic.Int64
			var requests atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if requests.Add(1) == 1 {
					w.WriteHeader(first)
					return
				}
				w.WriteHeader(503)
			})
			j := openJournal(t, "")
			c := newClient(t, Options{Journal: j, Transport: handlerTransport{h}, MaxAttempts: 1, ResumeJitter: -1,
				PrepareRequest: func(*http.Request) error { lastSent.Store(seq.Add(1)); return nil }})
			c.Do(keyedPost(t, "k", `{"amount":5}`))
			var wg sync.WaitGroup
			var abandonedAt int64
			var abandonErr error
			wg.Add(2)
			go func() { defer wg.Done(); c.Do(keyedPost(t, "k", `{"amount":5}`)) }()
			go func() {
				defer wg.Done()
				if _, abandonErr = j.Abandon("k"); abandonErr == nil {
					abandonedAt = seq.Add(1)
				}
			}()
			wg.Wait()
			if abandonErr != nil {
				continue // the call finished the operation first: nothing to check
			}
			abandonedRounds++
			op, _, err := j.Lookup("k")
			require.NoError(t, err)
			before := requests.Load()
			res, err := c.Resume(context.Background())
			require.NoError(t, err)
			if op.State != Abandoned || lastSent.Load() > abandonedAt || len(res) != 0 || requests.Load() != before {
				violations++
				t.Logf("first answer %d: Abandon returned nil, yet the record is %s, an attempt started after it (%v), Resume sent %d",
					first, op.State, lastSent.Load() > abandonedAt, requests.Load()-before)
			}
			j.Close()
		}
		assert.Zero(t, violations, "first answer %d: %d of %d rounds abandoned", first, violations, abandonedRounds)
	}
}

// TestResumeSendsNoPurgedOperation: Resume lists two pending operations;
// while it sends one, the other is abandoned and purged. Resume finds no
// record of it and does not send it, nor journal it anew.
func TestResumeSendsNoPurgedOperation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var requests sync.Map
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Store(r.Header.Get("Idempotency-Key"), true)
			w.WriteHeader(201)
		})
		j := openJournal(t, "")
		for _, k := range []string{"a", "b"} {
			op := &Operation{Key: k, Method: http.MethodPost, URL: "http://api.test/charges", State: Pending,
				CreatedAt: time.Now(), UpdatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
			op.Fingerprint = fingerprint(op.Method, op.URL, "", nil)
			require.NoError(t, j.updateNow(op))
		}
		gate := make(chan struct{})
		var first atomic.Value
		c := newClient(t, Options{Journal: j, Transport: handlerTransport{h}, ResumeJitter: -1, ResumeConcurrency: 1,
			PrepareRequest: func(r *http.Request) error {
				if first.CompareAndSwap(nil, r.Header.Get("Idempotency-Key")) {
					<-gate
				}
				return nil
			}})
		resumed := make(chan []Resumed, 1)
		go func() {
			res, err := c.Resume(context.Background())
			assert.NoError(t, err)
			resumed <- res
		}()
		synctest.Wait() // Resume has listed both and sends one; the other waits for its turn
		other := map[string]string{"a": "b", "b": "a"}[first.Load().(string)]
		_, err := j.Abandon(other)
		require.NoError(t, err)
		_, err = j.Purge(-time.Hour)
		require.NoError(t, err)
		close(gate)
		res := <-resumed
		require.Len(t, res, 2)
		for _, r := range res {
			if r.Operation.Key == other {
				require.ErrorIs(t, r.Err, ErrNoOperation)
			} else {
				require.NoError(t, r.Err)
			}
		}
		_, sent := requests.Load(other)
		assert.False(t, sent, "the purged operation is not sent")
		_, ok, err := j.Lookup(other)
		require.NoError(t, err)
		assert.False(t, ok, "nor journaled anew")
	})
}

// TestJournalMoveIsCompareAndSet: a write made from a state the record
// has left is not made: durably, it fails with the error of the state it
// found; lazily, it is dropped, and Close reports no failure.
func TestJournalMoveIsCompareAndSet(t *testing.T) {
	t.Parallel()
	j := openJournal(t, "")
	op := sampleOperation()
	op.State, op.Response = Pending, nil
	_, err := j.begin(op)
	require.NoError(t, err)
	_, err = j.Abandon(op.Key)
	require.NoError(t, err)

	done := *op
	done.State, done.Response = Completed, &StoredResponse{StatusCode: 201}
	err = j.move(&done, Pending, true)
	require.ErrorIs(t, err, ErrAbandoned)
	assert.Equal(t, Abandoned, onDisk(t, j, op.Key).State)
	require.NoError(t, j.move(&done, Pending, false))
	require.NoError(t, j.Close(), "a write not made because the record moved is no failure")
	j = openJournal(t, j.Path())
	assert.Equal(t, Abandoned, onDisk(t, j, op.Key).State)

	fresh := sampleOperation()
	fresh.State, fresh.Response, fresh.minted = Pending, nil, true
	fresh.Key = op.Key
	_, err = j.begin(fresh)
	require.Error(t, err, "a new record is not written over one already there")
	assert.Equal(t, Abandoned, onDisk(t, j, op.Key).State)
}
