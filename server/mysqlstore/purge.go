package mysqlstore

import (
	"context"
	"time"

	"github.com/idemhq/idem/server"
)

// DefaultPurgeBatch is the batch size Purge uses when given zero or less.
const DefaultPurgeBatch = 1000

func (s *Store) abandon() time.Duration {
	if s.opts.Abandon > 0 {
		return s.opts.Abandon
	}
	return server.DefaultAbandon
}

// Purge deletes completed records past their retention, and running
// records whose lease lapsed more than Options.Abandon ago, and returns how
// many it deleted. (A lapsed lease alone does not mean the worker is gone:
// a long pause, or renewals failing for a moment, and it may still finish
// and record its outcome, which it could not if its row were gone.) Each
// batch of at most batch rows (DefaultPurgeBatch if batch <= 0) is one
// short DELETE of its own, committed on its own, taking the oldest rows
// along the expires_at index, so Purge never holds many row locks for long
// and can run from several processes at once. It loops until a batch
// comes back short or ctx is done, and then returns the count so far with
// ctx's error.
//
// Run it periodically (a ticker goroutine or a cron job); nothing in idem
// calls it. Claims are correct without it, since Claim and ClaimWork reuse
// a completed record past its retention and take over a lapsed lease;
// Purge keeps the table small. It also forgets running records abandoned
// past Options.Abandon without a retry taking them over, after which a
// request with a different fingerprint may claim the key. Keys held by a
// ClaimWork have no row until they commit, so Purge never meets them.
func (s *Store) Purge(ctx context.Context, batch int) (int, error) {
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, translate(ctx, "purge", err)
		}
		n, err := s.affected(ctx, s.q.purge(batch, s.abandon()))
		if err != nil {
			return total, translate(ctx, "purge", err)
		}
		total += int(n)
		if n < int64(batch) {
			return total, nil
		}
	}
}
