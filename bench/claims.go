package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// claimResult is pgstore's SQL claim timed alone, through Store.Claim.
type claimResult struct {
	fresh, replay sample
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
	done := server.Key{Scope: "bench", Key: "replayed"}
	c, err := st.Claim(ctx, done, "fp", time.Minute)
	must(err)
	must(st.Complete(ctx, done, c.Token, server.Response{Status: 201, Body: []byte(`{"id":"ch_1"}`)}, time.Hour))
	res := &claimResult{}
	for range cfg.rounds {
		for range cfg.seqOps {
			k := server.Key{Scope: "bench", Key: newKey()}
			start := time.Now()
			c, err := st.Claim(ctx, k, "fp", time.Minute)
			res.fresh = append(res.fresh, time.Since(start))
			must(err)
			if !c.Acquired {
				must(fmt.Errorf("a new key was not acquired"))
			}
			start = time.Now()
			c, err = st.Claim(ctx, done, "fp", time.Minute)
			res.replay = append(res.replay, time.Since(start))
			must(err)
			if !c.Record.Completed {
				must(fmt.Errorf("the completed key was not reported"))
			}
		}
	}
	return res
}

func (r *claimResult) print() {
	t := &table{title: "Server: pgstore Store.Claim alone, the lease path (non-transactional mode): one statement, one round trip", head: []string{"claim", "p50", "p99"}}
	t.add("new key (asynchronous commit)", ms(r.fresh.median()), ms(r.fresh.p99()))
	t.add("replay (read-only: no transaction ID, no WAL)", ms(r.replay.median()), ms(r.replay.p99()))
	t.print()
}
