// This file tests Options.OnConflict: recovering from a conflict over a
// key (key reuse, or a 409 that outlasts the retries) with the user's
// answer.

package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// creationConflictAPI answers every POST 409 naming the payment an earlier
// request under the key created, as GoCardless does, and serves that
// payment on GET.
func creationConflictAPI(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && r.URL.Path == "/payments/PM123" {
			io.WriteString(w, `{"payments":{"id":"PM123","amount":100}}`)
			return
		}
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"error":{"type":"invalid_state","code":409,"errors":[{"reason":"idempotent_creation_conflict",`+
			`"links":{"conflicting_resource_id":"PM123"}}]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fetchConflicting is an OnConflict that fetches the resource a 409 names.
func fetchConflicting(base string, calls *atomic.Int32) func(context.Context, *Error) (*Response, error) {
	return func(ctx context.Context, e *Error) (*Response, error) {
		calls.Add(1)
		if e.StatusCode != http.StatusConflict {
			return nil, nil
		}
		var doc struct {
			Error struct {
				Errors []struct {
					Links struct {
						ID string `json:"conflicting_resource_id"`
					} `json:"links"`
				} `json:"errors"`
			} `json:"error"`
		}
		if err := json.Unmarshal(e.Body, &doc); err != nil || len(doc.Error.Errors) == 0 {
			return nil, nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/payments/"+doc.Error.Errors[0].Links.ID, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		return &Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: body}, nil
	}
}

func TestOnConflictFetchesTheCreatedResource(t *testing.T) {
	t.Parallel()
	srv := creationConflictAPI(t)
	for _, hooked := range []bool{false, true} {
		var calls atomic.Int32
		j := openJournal(t, "")
		o := quickOptions(Options{Journal: j, MaxAttempts: 3})
		if hooked {
			o.OnConflict = fetchConflicting(srv.URL, &calls)
		}
		c := newClient(t, o)
		req := post(t, srv.URL+"/payments", `{"amount":100}`)
		req.Header.Set("Idempotency-Key", "pay-1")
		resp, err := c.Do(req)
		if !hooked {
			// Without the hook the call ends in retries exhausted on 409:
			// the payment exists, and the caller cannot tell.
			require.ErrorIs(t, err, ErrRetriesExhausted)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.JSONEq(t, `{"payments":{"id":"PM123","amount":100}}`, string(resp.Body))
		assert.Equal(t, "pay-1", resp.Key)
		assert.EqualValues(t, 1, calls.Load())
		op, ok, err := j.Lookup("pay-1")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, Pending, op.State, "the journal is not changed by the hook")
	}
}

func TestOnConflictOnKeyReuse(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) { writeKeyReused(w) })
	var seen atomic.Pointer[Error]
	hookErr := errors.New("lookup failed")
	for name, c := range map[string]struct {
		resp    *Response
		err     error
		wantErr []error
		wantKey string
	}{
		"no answer":  {nil, nil, []error{ErrKeyReused}, ""},
		"an error":   {nil, hookErr, []error{ErrKeyReused, hookErr}, ""},
		"an answer":  {&Response{StatusCode: http.StatusOK, Body: []byte("found")}, nil, nil, "reused"}, // the key filled in
		"answer+key": {&Response{StatusCode: http.StatusOK, Key: "mine"}, nil, nil, "mine"},
	} {
		client := newClient(t, quickOptions(Options{OnConflict: func(ctx context.Context, e *Error) (*Response, error) {
			seen.Store(e)
			return c.resp, c.err
		}}))
		req := post(t, s.srv.URL, `{}`)
		req.Header.Set("Idempotency-Key", "reused")
		resp, err := client.Do(req)
		require.NotNil(t, seen.Load(), name)
		assert.ErrorIs(t, seen.Load(), ErrKeyReused, name)
		assert.Equal(t, http.StatusUnprocessableEntity, seen.Load().StatusCode, name)
		for _, want := range c.wantErr {
			assert.ErrorIs(t, err, want, name)
		}
		var e *Error
		if c.wantErr != nil {
			assert.ErrorAs(t, err, &e, name)
			assert.Nil(t, resp)
			continue
		}
		require.NoError(t, err, name)
		assert.Same(t, c.resp, resp, name)
		assert.Equal(t, c.wantKey, resp.Key, name)
	}
}

func TestOnConflictOnLocalKeyReuse(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(http.StatusCreated))
	var calls atomic.Int32
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, ""), OnConflict: func(ctx context.Context, e *Error) (*Response, error) {
		calls.Add(1)
		assert.ErrorIs(t, e, ErrKeyReused)
		assert.Zero(t, e.Attempts, "found in the journal, nothing sent")
		return nil, nil
	}}))
	send := func(body string) error {
		req := post(t, s.srv.URL, body)
		req.Header.Set("Idempotency-Key", "k")
		_, err := c.Do(req)
		return err
	}
	require.NoError(t, send(`{"a":1}`))
	assert.ErrorIs(t, send(`{"a":2}`), ErrKeyReused)
	assert.EqualValues(t, 1, calls.Load())
	assert.Len(t, s.seen(), 1)
}

func TestOnConflictIgnoresOtherFailures(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		s := newScripted(t, statuses(status))
		var calls atomic.Int32
		c := newClient(t, quickOptions(Options{MaxAttempts: 2, OnConflict: func(context.Context, *Error) (*Response, error) {
			calls.Add(1)
			return &Response{}, nil
		}}))
		_, err := c.Do(post(t, s.srv.URL, `{}`))
		assert.ErrorIs(t, err, ErrRetriesExhausted, fmt.Sprint(status))
		assert.Zero(t, calls.Load(), "retries exhausted on %d is no conflict", status)
	}
}
