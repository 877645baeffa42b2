package server_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// smallStore refuses to keep an outcome over 16 bytes, as redisstore does
// over its Options.MaxResponse: nothing stored, the key still held.
type smallStore struct{ server.Store }

func (s smallStore) Complete(ctx context.Context, k server.Key, token string, resp server.StoredResponse, retention time.Duration) error {
	if len(resp.Body) > 16 && !strings.Contains(string(resp.Body), server.ProblemResponseNotKept) {
		return server.ErrResponseTooLarge
	}
	return s.Store.Complete(ctx, k, token, resp, retention)
}

// TestAnswerTooLargeToKeepIsFinal: the first request gets the handler's
// answer; every retry a replay with its status that says the answer was not
// kept; the handler runs once. RunOnce's redelivery gets ErrResultNotKept.
func TestAnswerTooLargeToKeepIsFinal(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	h := server.Middleware(smallStore{newMemstore()}, server.Options{SingleTenant: true})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		w.Write(bytes.Repeat([]byte("y"), 64))
	}))
	rec := serveDirect(h, "big-1", "x")
	assert.Equal(t, http.StatusCreated, rec.Code)
	assert.Equal(t, 64, rec.Body.Len(), "the first request gets the whole answer")
	for range 2 {
		rec = serveDirect(h, "big-1", "x")
		assert.Equal(t, http.StatusCreated, rec.Code)
		assert.Equal(t, "true", rec.Header().Get(server.ReplayedHeader))
		assert.Equal(t, server.ProblemContentType, rec.Header().Get("Content-Type"))
		assert.Contains(t, rec.Body.String(), server.ProblemResponseNotKept)
	}
	assert.Equal(t, int64(1), runs.Load())

	store := smallStore{newMemstore()}
	k := server.Key{Key: newKey()}
	work := func(context.Context) ([]byte, error) { runs.Add(1); return bytes.Repeat([]byte("r"), 64), nil }
	res, replayed, err := server.RunOnce(context.Background(), store, k, "fp", work, server.RunOptions{})
	require.NoError(t, err)
	assert.False(t, replayed)
	assert.Len(t, res, 64)
	res, replayed, err = server.RunOnce(context.Background(), store, k, "fp", work, server.RunOptions{})
	require.ErrorIs(t, err, server.ErrResultNotKept)
	assert.True(t, replayed)
	assert.Nil(t, res)
	assert.Equal(t, int64(2), runs.Load(), "the work ran once per key")
}

// TestMalformedScopeIsTheClients: a scope that is not valid UTF-8, or holds
// a NUL, is refused with 401 before any store call, whatever the store, and
// RunOnce refuses it with ErrInvalidScope.
func TestMalformedScopeIsTheClients(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{"\xff\xfe", "acct\x00_1"} {
		fs := newFakeStore()
		ran := false
		h := server.Middleware(fs, server.Options{Scope: func(*http.Request) (string, error) { return scope, nil }})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran = true }))
		rec := serveDirect(h, "k", "x")
		requireProblem(t, replyOf(rec), http.StatusUnauthorized, server.ProblemScopeUnavailable)
		assert.False(t, ran)
		_, _, err := server.RunOnce(context.Background(), fs, server.Key{Scope: scope, Key: "k"}, "fp",
			func(context.Context) ([]byte, error) { ran = true; return nil, nil }, server.RunOptions{})
		require.ErrorIs(t, err, server.ErrInvalidScope)
		assert.False(t, ran)
		assert.Zero(t, fs.claims, "no store call")
	}
	assert.True(t, server.ValidScope("acct_1 ünïcode"))
	assert.True(t, server.ValidScope(""))
}
