package etcdstore_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
)

// dropCalls returns a drop function that loses the answers of the
// listed calls of each method (counted from 1) after the cluster acted
// on them, with an error of the given code.
func dropCalls(code codes.Code, calls map[string][]int64) func(string) error {
	var mu sync.Mutex
	seen := map[string]int64{}
	return func(m string) error {
		mu.Lock()
		seen[m]++
		n := seen[m]
		mu.Unlock()
		if slices.Contains(calls[m], n) {
			return status.Error(code, "connection lost mid-reply")
		}
		return nil
	}
}

// TestLostReply loses the answer of a write after etcd applied it, as a
// member that dies mid-reply does, and checks that the store finds out
// what happened rather than leaving the key held for a whole lease or
// reporting a stored outcome as lost.
func TestLostReply(t *testing.T) {
	ctx := context.Background()
	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte("done")}
	key := func() server.Key { return server.Key{Scope: "lost", Key: rand.Text()} }

	t.Run("claim is recognised by its nonce", func(t *testing.T) {
		cli, w := wiredClient(t)
		store := newStore(t, cli, etcdstore.Options{})
		k := key()
		w.setDrop(dropCalls(codes.Unavailable, map[string][]int64{methodTxn: {1}}))
		c, err := store.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		require.True(t, c.Acquired, "the claim landed although its answer was lost")
		w.setDrop(nil)
		require.NoError(t, store.Complete(ctx, k, c.Token, resp, time.Hour), "its token holds")
	})

	t.Run("complete is recognised by its nonce", func(t *testing.T) {
		cli, w := wiredClient(t)
		store := newStore(t, cli, etcdstore.Options{})
		k := key()
		c, err := store.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		w.setDrop(dropCalls(codes.Unavailable, map[string][]int64{methodTxn: {1}}))
		require.NoError(t, store.Complete(ctx, k, c.Token, resp, time.Hour), "the outcome landed although the answer was lost")
		w.setDrop(nil)
		replay, err := store.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		require.True(t, replay.Record.Completed)
		assert.Equal(t, resp.Body, replay.Record.Response.Body)
		assert.ErrorIs(t, store.Complete(ctx, k, c.Token, resp, time.Hour), server.ErrLeaseLost, "a second Complete call")
	})

	t.Run("an unresolved claim is released in the background", func(t *testing.T) {
		// The claim's answer and the read that would tell are both lost:
		// Claim fails, and the claim it made is deleted behind it, well
		// before its one-minute lease would lapse. The naive claim is the
		// same, made by a process that then stops (its client closed, so
		// nothing runs behind it): its key stays held.
		obs := connect(t)
		opts := etcdstore.Options{Prefix: testPrefix(t, obs)}
		observer := newStore(t, obs, opts)
		lost := map[string][]int64{methodTxn: {1}, methodRange: {2}} // the claim, and the read after it
		k, naive := key(), key()

		cli, w := wiredClient(t)
		w.setDrop(dropCalls(codes.Unknown, lost))
		_, err := newStore(t, cli, opts).Claim(ctx, naive, "fp", time.Minute)
		require.Error(t, err)
		cli.Close()

		cli, w = wiredClient(t)
		store := newStore(t, cli, opts)
		w.setDrop(dropCalls(codes.Unknown, lost))
		_, err = store.Claim(ctx, k, "fp", time.Minute)
		require.Error(t, err, "neither the claim's answer nor the read came back")

		var c server.Claim
		require.Eventually(t, func() bool {
			c, err = observer.Claim(ctx, k, "fp", time.Minute)
			return err == nil && c.Acquired
		}, 20*time.Second, 20*time.Millisecond, "the lost claim was not released")
		assert.False(t, c.TakenOver, "released, not taken over")

		held, err := observer.Claim(ctx, naive, "fp", time.Minute)
		require.NoError(t, err)
		assert.False(t, held.Acquired, "the naive claim, with nothing behind it, still holds its key")
	})
}
