package pgstore

import (
	"context"
	"time"

	"github.com/idemhq/idem/server"
)

func (s *Store) abandon() time.Duration {
	if s.opts.Abandon > 0 {
		return s.opts.Abandon
	}
	return server.DefaultAbandon
}

// DefaultPurgeBatch is the batch size Purge uses when given zero or less.
const DefaultPurgeBatch = 1000

// Purge deletes completed records past their retention, and running
// records whose lease lapsed more than Options.Abandon ago, and returns how
// many it deleted. (A lapsed lease alone does not mean the worker is gone:
// a long pause, or renewals failing for a moment, and it may still finish
// and record its outcome, which it could not if its row were gone.) Each
// batch of at most batch rows (DefaultPurgeBatch if batch <= 0) is one
// short statement of its own, taking the oldest rows on the
// expires_at index and skipping rows other statements hold, so Purge never
// holds many locks for long and can run from several processes at once. It
// loops until a batch comes back short or ctx is done, and then returns the
// count so far with ctx's error.
//
// Run it periodically (a ticker goroutine or a cron job); nothing in idem
// calls it. Claims are correct without it, since Claim itself reuses a
// completed record past its retention and takes over a lapsed lease; Purge
// keeps the table small. It also forgets running records abandoned past
// Options.Abandon without a retry taking them over, after which a request
// with a different fingerprint may claim the key.
func (s *Store) Purge(ctx context.Context, batch int) (int, error) {
	return s.PurgeWithProgress(ctx, batch, nil)
}

// PurgeWithProgress is [Store.Purge], calling progress (if not nil) after
// each batch with the number of records deleted so far, from the
// goroutine that called it: an operator's progress bar, whose total
// [Stats].Purgeable gives beforehand. Records that expire while it runs
// are purged too, so the count can pass that total.
func (s *Store) PurgeWithProgress(ctx context.Context, batch int, progress func(deleted int)) (int, error) {
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, translate(ctx, "purge", err)
		}
		pool, err := s.conns(ctx)
		if err != nil {
			return total, err
		}
		var n int64
		if err := pool.QueryRow(ctx, s.q.purge, batch, s.abandon().Microseconds()).Scan(&n); err != nil {
			return total, translate(ctx, "purge", err)
		}
		total += int(n)
		if progress != nil {
			progress(total)
		}
		if n < int64(batch) {
			return total, nil
		}
	}
}
