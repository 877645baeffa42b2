package pgstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultTable is the table a Store uses when Options.Table is empty.
const DefaultTable = "idem_keys"

// maxTableName bounds the table part of Options.Table so that the names
// derived from it (the expires_at index) stay within PostgreSQL's 63-byte
// identifier limit.
const maxTableName = 63 - len(indexSuffix)

// indexSuffix names the purge index after its table.
const indexSuffix = "_expires_at_idx"

// Options configures a Store. The zero value is valid and means the
// documented defaults.
type Options struct {
	// Table is the table holding the records, optionally qualified by a
	// schema ("billing.idem_keys"). Each part must be a lowercase SQL
	// identifier: a letter or underscore, then letters, digits or
	// underscores, the table part at most 48 bytes. The default is
	// "idem_keys" in the connection's search_path.
	Table string

	// Abandon is how long Purge keeps a running record after its lease
	// lapsed, so that a worker that was only paused can still record its
	// outcome, and a retry with the same fingerprint can take the key over.
	// Default 24 h (DefaultAbandon).
	Abandon time.Duration

	// Transactional makes BeginWork run the work inside a database
	// transaction that commits together with the stored response; the
	// handler reaches it through [Tx]. The default, false, runs the work
	// outside any transaction and stores the outcome with Complete.
	Transactional bool

	// TxOptions are passed to BEGIN in transactional mode. The isolation
	// level is always READ COMMITTED (set explicitly, whatever the
	// server's default): the lease is renewed by updating the key's row
	// while the work runs, and at REPEATABLE READ or SERIALIZABLE the
	// fenced completion would then fail with a serialization error. New
	// refuses another IsoLevel, a read-only AccessMode (the stored response
	// is written in the transaction) and BeginQuery or CommitQuery (idem
	// begins and commits it). The zero value means the server's defaults
	// otherwise.
	TxOptions pgx.TxOptions

	// DurableClaims makes Claim, Renew, Release and Purge wait for their
	// commit to reach disk, like every other commit. The default, false,
	// commits them asynchronously (synchronous_commit off for those
	// statements only), which removes an fsync from the critical path of
	// every new key; see the Durability section of the package
	// documentation for what that trades. Complete and the transactional
	// commit are always as durable as the server's synchronous_commit.
	DurableClaims bool
}

// tableName is a validated, quoted table name and the names derived from it.
type tableName struct {
	// quoted is the table, schema-qualified if given, ready for SQL text.
	quoted string
	// index is the quoted, unqualified name of the expires_at index
	// (PostgreSQL creates an index in its table's schema).
	index string
	// lockKey names the advisory lock that serialises Migrate.
	lockKey string
}

// parseTable validates name (empty means DefaultTable) and quotes it.
func parseTable(name string) (tableName, error) {
	if name == "" {
		name = DefaultTable
	}
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return tableName{}, fmt.Errorf("pgstore: table %q: at most one schema qualifier", name)
	}
	for _, p := range parts {
		if !isIdentifier(p) {
			return tableName{}, fmt.Errorf("pgstore: table %q: %q is not a lowercase SQL identifier", name, p)
		}
	}
	table := parts[len(parts)-1]
	if len(table) > maxTableName {
		return tableName{}, fmt.Errorf("pgstore: table %q: longer than %d bytes", name, maxTableName)
	}
	return tableName{
		quoted:  pgx.Identifier(parts).Sanitize(),
		index:   pgx.Identifier{table + indexSuffix}.Sanitize(),
		lockKey: "idem/pgstore:migrate", // one for every spelling of every table
	}, nil
}

// isIdentifier reports whether s is a lowercase SQL identifier of at most
// 63 bytes. Lowercase keeps the quoted name the store uses equal to the
// folded unquoted name people type in psql.
func isIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
