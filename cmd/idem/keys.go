package main

// This file holds "idem keys", which reads and purges a server's store of
// idempotency records, and opening that store.

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
	"github.com/idemhq/idem/server/redisstore"
)

// databaseEnv names the store's database when --database is not given,
// and redisEnv its Redis when --redis is not.
const (
	databaseEnv = "IDEM_DATABASE"
	redisEnv    = "IDEM_REDIS"
)

// openTimeout bounds connecting to the database or Redis, so that an
// unreachable host is reported rather than waited on.
const openTimeout = 15 * time.Second

// storeFlags are the flags every keys command takes.
type storeFlags struct {
	database    string
	table       string
	abandon     time.Duration
	redis       string
	redisPrefix string
}

func newKeysCmd(a *app) *cobra.Command {
	var f storeFlags
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "See and purge a server's store of idempotency records",
		Long: `keys reads the records the server package keeps in PostgreSQL
(server/pgstore), named by --database DSN or $` + databaseEnv + ` and --table,
or in Redis (server/redisstore), named by --redis ADDR or $` + redisEnv + ` and
--redis-prefix: how many are running, lapsed or completed, which keys are
running and when their lease lapses, to find stuck work; and, in
PostgreSQL, it purges what is past its retention. Redis deletes its
records itself when they expire.

The DSN is a PostgreSQL URL or keyword/value string; PG* environment
variables fill in what it leaves out. --redis takes one address
(host:port: one node, or a cluster found through it), several
comma-separated (the seeds of a cluster), or a redis:// or rediss:// URL
(with user, password and TLS; a cluster's other seeds as addr=host:port
query parameters). Messages never show a password. The in-memory store
lives inside its process and cannot be read.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.database, "database", "", "the store's PostgreSQL `DSN` (default $"+databaseEnv+")")
	pf.StringVar(&f.table, "table", pgstore.DefaultTable, "the store's `TABLE`, as pgstore.Options.Table names it")
	pf.DurationVar(&f.abandon, "abandon", server.DefaultAbandon, "how long after its lease lapsed a running record may be purged, as pgstore.Options.Abandon")
	pf.StringVar(&f.redis, "redis", "", "the store's Redis: `ADDR`[,ADDR...] or a redis:// URL (default $"+redisEnv+")")
	pf.StringVar(&f.redisPrefix, "redis-prefix", redisstore.DefaultPrefix, "the store's key `PREFIX`, as redisstore.Options.Prefix names it")
	cmd.AddCommand(newKeysLsCmd(a, &f), newKeysPurgeCmd(a, &f), newKeysSchemaCmd(a, &f))
	return cmd
}

// useRedis reports whether the flags, or else the environment, name a
// Redis store rather than a PostgreSQL one, and fails when they name both
// or neither, or give one store's flags to the other.
func (a *app) useRedis(cmd *cobra.Command, f *storeFlags) (bool, error) {
	changed := cmd.Flags().Changed
	var redis bool
	switch {
	case f.database != "" && f.redis != "":
		return false, usagef("--database and --redis name two stores: pass one")
	case f.database != "":
	case f.redis != "":
		redis = true
	case a.getenv(databaseEnv) != "" && a.getenv(redisEnv) != "":
		return false, usagef("both %s and %s are set: pass --database or --redis", databaseEnv, redisEnv)
	case a.getenv(databaseEnv) != "":
	case a.getenv(redisEnv) != "":
		redis = true
	default:
		return false, usagef("no store: pass --database DSN or --redis ADDR, or set %s or %s", databaseEnv, redisEnv)
	}
	for _, name := range []string{"table", "abandon"} {
		if redis && changed(name) {
			return false, usagef("--%s is for a PostgreSQL store, not --redis", name)
		}
	}
	if !redis && changed("redis-prefix") {
		return false, usagef("--redis-prefix is for a Redis store, not --database")
	}
	return redis, nil
}

// openStore opens the PostgreSQL store the flags name. The caller closes
// it.
func (a *app) openStore(ctx context.Context, f *storeFlags) (*pgstore.Store, error) {
	dsn := f.database
	if dsn == "" {
		dsn = a.getenv(databaseEnv)
	}
	if f.abandon <= 0 {
		return nil, usagef("--abandon must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	return pgstore.Open(ctx, dsn, pgstore.Options{Table: f.table, Abandon: f.abandon})
}

// warn tells the operator, on stderr, of a setting of the store that lets
// it lose records (a store's Findings): "idem: <severity>: <finding>". The
// listing on stdout is unchanged, --json included.
func (a *app) warn(severity string, finding error) {
	fmt.Fprintf(a.stderr, "idem: %s: %s\n", severity, finding)
}
