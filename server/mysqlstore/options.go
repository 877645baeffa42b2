package mysqlstore

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultTable is the table a Store uses when Options.Table is empty.
const DefaultTable = "idem_keys"

// DefaultMaxResponse is Options.MaxResponse's default: 4 MiB.
const DefaultMaxResponse = 4 << 20

// Options configures a Store. The zero value is valid and means the
// documented defaults.
type Options struct {
	// Table is the table holding the records, optionally qualified by a
	// database ("billing.idem_keys"). Each part must be a lowercase SQL
	// identifier of at most 64 bytes: a letter or underscore, then
	// letters, digits or underscores. Lowercase keeps the name the same
	// whatever the server's lower_case_table_names. The default is
	// "idem_keys" in the connection's default database.
	Table string

	// Transactional runs the work inside a database transaction that
	// commits together with the stored response; the handler reaches it
	// through [Tx]. [Store.ClaimWork] then claims the key with a named
	// lock held by the work's connection, and [Store.BeginWork] begins the
	// transaction under a lease claimed by [Store.Claim]. The default,
	// false, runs the work outside any transaction and stores its outcome
	// with Complete; such a Store takes no named locks at all.
	Transactional bool

	// Abandon is how long Purge keeps a running record after its lease
	// lapsed, so that a worker that was only paused can still record its
	// outcome, and a retry with the same fingerprint can take the key over.
	// Default 24 h (server.DefaultAbandon).
	Abandon time.Duration

	// MaxResponse caps the bytes of one stored outcome (its body and
	// encoded header). A larger one is refused before it is sent: Complete
	// returns an error wrapping server.ErrResponseTooLarge (the middleware
	// then stores a small outcome in its place), and a transactional
	// Commit rolls the work back and fails. The statement that stores an
	// outcome carries it hex-encoded, twice its size, and must fit the
	// server's max_allowed_packet (16 MiB by default on MariaDB, 64 MiB on
	// MySQL 8). Default 4 MiB (DefaultMaxResponse).
	MaxResponse int
}

func (o Options) maxResponse() int {
	if o.MaxResponse > 0 {
		return o.MaxResponse
	}
	return DefaultMaxResponse
}

// ErrTableName is wrapped by the error New, Open and Schema return for a
// table name that is not one or two lowercase SQL identifiers.
var ErrTableName = errors.New("mysqlstore: invalid table name")

// tableName is a validated table name, quoted for SQL text.
type tableName struct {
	// quoted is the table, database-qualified if given, in backticks.
	quoted string
	// schema is the SQL expression of the table's database, for the
	// named locks: the given qualifier as a string literal, or DATABASE().
	schema string
	// bare is the table without its qualifier.
	bare string
	// schemaName is the given qualifier, or "".
	schemaName string
}

// parseTable validates name (empty means DefaultTable) and quotes it.
func parseTable(name string) (tableName, error) {
	if name == "" {
		name = DefaultTable
	}
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return tableName{}, fmt.Errorf("%w: %q: at most one database qualifier", ErrTableName, name)
	}
	for _, p := range parts {
		if !isIdentifier(p) {
			return tableName{}, fmt.Errorf("%w: %q: %q is not a lowercase SQL identifier of at most 64 bytes", ErrTableName, name, p)
		}
	}
	t := tableName{bare: parts[len(parts)-1], schema: "DATABASE()"}
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = "`" + p + "`"
	}
	t.quoted = strings.Join(quoted, ".")
	if len(parts) == 2 {
		t.schemaName = parts[0]
		t.schema = "'" + parts[0] + "'" // an identifier: nothing to escape
	}
	return t, nil
}

// isIdentifier reports whether s is a lowercase SQL identifier of at most
// 64 bytes, MySQL's limit.
func isIdentifier(s string) bool {
	if s == "" || len(s) > 64 {
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

// schemaSQL is the schema Migrate applies, with a {{table}} placeholder.
//
//go:embed schema.sql
var schemaSQL string

// Schema returns the statement [Store.Migrate] runs for table (empty
// means DefaultTable), for a DBA to read or apply by hand: a CREATE TABLE
// IF NOT EXISTS with its comments. It fails with an error wrapping
// ErrTableName for a name New would refuse.
func Schema(table string) (string, error) {
	t, err := parseTable(table)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(schemaSQL, "{{table}}", t.quoted), nil
}
