package otelidem_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	assert.Equal(t, points{
		"http.request.method=POST,http.response.status_code=201": 1,
		"http.request.method=POST,http.response.status_code=503": 4,
	}, got[otelidem.ClientAttempts])
	assert.Equal(t, points{"http.request.method=POST,http.response.status_code=503": 3}, got[otelidem.ClientRetries])
	assert.Equal(t, points{"http.request.method=POST": 3}, got[otelidem.ClientRetryDelay])
	assert.Equal(t, points{"http.request.method=POST": 1}, got[otelidem.ClientBudgetExhausted])
	assert.Equal(t, points{
		"http.request.method=POST,idem.outcome=completed,idem.resumed=false":        1,
		"http.request.method=POST,idem.outcome=budget_exhausted,idem.resumed=false": 1,
	}, got[otelidem.ClientOperationDuration])
	assert.Equal(t, points{"": 1}, got[otelidem.ClientOperationsPending], "the refused operation stays pending")
	assert.Positive(t, got[otelidem.JournalCommitDuration][""])
	assert.GreaterOrEqual(t, got[otelidem.JournalCommitBatchSize][""], int64(3), "two operations journaled, one answer recorded")

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
