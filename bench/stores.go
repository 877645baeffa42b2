package main

import (
	"fmt"
	"github.com/idemhq/idem/server/memstore"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/server/redisstore"
)

// The bare handlers: the charges service without the middleware (the
// requests carry no key and Optional lets them through), the baseline each
// store is compared with.
const (
	bareMemory = "bare handler, memory"
	barePG     = "bare handler, PostgreSQL insert"
)

// storeKind is one idempotency store the server rows compare. Every server
// table and chart row comes from the list storeKinds returns, so adding a
// store is one entry there.
type storeKind struct {
	name string // as in the tables and charts: "memstore"
	// bare names the bare handler it is compared with: the one whose
	// charges are kept where this store's are.
	bare string
	// config turns the service's base configuration (delay, lease, wait)
	// into one served with this store. table is a fresh name for this
	// use, for stores that make tables.
	config func(base charges.Config, table string) charges.Config
	// takeover plays a worker that claimed a key and died, and says
	// whether and when a retry got the key; nil where the server tests
	// cover it instead.
	takeover func(cfg charges.Config, url string) string
	// noDelay: the kind's handler must make no effect before its charge
	// is written (a pipelined claim), so it has no pile-up row, whose
	// handler waits for the card network first.
	noDelay bool
}

// env is what the server half runs against.
type env struct {
	pool  *pgxpool.Pool         // nil without PostgreSQL
	redis redis.UniversalClient // nil without Redis
}

// pgPipelined is the store kind of pgstore with its claim pipelined with
// the charge's INSERT (pgstore.Options.PipelineClaim).
const pgPipelined = "pgstore (transactional, pipelined claim)"

func (e env) storeKinds() []storeKind {
	ks := []storeKind{
		{name: "memstore", bare: bareMemory, config: func(c charges.Config, _ string) charges.Config {
			// Room for every key a run makes: with the default bounds
			// (100,000 keys, a quarter of them for one scope) the
			// throughput rounds fill the bench client's share and the
			// rest are refused 503, which measures the refusal.
			c.Store = memstore.New(memstore.Options{MaxKeys: 10_000_000, ScopeMaxKeys: 10_000_000, MaxBytes: 8 << 30, ScopeMaxBytes: 8 << 30})
			return c
		}},
	}
	if e.pool != nil {
		ks = append(ks, storeKind{name: "pgstore (transactional)", bare: barePG, config: func(c charges.Config, t string) charges.Config {
			c.Pool, c.Table = e.pool, t
			return c
		}, takeover: pgTakeover})
		ks = append(ks, storeKind{name: pgPipelined, bare: barePG, config: func(c charges.Config, t string) charges.Config {
			c.Pool, c.Table, c.PipelineClaim = e.pool, t, true
			return c
		}, noDelay: true})
	}
	if e.redis != nil {
		// The charges stay in memory, committed under the store's fence.
		ks = append(ks, storeKind{name: e.redisName(), bare: bareMemory, config: func(c charges.Config, t string) charges.Config {
			c.Store, c.Table = e.newRedisStore(t), t // Table names the use, for cleanUp
			return c
		}, takeover: redisTakeover(e)})
	}
	return ks
}

// bareConfigs are the bare handlers, each under its name.
func (e env) bareConfigs() map[string]func(base charges.Config, table string) charges.Config {
	m := map[string]func(charges.Config, string) charges.Config{
		bareMemory: func(c charges.Config, _ string) charges.Config { c.Optional = true; return c },
	}
	if e.pool != nil {
		m[barePG] = func(c charges.Config, t string) charges.Config {
			c.Pool, c.Table, c.Optional = e.pool, t, true
			return c
		}
	}
	return m
}

// tableName is a fresh table name for one use, so runs never meet.
func tableName(use string) string { return fmt.Sprintf("bench_%s_%d", use, rand.Uint32()) }

// cleanUp removes what a configuration created: its PostgreSQL tables,
// or its keys in Redis.
func (e env) cleanUp(c charges.Config) {
	if _, ok := c.Store.(*redisstore.Store); ok && e.redis != nil {
		e.forgetRedis(c.Table)
		return
	}
	if e.pool == nil || c.Pool == nil || c.Table == "" {
		return
	}
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	e.pool.Exec(ctx, "DROP TABLE IF EXISTS "+c.Table+", "+c.Table+"_keys")
}
