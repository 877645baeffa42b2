// This file tests Observer and JournalObserver: the events of a call and
// of the journal's commits, and observers that panic.

package idem

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ctxMark struct{}

// recorder keeps the events an Observer and a JournalObserver hear.
type recorder struct {
	mu       sync.Mutex
	starts   []OperationStartInfo
	ends     []OperationEndInfo
	marked   []bool // each end's context came from its start
	attempts []AttemptInfo
	retries  []RetryInfo
	budget   []BudgetInfo
	commits  []CommitInfo
}

func (r *recorder) observer() *Observer {
	return &Observer{
		OperationStart: func(ctx context.Context, i OperationStartInfo) context.Context {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.starts = append(r.starts, i)
			return context.WithValue(ctx, ctxMark{}, true)
		},
		OperationEnd: func(ctx context.Context, i OperationEndInfo) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ends = append(r.ends, i)
			r.marked = append(r.marked, ctx.Value(ctxMark{}) == true)
		},
		Attempt: func(_ context.Context, i AttemptInfo) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.attempts = append(r.attempts, i)
		},
		Retry: func(_ context.Context, i RetryInfo) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.retries = append(r.retries, i)
		},
		BudgetExhausted: func(_ context.Context, i BudgetInfo) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.budget = append(r.budget, i)
		},
	}
}

func (r *recorder) journalObserver() *JournalObserver {
	return &JournalObserver{Commit: func(i CommitInfo) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.commits = append(r.commits, i)
	}}
}

// TestObserverHearsACall: two 503s and a 201 are three attempts, two
// retries scheduled for their statuses, and one operation completed, whose
// end gets the context its start returned.
func TestObserverHearsACall(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503, 503, 201))
	var rec recorder
	c := newClient(t, quickOptions(Options{Observer: rec.observer()}))
	resp, err := c.Do(post(t, s.srv.URL, `{}`))
	require.NoError(t, err)
	require.Equal(t, 201, resp.StatusCode)

	assert.Equal(t, []OperationStartInfo{{Method: http.MethodPost, ServerAddress: "127.0.0.1"}}, rec.starts,
		"the host, without the port")
	require.Len(t, rec.ends, 1)
	end := rec.ends[0]
	assert.Positive(t, end.Duration)
	end.Duration = 0
	assert.Equal(t, OperationEndInfo{Method: http.MethodPost, ServerAddress: "127.0.0.1", Outcome: OutcomeCompleted, StatusCode: 201, Attempts: 3}, end)
	assert.Equal(t, []bool{true}, rec.marked, "OperationEnd gets the context OperationStart returned")
	assert.Equal(t, []AttemptInfo{
		{Method: http.MethodPost, N: 1, Sent: 1, StatusCode: 503},
		{Method: http.MethodPost, N: 2, Sent: 1, StatusCode: 503},
		{Method: http.MethodPost, N: 3, Sent: 1, StatusCode: 201},
	}, rec.attempts)
	require.Len(t, rec.retries, 2)
	for i, r := range rec.retries {
		assert.Equal(t, i+1, r.Attempt)
		assert.Equal(t, 503, r.StatusCode)
		assert.Empty(t, r.ErrorType)
		assert.Positive(t, r.Delay)
		assert.False(t, r.RetryAfter, "the backoff chose the wait")
	}
	assert.Empty(t, rec.budget)
}

// TestObserverHearsRetryAfter: a retry that waits the server's
// Retry-After says so; one that waits the backoff (the header unreadable)
// does not.
func TestObserverHearsRetryAfter(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 0:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 1:
			w.Header().Set("Retry-After", "soon")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	})
	var rec recorder
	c := newClient(t, quickOptions(Options{Observer: rec.observer()}))
	_, err := c.Do(post(t, s.srv.URL, `{}`))
	require.NoError(t, err)
	require.Len(t, rec.retries, 2)
	assert.Equal(t, RetryInfo{Method: http.MethodPost, Attempt: 1, StatusCode: 503, Delay: 0, RetryAfter: true}, rec.retries[0])
	assert.Equal(t, 429, rec.retries[1].StatusCode)
	assert.Positive(t, rec.retries[1].Delay)
	assert.False(t, rec.retries[1].RetryAfter, "an unreadable Retry-After leaves the wait to the backoff")
}

// TestObserverHearsTheBudgetRefuse: a retry the budget refuses is
// reported, and the operation ends budget_exhausted.
func TestObserverHearsTheBudgetRefuse(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503))
	var rec recorder
	c := newClient(t, quickOptions(Options{MaxAttempts: 10, Budget: BudgetOptions{Capacity: 12, RetryCost: 5, SuccessRefund: 1},
		Observer: rec.observer()}))
	_, err := c.Do(post(t, s.srv.URL, `{}`))
	require.ErrorIs(t, err, ErrBudgetExhausted)
	assert.Equal(t, []BudgetInfo{{Method: http.MethodPost, Attempt: 3}}, rec.budget)
	assert.Len(t, rec.retries, 2)
	require.Len(t, rec.ends, 1)
	assert.Equal(t, OutcomeBudgetExhausted, rec.ends[0].Outcome)
	assert.Equal(t, 3, rec.ends[0].Attempts)
	assert.Equal(t, 503, rec.ends[0].StatusCode)
}

// TestObserverHearsTransportErrors: an attempt without a response names
// its error's class, and the call that runs out of attempts ends
// retries_exhausted.
func TestObserverHearsTransportErrors(t *testing.T) {
	t.Parallel()
	var rec recorder
	c := newClient(t, quickOptions(Options{MaxAttempts: 2, Transport: &bothTransport{}, Observer: rec.observer()}))
	_, err := c.Do(post(t, "http://127.0.0.1:1/", `{}`))
	require.ErrorIs(t, err, ErrRetriesExhausted)
	require.Len(t, rec.attempts, 2)
	for _, a := range rec.attempts {
		assert.Zero(t, a.StatusCode)
		assert.Equal(t, "_OTHER", a.ErrorType, "an error with only text has no class of its own")
	}
	require.Len(t, rec.retries, 1)
	assert.Equal(t, "_OTHER", rec.retries[0].ErrorType)
	require.Len(t, rec.ends, 1)
	assert.Equal(t, OutcomeRetriesExhausted, rec.ends[0].Outcome)
}

// TestJournalObserverHearsCommits: the commit that journals an operation
// leaves one pending, and the one that records its answer none; a call
// answered from the journal is an operation completed with no attempt.
func TestJournalObserverHearsCommits(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	var rec recorder
	j, err := OpenJournal(t.TempDir()+"/j", JournalOptions{Observer: rec.journalObserver()})
	require.NoError(t, err)
	rec.mu.Lock()
	opened := len(rec.commits) // OpenJournal's purge
	rec.mu.Unlock()
	c := newClient(t, quickOptions(Options{Journal: j, Observer: rec.observer()}))
	req := post(t, s.srv.URL, `{}`)
	req.Header.Set("Idempotency-Key", "k1")
	_, err = c.Do(req)
	require.NoError(t, err)
	rec.mu.Lock()
	require.Greater(t, len(rec.commits), opened, "the operation was journaled before its first attempt")
	first := rec.commits[opened]
	rec.mu.Unlock()
	assert.Equal(t, 1, first.Writes)
	assert.Equal(t, 1, first.Pending)
	assert.False(t, first.Failed)

	again := post(t, s.srv.URL, `{}`)
	again.Header.Set("Idempotency-Key", "k1")
	resp, err := c.Do(again)
	require.NoError(t, err)
	assert.Equal(t, 0, resp.Attempts)
	require.NoError(t, j.Close()) // the lazy outcome is committed
	rec.mu.Lock()
	defer rec.mu.Unlock()
	last := rec.commits[len(rec.commits)-1]
	assert.Equal(t, 0, last.Pending, "the answer left nothing pending")
	require.Len(t, rec.ends, 2)
	assert.False(t, rec.ends[0].FromJournal)
	assert.Equal(t, OutcomeCompleted, rec.ends[1].Outcome)
	assert.Equal(t, 0, rec.ends[1].Attempts, "answered from the journal")
	assert.True(t, rec.ends[1].FromJournal)
	assert.Len(t, s.seen(), 1)
}

// TestObserverHearsJournalAnswers: a repeat answered from the journal is
// from_journal, and keeps the replay mark the journal recorded, a key
// refusal the journal recorded included; a resumed call names its host
// from the journaled URL.
func TestObserverHearsJournalAnswers(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == "reused" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusCreated)
	})
	var rec recorder
	j, err := OpenJournal(t.TempDir()+"/j", JournalOptions{})
	require.NoError(t, err)
	defer j.Close()
	c := newClient(t, quickOptions(Options{Journal: j, Observer: rec.observer(),
		IsKeyReused: func(r *Response) bool { return r.StatusCode == http.StatusUnprocessableEntity }}))
	for _, k := range []string{"k1", "k1", "reused", "reused"} {
		req := post(t, s.srv.URL+"/charges?x=1", `{}`)
		req.Header.Set("Idempotency-Key", k)
		c.Do(req)
	}
	rec.mu.Lock()
	ends := rec.ends
	rec.mu.Unlock()
	require.Len(t, ends, 4)
	type end struct {
		Outcome               Outcome
		Replayed, FromJournal bool
		Attempts, Status      int
		Host                  string
	}
	var got []end
	for _, e := range ends {
		got = append(got, end{e.Outcome, e.Replayed, e.FromJournal, e.Attempts, e.StatusCode, e.ServerAddress})
	}
	assert.Equal(t, []end{
		{OutcomeCompleted, true, false, 1, 201, "127.0.0.1"},
		{OutcomeCompleted, true, true, 0, 201, "127.0.0.1"},
		{OutcomeKeyReused, false, false, 1, 422, "127.0.0.1"},
		{OutcomeKeyReused, false, true, 0, 422, "127.0.0.1"},
	}, got)
	assert.Len(t, s.seen(), 2)
}

// TestObserverHearsAResumedHost: a resumed call names the host of the
// journaled URL, which the live request no longer gives.
func TestObserverHearsAResumedHost(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503, 201))
	var rec recorder
	j, err := OpenJournal(t.TempDir()+"/j", JournalOptions{})
	require.NoError(t, err)
	defer j.Close()
	c := newClient(t, quickOptions(Options{Journal: j, MaxAttempts: 1, Observer: rec.observer()}))
	_, err = c.Do(post(t, s.srv.URL+"/charges", `{}`))
	require.ErrorIs(t, err, ErrRetriesExhausted)
	_, err = c.Resume(context.Background())
	require.NoError(t, err)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.starts, 2)
	assert.Equal(t, OperationStartInfo{Method: http.MethodPost, ServerAddress: "127.0.0.1", Resumed: true}, rec.starts[1])
	require.Len(t, rec.ends, 2)
	assert.Equal(t, "127.0.0.1", rec.ends[1].ServerAddress)
	assert.Equal(t, OutcomeCompleted, rec.ends[1].Outcome)
}

// TestObserverPanicsDoNotBreakACall: hooks that all panic, the client's
// and the journal's, cost the events and nothing else.
func TestObserverPanicsDoNotBreakACall(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503, 201))
	boom := func() { panic("metrics backend down") }
	obs := &Observer{
		OperationStart:  func(context.Context, OperationStartInfo) context.Context { boom(); return nil },
		OperationEnd:    func(context.Context, OperationEndInfo) { boom() },
		Attempt:         func(context.Context, AttemptInfo) { boom() },
		Retry:           func(context.Context, RetryInfo) { boom() },
		BudgetExhausted: func(context.Context, BudgetInfo) { boom() },
	}
	j, err := OpenJournal(t.TempDir()+"/j", JournalOptions{Observer: &JournalObserver{Commit: func(CommitInfo) { boom() }}})
	require.NoError(t, err)
	defer j.Close()
	c := newClient(t, quickOptions(Options{Journal: j, Observer: obs}))
	resp, err := c.Do(post(t, s.srv.URL, `{}`))
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	assert.Equal(t, 2, resp.Attempts)
	pending, err := j.Pending()
	require.NoError(t, err)
	assert.Empty(t, pending)
}
