package pgstore

import (
	"errors"
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
	// Default 24 h (server.DefaultAbandon).
	Abandon time.Duration

	// Transactional runs the work inside a database transaction that
	// commits together with the stored response; the handler reaches it
	// through [Tx]. The transaction is READ COMMITTED and read-write,
	// whatever the session's defaults. [Store.ClaimWork] then claims the
	// key with a lock held by that transaction, and [Store.BeginWork]
	// begins it under a lease claimed by [Store.Claim]. The default,
	// false, runs the work outside any transaction and stores the outcome
	// with Complete.
	Transactional bool

	// Takeover bounds, in transactional mode, how long a key claimed by
	// [Store.ClaimWork] stays held by a worker whose machine vanished
	// without closing its connection (a power cut, a partition): for the
	// work's transaction only, pgstore sets the server's TCP keepalives
	// (tcp_keepalives_idle to a third of Takeover, tcp_keepalives_interval
	// to a sixth, tcp_keepalives_count to 4) and tcp_user_timeout to
	// Takeover, so PostgreSQL declares the connection dead, rolls the work
	// back and frees the key about Takeover after the worker fell silent.
	// A worker whose process dies frees its keys at once (its operating
	// system closes the connection); a worker that is alive but slow keeps
	// them as long as it runs. Default 30 s, as the middleware's lease;
	// negative leaves the server's settings alone. See the Takeover
	// section of the package documentation.
	Takeover time.Duration

	// ReservedConns is the size of a second pool the Store opens, from the
	// configuration of the pool given to New (or of the Store's own pool,
	// behind a connection pooler), for the statements that
	// extend or end a running claim (Renew, Complete, Release): they then
	// never wait for a connection behind running work, or behind the
	// application's own queries on the same pool, while the lease they
	// protect lapses. The pool opens its connections when first needed
	// (never, for a Store used only through ClaimWork) and [Store.Close]
	// closes it. Default 2; negative: none, those statements share the
	// main pool.
	ReservedConns int

	// DurableClaims makes Claim, Renew, Release and Purge wait for their
	// commit to reach disk, like every other commit. The default, false,
	// commits them asynchronously (synchronous_commit off for those
	// statements only), which removes an fsync from the critical path of
	// every new key; see the Durability section of the package
	// documentation for what that trades. Their commits then run with
	// synchronous_commit raised to on, as outcomes do (unless
	// InheritSynchronousCommit).
	DurableClaims bool

	// InheritSynchronousCommit leaves the commits that record an outcome
	// (Complete, and the work's Commit in transactional mode; with
	// DurableClaims, the claims' too) to the synchronous_commit the
	// server, database, role or pool gives the session. By default
	// pgstore raises it to on for those commits alone (set_config with
	// is_local true, in the statement that records; remote_apply is kept
	// as it is), so an outcome is on disk before its answer is sent even
	// where synchronous_commit is off. Set it only where losing answered
	// outcomes is accepted: with synchronous_commit off, a crash of the
	// database server forgets outcomes already answered, and a retry of
	// their keys runs the work again (see the Durability section of the
	// package documentation). Default false.
	InheritSynchronousCommit bool

	// IdleInTransaction is, in transactional mode, the
	// idle_in_transaction_session_timeout of the work's transaction, set
	// for that transaction only: PostgreSQL ends the session of a work
	// whose handler sends no statement for that long. The default, 0,
	// turns the timeout off for the work's transaction, whatever the
	// server, database, role or pool sets, because a timeout shorter than
	// a handler makes every run of its key fail: the session ends, the
	// work rolls back, the key is released and each retry runs the
	// handler again, never to complete. The middleware's work limit
	// (server.Options.WorkTimeout) bounds the work instead, and Takeover
	// a vanished worker. Positive: that timeout, in whole milliseconds;
	// keep it above the work limit. Negative: the session's setting
	// stands.
	IdleInTransaction time.Duration

	// PipelineClaim, in transactional mode, sends the key's claim in one
	// round trip with the handler's first statement through [Tx], rather
	// than before the handler runs: [Store.ClaimWork] answers at once,
	// and the statement runs only if the claim holds, in the claim's
	// transaction. A new key then costs one round trip less. If the
	// claim is refused (the key is in flight, or its outcome recorded),
	// the statement fails with [ErrNotClaimed], so does every later one,
	// nothing of the work commits, and the middleware answers the request
	// as its claim, throwing away the handler's answer. A repeat costs
	// one round trip, as without it, but runs the handler up to its first
	// statement, and is answered 409 at once while the first runs, even
	// in the middleware's wait mode.
	//
	// It is safe only for handlers whose effects are all in the
	// database, or made after their first statement through Tx returned
	// without error: an effect made before (a call to a provider, a
	// message sent) is made again by every repeat, each of which runs the
	// handler up to its first statement. See the Pipelined claim section
	// of the package documentation. Default false.
	PipelineClaim bool
}

// ErrTableName is wrapped by the error of [New], [Open] and [Schema] for
// a table name that is not one (see Options.Table).
var ErrTableName = errors.New("pgstore: invalid table name")

// tableName is a validated, quoted table name and the names derived from it.
type tableName struct {
	// quoted is the table, schema-qualified if given, ready for SQL text.
	quoted string
	// index is the quoted, unqualified name of the expires_at index
	// (PostgreSQL creates an index in its table's schema), and
	// indexName the same unquoted.
	index, indexName string
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
		return tableName{}, fmt.Errorf("%w %q: at most one schema qualifier", ErrTableName, name)
	}
	for _, p := range parts {
		if !isIdentifier(p) {
			return tableName{}, fmt.Errorf("%w %q: %q is not a lowercase SQL identifier", ErrTableName, name, p)
		}
	}
	table := parts[len(parts)-1]
	if len(table) > maxTableName {
		return tableName{}, fmt.Errorf("%w %q: the table part is longer than %d bytes", ErrTableName, name, maxTableName)
	}
	return tableName{
		quoted:    pgx.Identifier(parts).Sanitize(),
		index:     pgx.Identifier{table + indexSuffix}.Sanitize(),
		indexName: table + indexSuffix,
		lockKey:   "idem/pgstore:migrate", // one for every spelling of every table
	}, nil
}

// render replaces the {{table}} and {{index}} placeholders of sql with the
// quoted names.
func (t tableName) render(sql string) string {
	return strings.NewReplacer("{{table}}", t.quoted, "{{index}}", t.index).Replace(sql)
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
