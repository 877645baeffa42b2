package otelidem_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/otelidem"
)

// TestClientObserver: one operation answered after two 503s, one refused
// by the retry budget, measured and traced; the journal's commits too.
func TestClientObserver(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/down" || n.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	tel := newTelemetry()
	obs, jobs := tel.clientObservers(t)
	j, err := idem.OpenJournal(filepath.Join(t.TempDir(), "j"), idem.JournalOptions{Observer: jobs})
	require.NoError(t, err)
	c, err := idem.New(idem.Options{Journal: j, Observer: obs, MaxAttempts: 10, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond,
		Budget: idem.BudgetOptions{Capacity: 12, RetryCost: 5, SuccessRefund: 1}})
	require.NoError(t, err)
	post := func(path string) (*idem.Response, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(`{}`))
		require.NoError(t, err)
		return c.Do(req)
	}
	resp, err := post("/charges")
	require.NoError(t, err)
	require.Equal(t, 3, resp.Attempts)
	// The budget: 12 tokens, less two retries at 5, plus the last one's 5
	// back with the answer, is 7: one retry, and the next is refused.
	_, err = post("/down")
	require.ErrorIs(t, err, idem.ErrBudgetExhausted)
	require.NoError(t, j.Close())

	got := tel.collect(t)
	const end = "http.request.method=POST,idem.from_journal=false,idem.outcome=%s,idem.replayed=false,idem.resumed=false,server.address=127.0.0.1"
	assert.Equal(t, points{
		fmt.Sprintf(end, "completed"):        3,
		fmt.Sprintf(end, "budget_exhausted"): 2,
	}, got[otelidem.ClientAttempts], "the attempts' sums")
	assert.Equal(t, points{
		fmt.Sprintf(end, "completed"):        1,
		fmt.Sprintf(end, "budget_exhausted"): 1,
	}, tel.counts(t, otelidem.ClientAttempts), "one record per operation")
	assert.Equal(t, points{"http.request.method=POST,http.response.status_code=503,idem.retry.reason=status": 3}, got[otelidem.ClientRetries])
	assert.Equal(t, points{"http.request.method=POST,idem.retry_after=false": 3}, got[otelidem.ClientRetryDelay])
	assert.Equal(t, points{"http.request.method=POST": 1}, got[otelidem.ClientBudgetExhausted])
	assert.Equal(t, points{
		fmt.Sprintf(end, "completed"):        1,
		fmt.Sprintf(end, "budget_exhausted"): 1,
	}, got[otelidem.ClientOperationDuration])
	assert.Equal(t, points{"": 1}, got[otelidem.ClientOperationsPending], "the refused operation stays pending")
	assert.Positive(t, got[otelidem.ClientJournalCommitDuration][""])
	assert.GreaterOrEqual(t, got[otelidem.ClientJournalCommitBatchSize][""], int64(3), "two operations journaled, one answer recorded")

	spans := tel.spans.Ended()
	require.Len(t, spans, 2)
	for i, want := range []struct {
		outcome  string
		status   int
		attempts int64
		errored  bool
	}{{"completed", 201, 3, false}, {"budget_exhausted", 503, 2, true}} {
		s := spans[i]
		assert.Equal(t, otelidem.ClientOperationSpan, s.Name())
		attrs := attribute.NewSet(s.Attributes()...)
		v, _ := attrs.Value(otelidem.OutcomeKey)
		assert.Equal(t, want.outcome, v.AsString())
		v, _ = attrs.Value("http.response.status_code")
		assert.Equal(t, int64(want.status), v.AsInt64())
		v, _ = attrs.Value(otelidem.AttemptsKey)
		assert.Equal(t, want.attempts, v.AsInt64())
		assert.False(t, attrs.HasValue(otelidem.KeyKey), "the client's spans carry no key")
		assert.Equal(t, want.errored, s.Status().Code == codes.Error)
	}
}

// TestClientObserverRetryReasons: one operation whose first request
// net/http sends twice (a dead keep-alive connection), then answered 503
// with Retry-After, then timed out, then refused a connection, then
// answered: each retry counted under its reason, the wait under who chose
// it, and retries adding up to attempts less operations; its repeat
// answered from the journal, with no attempt.
func TestClientObserverRetryReasons(t *testing.T) {
	t.Parallel()
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method != http.MethodPost {
			return
		}
		switch posts.Add(1) {
		case 1: // on the warm-up's idle connection: net/http sends it again
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		case 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	defer srv.Close()
	tel := newTelemetry()
	obs, _ := tel.clientObservers(t)
	j, err := idem.OpenJournal(filepath.Join(t.TempDir(), "j"), idem.JournalOptions{})
	require.NoError(t, err)
	defer j.Close()
	rt := &failingTransport{next: srv.Client().Transport, fail: map[int64]error{
		2: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, // a timeout
		3: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
	}}
	c, err := idem.New(idem.Options{Journal: j, Observer: obs, Transport: rt, MaxAttempts: 10, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond})
	require.NoError(t, err)
	warm, err := c.HTTPClient().Get(srv.URL) // leaves one idle keep-alive connection
	require.NoError(t, err)
	io.Copy(io.Discard, warm.Body)
	warm.Body.Close()
	for i := range 2 {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := c.Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, []int{5, 0}[i], resp.Attempts)
	}
	require.Equal(t, int64(3), posts.Load(), "the lost POST, its resend, the answer")

	got := tel.collect(t)
	assert.Equal(t, points{
		"http.request.method=POST,idem.retry.reason=transport_error":                         1, // net/http's resend
		"http.request.method=POST,http.response.status_code=503,idem.retry.reason=status":    1,
		"error.type=timeout,http.request.method=POST,idem.retry.reason=timeout":              1,
		"error.type=*net.OpError,http.request.method=POST,idem.retry.reason=transport_error": 1,
	}, got[otelidem.ClientRetries])
	assert.Equal(t, points{
		"http.request.method=POST,idem.retry_after=true":  1,
		"http.request.method=POST,idem.retry_after=false": 2,
	}, got[otelidem.ClientRetryDelay], "a resend has no wait")
	const end = "http.request.method=POST,idem.from_journal=%t,idem.outcome=completed,idem.replayed=false,idem.resumed=false,server.address=127.0.0.1"
	assert.Equal(t, points{fmt.Sprintf(end, false): 1, fmt.Sprintf(end, true): 1}, got[otelidem.ClientOperationDuration])
	assert.Equal(t, points{fmt.Sprintf(end, false): 5}, got[otelidem.ClientAttempts], "an answer from the journal makes no attempt")
	assert.Equal(t, points{fmt.Sprintf(end, false): 1}, tel.counts(t, otelidem.ClientAttempts))
	assert.Equal(t, sum(got[otelidem.ClientAttempts])-sum(tel.counts(t, otelidem.ClientAttempts)), sum(got[otelidem.ClientRetries]),
		"retries by reason add up to attempts less operations")
}

// failingTransport fails the POSTs it is given errors for, by their
// number (from 1), and passes every other request on to next.
type failingTransport struct {
	next  http.RoundTripper
	posts atomic.Int64
	fail  map[int64]error
}

func (t *failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		if err := t.fail[t.posts.Add(1)]; err != nil {
			if r.Body != nil {
				r.Body.Close()
			}
			return nil, err
		}
	}
	return t.next.RoundTrip(r)
}
