package main

// This file holds "idem keys", which reads and purges a server's store of
// idempotency records, and opening that store.

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem/server/pgstore"
)

// databaseEnv names the store's database when --database is not given.
const databaseEnv = "IDEM_DATABASE"

// openTimeout bounds connecting to the database, so that an unreachable
// host is reported rather than waited on.
const openTimeout = 15 * time.Second

// storeFlags are the flags every keys command takes.
type storeFlags struct {
	database string
	table    string
	abandon  time.Duration
}

func newKeysCmd(a *app) *cobra.Command {
	var f storeFlags
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "See and purge a server's store of idempotency records",
		Long: `keys reads the records the server package keeps in PostgreSQL
(server/pgstore), named by --database DSN or $` + databaseEnv + ` and --table:
how many are running, lapsed, completed or expired, which keys are running
and since when, to find stuck work; and it purges what is past its
retention.

Only PostgreSQL stores can be read: the Redis store (server/redisstore)
offers no listing of its keys, and the in-memory store lives inside its
process. The DSN is a PostgreSQL URL or keyword/value string; PG*
environment variables fill in what it leaves out. Messages never show its
password.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.database, "database", "", "the store's PostgreSQL `DSN` (default $"+databaseEnv+")")
	pf.StringVar(&f.table, "table", pgstore.DefaultTable, "the store's `TABLE`, as pgstore.Options.Table names it")
	pf.DurationVar(&f.abandon, "abandon", pgstore.DefaultAbandon, "how long after its lease lapsed a running record may be purged, as pgstore.Options.Abandon")
	cmd.AddCommand(newKeysLsCmd(a, &f), newKeysPurgeCmd(a, &f))
	return cmd
}

// openStore opens the store the flags name. The caller closes it.
func (a *app) openStore(ctx context.Context, f *storeFlags) (*pgstore.Store, error) {
	dsn := f.database
	if dsn == "" {
		dsn = a.getenv(databaseEnv)
	}
	if dsn == "" {
		return nil, usagef("no database: pass --database DSN or set %s", databaseEnv)
	}
	if f.abandon <= 0 {
		return nil, usagef("--abandon must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	return pgstore.Open(ctx, dsn, pgstore.Options{Table: f.table, Abandon: f.abandon})
}
