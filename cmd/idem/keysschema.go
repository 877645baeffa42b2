package main

// This file holds "idem keys schema", which prints the DDL of a pgstore
// table for a database administrator to apply.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem/server/pgstore"
)

func newKeysSchemaCmd(a *app, f *storeFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "schema [--table TABLE]",
		Short: "Print the DDL of a pgstore table",
		Long: `schema prints the SQL that pgstore's Migrate applies for --table: the
table and its index, every statement idempotent (CREATE ... IF NOT EXISTS).
A database administrator applies it (psql -f) so that the service's role
needs no CREATE privilege, only SELECT, INSERT, UPDATE and DELETE on the
table; Migrate then finds the table and runs no DDL. It connects to no
database.`,
		Example: `  idem keys schema > idem_keys.sql
  idem keys schema --table billing.idem_keys | psql "$ADMIN_DSN" -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, name := range []string{"database", "redis", "redis-prefix", "abandon"} {
				if cmd.Flags().Changed(name) {
					return usagef("--%s: schema connects to no store; it takes --table only", name)
				}
			}
			ddl, err := pgstore.Schema(f.table)
			if errors.Is(err, pgstore.ErrTableName) {
				return usagef("--table: %s", strings.TrimPrefix(err.Error(), "pgstore: "))
			}
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(struct {
					Table string `json:"table"`
					DDL   string `json:"ddl"`
				}{f.table, ddl})
			}
			_, err = fmt.Fprint(a.stdout, ddl)
			if err == nil && !strings.HasSuffix(ddl, "\n") {
				_, err = fmt.Fprintln(a.stdout)
			}
			return err
		},
	}
}
