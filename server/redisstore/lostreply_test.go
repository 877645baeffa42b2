package redisstore_test

import (
	"context"
	"crypto/rand"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// loseReplies is a go-redis hook that, while armed, lets a command run and
// then reports the connection broken, as when a node dies between running
// a script and answering it.
type loseReplies struct{ armed atomic.Bool }

func (h *loseReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *loseReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && h.armed.CompareAndSwap(true, false) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
}
func (h *loseReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestClaimAnswerLost: a claim that ran on Redis but whose answer was
// lost is released in the background, so a retry claims the key long
// before the lost claim's lease (a minute) would have lapsed, and the
// work runs once, not never. The bound is a poll, not a timing.
func TestClaimAnswerLost(t *testing.T) {
	for _, env := range targets {
		t.Run(env, func(t *testing.T) {
			hook := &loseReplies{}
			rdb := connect(t, env, nil)
			rdb.AddHook(hook)
			s := newStore(t, rdb, redisstore.Options{})
			ctx := context.Background()
			k := server.Key{Scope: "s", Key: rand.Text()}

			hook.armed.Store(true)
			_, err := s.Claim(ctx, k, "fp", time.Minute)
			require.Error(t, err, "the claim's answer was lost")
			require.False(t, hook.armed.Load(), "the claim ran")

			var c server.Claim
			require.Eventually(t, func() bool {
				c, err = s.Claim(ctx, k, "fp", time.Minute)
				require.NoError(t, err)
				return c.Acquired
			}, 5*time.Second, 10*time.Millisecond, "the lost claim still holds the key")
			assert.False(t, c.TakenOver, "the lost claim was released, not taken over")
		})
	}
}
