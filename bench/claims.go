package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// claimResult is one store's Store.Claim timed alone: a new key, and a
// key whose outcome is recorded (the replay's read).
type claimResult struct {
	title               string
	freshRow, replayRow string // the rows' labels
	fresh, replay       sample
}

// claims measures pgstore's Store.Claim alone: the lease path, which the
// middleware takes in non-transactional mode.
func claims(cfg config, pool *pgxpool.Pool) *claimResult {
	ctx := context.Background()
	tbl := tableName("claims")
	st, err := pgstore.New(pool, pgstore.Options{Table: tbl})
	must(err)
	defer st.Close() // Complete opens the store's reserved pool
	must(st.Migrate(ctx))
	defer pool.Exec(ctx, "DROP TABLE IF EXISTS "+tbl)
	res := &claimResult{
		title:     "Server: pgstore Store.Claim alone, the lease path (non-transactional mode): one statement, one round trip",
		freshRow:  "new key (asynchronous commit)",
		replayRow: "replay (read-only: no transaction ID, no WAL)",
	}
	res.fresh, res.replay = timeClaims(cfg, st)
	return res
}

// timeClaims times st.Claim of new keys and of a key whose outcome is
// recorded, cfg.rounds × cfg.seqOps of each, interleaved.
func timeClaims(cfg config, st server.Store) (fresh, replay sample) {
	ctx := context.Background()
	done := server.Key{Scope: "bench", Key: newKey()}
	c, err := st.Claim(ctx, done, "fp", time.Minute)
	must(err)
	must(st.Complete(ctx, done, c.Token, server.StoredResponse{Status: 201, Body: []byte(`{"id":"ch_1"}`)}, time.Hour))
	for range cfg.rounds {
		for range cfg.seqOps {
			k := server.Key{Scope: "bench", Key: newKey()}
			start := time.Now()
			c, err := st.Claim(ctx, k, "fp", time.Minute)
			fresh = append(fresh, time.Since(start))
			must(err)
			if !c.Acquired {
				must(fmt.Errorf("a new key was not acquired"))
			}
			start = time.Now()
			c, err = st.Claim(ctx, done, "fp", time.Minute)
			replay = append(replay, time.Since(start))
			must(err)
			if !c.Record.Completed {
				must(fmt.Errorf("the completed key was not reported"))
			}
		}
	}
	return fresh, replay
}

func (r *claimResult) print() {
	t := &table{title: r.title, head: []string{"claim", "p50", "p99"}}
	t.add(r.freshRow, ms(r.fresh.median()), ms(r.fresh.p99()))
	t.add(r.replayRow, ms(r.replay.median()), ms(r.replay.p99()))
	t.print()
}
