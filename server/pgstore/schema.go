package pgstore

// This file holds the schema: Migrate, which applies it, and Schema, which
// renders it for a person to apply.

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Schema returns the DDL [Store.Migrate] applies for table (empty means
// DefaultTable), as text psql runs (psql -f, or -c), for a database
// administrator who creates the table so that the service's role needs no
// CREATE privilege: that role then needs SELECT, INSERT, UPDATE and
// DELETE on the table, and Migrate, which finds the table and its index,
// runs no DDL. table is validated as Options.Table is; an invalid name
// returns an error wrapping [ErrTableName]. Every statement is idempotent
// (CREATE ... IF NOT EXISTS), so running the text twice is harmless.
func Schema(table string) (string, error) {
	name, err := parseTable(table)
	if err != nil {
		return "", err
	}
	return name.render(schemaSQL), nil
}

// schemaPresent is a boolean query: $1, the table's quoted name, exists
// and has an index named $2, the unquoted name of the expires_at index.
const schemaPresent = `SELECT EXISTS (
    SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = to_regclass($1) AND c.relname = $2)`

// migrateLock takes the transaction-scoped advisory lock that serialises
// migrations: $1 names it.
const migrateLock = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"

// Migrate creates the table and its expires_at index if they do not exist.
// It is idempotent and safe to run from several processes at once: the
// statements run in one transaction under an advisory lock shared by all
// pgstore migrations (so two spellings of one table, with and without its
// schema, cannot race). It never alters an existing table. When the table
// and its index exist already, it only looks (one round trip, writing
// nothing), so a role without the CREATE privilege can run it against a
// schema created from [Schema]'s text.
func (s *Store) Migrate(ctx context.Context) error {
	pool, err := s.conns(ctx)
	if err != nil {
		return err
	}
	var present bool
	if err := pool.QueryRow(ctx, schemaPresent, s.name.quoted, s.name.indexName).Scan(&present); err != nil {
		return translate(ctx, "migrate", err)
	}
	if present {
		return nil
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, migrateLock, s.name.lockKey); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.q.schema)
		return err
	})
	return translate(ctx, "migrate", err)
}
