package pgstore

import (
	_ "embed"
	"strconv"
	"strings"
	"time"
)

// schemaSQL is the schema Migrate applies, with {{table}} and {{index}}
// placeholders for the quoted names of the table and its expires_at index.
//
//go:embed schema.sql
var schemaSQL string

// asyncCommit is a boolean SQL expression, always true, that turns
// synchronous_commit off for the rest of the current transaction. It sits in
// the RETURNING list of a writing statement, so it is evaluated exactly when
// the statement writes, which is exactly when there is a commit to speed up.
const asyncCommit = `set_config('synchronous_commit', 'off', true) = 'off'`

// syncCommit is a boolean SQL expression, always true, that raises
// synchronous_commit to on for the rest of the current transaction, unless
// it is remote_apply, which waits for more and is kept. It sits in the
// RETURNING list of the statement that records an outcome, so that the
// commit after it waits for the WAL flush whatever the server, database,
// role or pool set: with synchronous_commit off, PostgreSQL acknowledges a
// commit whose WAL may still be in its buffers, and a crash of the server
// then forgets an outcome already answered. Set in the recording statement
// itself, it holds even if the handler changed the setting in the work's
// transaction. Options.InheritSynchronousCommit replaces it with true.
const syncCommit = `set_config('synchronous_commit',
    CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true) <> ''`

// queries holds the SQL text of every statement a Store sends, built once by
// New for its table.
//
// Parameters shared by the statements: $1 scope, $2 key, and durations as
// whole microseconds (bigint) so that no interval encoding is involved.
// Times come from statement_timestamp(): the database's clock, fixed for the
// statement, correct inside a long transaction, and shared by every process
// using the table.
type queries struct {
	schema   string
	claim    string
	takeover string
	renew    string
	complete string
	commit   string
	release  string
	purge    string
	stats    string
	running  string

	// The statements of ClaimWork (see claimwork.go).
	begin     string
	lock      string
	lockInSQL string
	lookup    string
	insert    string
	record    string

	// The pipelined claim's statements (see pipeline.go), around lookup.
	lockClaim string
	guard     string

	// workSettings, run after begin by BeginWork, sets what the work's
	// transaction needs for itself (Options.IdleInTransaction); empty when
	// there is nothing to set. ClaimWork's lock statement sets the same.
	workSettings string
}

// lockKey is the SQL expression of the advisory lock key of ($1 scope, $2
// key) in {{table}}: the first 8 bytes of the SHA-256 of the table's OID,
// a colon, the scope's length in bytes, a colon, the scope and the key
// (UTF-8), read as a big-endian signed 64-bit integer; see the lock
// statement.
const lockKey = `('x' || encode(substr(sha256(convert_to(
    '{{table}}'::regclass::oid::text || ':' || octet_length($1::text)::text || ':' || $1::text || $2::text,
    'UTF8')), 1, 8), 'hex'))::bit(64)::bigint`

// fenceFailed is the SQLSTATE the commit and record statements raise when
// their fence fails: division_by_zero, from the "1 / count(*)" that ends
// them. An error, unlike an empty result, aborts the transaction, so that
// PostgreSQL skips the COMMIT pipelined after the statement and the
// business writes roll back with it.
const fenceFailed = "22012"

// claimRefused is the SQLSTATE the pipelined claim's guard raises when
// the claim does not hold: division_by_zero, from a "1 / 0" computed from
// the lock's and the record's state. As the
// fence's, the error aborts the transaction, so that PostgreSQL skips the
// handler's statements pipelined after them.
const claimRefused = "22012"

// uniqueViolation is the SQLSTATE of the insert statement when a record
// of its key exists: its fence is the primary key.
const uniqueViolation = "23505"

func buildQueries(t tableName, opts Options) queries {
	sync := syncCommit
	if opts.InheritSynchronousCommit {
		sync = "true"
	}
	async := asyncCommit
	if opts.DurableClaims {
		async = sync
	}
	r := strings.NewReplacer("{{table}}", t.quoted, "{{index}}", t.index, "{{async}}", async, "{{sync}}", sync)
	q := queries{
		schema: schemaSQL,

		// claim: $3 fingerprint, $4 new token, $5 lease.
		//
		// One statement, one round trip. A new key is inserted; an existing
		// key is only read: ON CONFLICT DO NOTHING neither locks nor writes
		// the existing row, so a replay or an in-flight repeat assigns no
		// transaction ID and writes no WAL. The takeover column says
		// whether the existing row may be taken over: it has expired, and
		// it is either completed (retention over) or running under a
		// lapsed lease with the same fingerprint.
		//
		// The statement also tries the key's advisory lock in shared mode,
		// for itself only: ClaimWork holds it exclusively while the work
		// it claimed runs, and then the key is not inserted (free is
		// false), and the last branch reports it held when there is no
		// row to tell more. Claims never wait on each other's shared lock.
		//
		// Zero rows come back when the conflicting row was inserted by a
		// transaction that committed after this statement's snapshot was
		// taken (ON CONFLICT waited for it) or was deleted meanwhile; the
		// caller runs the statement again.
		claim: `WITH lock AS MATERIALIZED (
    SELECT pg_try_advisory_xact_lock_shared(` + lockKey + `) AS free
), ins AS (
    INSERT INTO {{table}} (scope, key, fingerprint, token, state, expires_at)
    SELECT $1, $2, $3, $4, 'running', statement_timestamp() + $5::bigint * interval '1 microsecond'
    FROM lock WHERE lock.free
    ON CONFLICT (scope, key) DO NOTHING
    RETURNING {{async}} AS async
)
SELECT true AS acquired, false AS found, ''::text, ''::text, false, 0, NULL::bytea, NULL::bytea,
       statement_timestamp(), false AS takeover, true AS free
FROM ins WHERE ins.async
UNION ALL
SELECT false, true, t.fingerprint, t.token, t.state = 'completed', coalesce(t.status, 0), t.header, t.body, t.expires_at,
       t.expires_at < statement_timestamp() AND (t.state = 'completed' OR t.fingerprint = $3), lock.free
FROM {{table}} t, lock
WHERE t.scope = $1 AND t.key = $2 AND NOT EXISTS (SELECT 1 FROM ins)
UNION ALL
SELECT false, false, ''::text, ''::text, false, 0, NULL::bytea, NULL::bytea, statement_timestamp(), false, false
FROM lock
WHERE NOT lock.free AND NOT EXISTS (SELECT 1 FROM {{table}} t WHERE t.scope = $1 AND t.key = $2)`,

		// takeover: $3 fingerprint, $4 new token, $5 lease, $6 the token
		// seen by claim. Fenced by that token and by the takeover
		// condition, both re-checked on the latest row version, so of two
		// concurrent takeovers exactly one wins and a row completed or
		// renewed meanwhile is left alone; and, as claim, by the key's
		// advisory lock, so that a key ClaimWork began to run again since
		// claim looked is left alone too.
		takeover: `UPDATE {{table}}
SET fingerprint = $3, token = $4, state = 'running', status = NULL, header = NULL, body = NULL,
    claimed_at = statement_timestamp(),
    expires_at = statement_timestamp() + $5::bigint * interval '1 microsecond'
WHERE scope = $1 AND key = $2 AND token = $6
  AND expires_at < statement_timestamp() AND (state = 'completed' OR fingerprint = $3)
  AND pg_try_advisory_xact_lock_shared(` + lockKey + `)
RETURNING {{async}}`,

		// renew: $3 token, $4 lease.
		renew: `UPDATE {{table}}
SET expires_at = statement_timestamp() + $4::bigint * interval '1 microsecond'
WHERE scope = $1 AND key = $2 AND token = $3 AND state = 'running'
RETURNING {{async}}`,

		// complete: $3 token, $4 status, $5 header (see encodeHeader), $6 body,
		// $7 retention. Durable: this is the commit that records an
		// outcome, with synchronous_commit raised to on ({{sync}}).
		complete: completeSQL + "\nRETURNING {{sync}}",

		// release: $3 token.
		release: `DELETE FROM {{table}}
WHERE scope = $1 AND key = $2 AND token = $3 AND state = 'running'
RETURNING {{async}}`,

		// purge: $1 batch size, $2 how long a running row is kept after
		// its lease lapsed. Takes the oldest expired rows on the
		// expires_at index, skipping rows another statement holds.
		purge: `WITH gone AS (
    DELETE FROM {{table}}
    WHERE (scope, key) IN (
        SELECT scope, key FROM {{table}}
        WHERE expires_at < statement_timestamp()
          AND (state = 'completed' OR expires_at < statement_timestamp() - $2::bigint * interval '1 microsecond')
        ORDER BY expires_at
        LIMIT $1
        FOR UPDATE SKIP LOCKED)
    RETURNING {{async}} AS async
)
SELECT count(*) FROM gone WHERE gone.async`,
	}
	// commit is complete run as the last statement of the work's
	// transaction, pipelined with COMMIT. When the fence fails it divides
	// by zero (fenceFailed): the error aborts the transaction, PostgreSQL
	// skips the pipelined COMMIT, and the business writes roll back with
	// it. The divisor is computed at run time, so planning never folds it.
	// Its RETURNING raises synchronous_commit to on ({{sync}}), read by
	// the outer query so that it is evaluated for the row it wrote.
	q.commit = "WITH done AS (\n" + completeSQL + "\nRETURNING {{sync}} AS sync\n)\nSELECT 1 / count(*)::integer FROM done WHERE done.sync"

	// begin starts the work's transaction of ClaimWork and BeginWork. READ
	// COMMITTED whatever the session's default: ClaimWork reads the
	// record in the statement after the one that took the lock, and needs
	// that statement's snapshot to be taken after the lock was granted (a
	// REPEATABLE READ transaction would read from the snapshot of its
	// first statement); under a lease, renewals update the key's row while
	// the work runs, which would fail a stricter transaction's fenced
	// commit. READ WRITE, because the stored response is written in it.
	q.begin = "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE"

	// lock: $1 scope, $2 key. Takes the key's transaction-scoped advisory
	// lock if no other transaction holds it, without waiting, and reports
	// whether it did. The lock's 64-bit key is the start of a SHA-256 of
	// an unambiguous encoding of (table, scope, key) (the table's OID, a
	// colon, the scope's length in bytes, a colon, the scope, the key), so
	// that two tables' keys, and spellings of one table with and without
	// its schema, are told apart and alike, and so that a client cannot
	// choose two keys whose locks collide (a non-cryptographic hash would
	// let it make another tenant's key wait). Two different keys that hash
	// alike only make one of them wait (409) while the other runs; they
	// never run as one. Versions of pgstore before this one hashed with
	// hashtextextended: during a rolling upgrade an old and a new process
	// take different locks for one key, and both may run it (the
	// primary key still refuses the second record, whose work then rolls
	// back with server.ErrLeaseLost), so do not run them side by side on
	// one table with requests in flight.
	// The statement also sets, for this transaction only, the TCP
	// settings that bound how long a vanished worker keeps the lock
	// (Options.Takeover) and the work's idle timeout
	// (Options.IdleInTransaction), as one text column.
	idle := idleSettings(opts.IdleInTransaction)
	//
	// The lock's key is computed in Go (see lockKeyOf), from the table's
	// OID as the Store last saw it ($2), and the statement takes the lock
	// ($1) only if that is still the table's OID: otherwise it takes
	// nothing, returns NULL and the OID it found, and ClaimWork computes
	// the key again and sends the statement again in the same
	// transaction. The value is the one lockKey computes in SQL, which
	// the claim and takeover statements still use: processes of either
	// kind take the same lock for one key.
	q.lock = `SELECT CASE WHEN '{{table}}'::regclass::oid = $2::oid THEN pg_try_advisory_xact_lock($1) END,
       '{{table}}'::regclass::oid, ` + settingsColumn(append(takeoverSettings(opts.Takeover), idle...))
	// lockInSQL is the lock statement with its key computed in SQL, for a
	// scope or key that is not ASCII in a database whose encoding is not
	// UTF-8: lockKey hashes the text converted to UTF-8 but counts the
	// scope's bytes in the server's encoding, which Go cannot know.
	q.lockInSQL = `SELECT pg_try_advisory_xact_lock(` + lockKey + `), '{{table}}'::regclass::oid, ` + settingsColumn(append(takeoverSettings(opts.Takeover), idle...))
	if len(idle) > 0 {
		q.workSettings = `SELECT ` + settingsColumn(idle)
	}

	// lockClaim: $1 the lock's key, $2 the table's OID as last seen.
	// The pipelined claim's lock statement: lock's, with the lock's
	// outcome kept for the transaction (idem.claim, true or false, false
	// when the table's OID is not $2), for the guard to read.
	q.lockClaim = `SELECT set_config('idem.claim',
           coalesce(CASE WHEN '{{table}}'::regclass::oid = $2::oid THEN pg_try_advisory_xact_lock($1) END, false)::text, true),
       '{{table}}'::regclass::oid, ` + settingsColumn(append(takeoverSettings(opts.Takeover), idle...))
	// guard: $1 scope, $2 key, $3 fingerprint. The pipelined claim's
	// last statement, after lockClaim and lookup (which report what the
	// key holds and raise nothing): it raises claimRefused unless
	// lockClaim took the key's lock and the key's row, if any, may be
	// replaced (a completed record past its retention, or a lapsed lease
	// with this fingerprint). It reads the row in a statement after the
	// lock's, for lookup's reason. It comes last so that the claim's one
	// failure is in a statement whose results pgx reads without rows (see
	// sendClaim), and so that a refused claim knows what to answer
	// without a second round trip.
	q.guard = `SELECT 1 / (current_setting('idem.claim') = 'true' AND NOT EXISTS (
    SELECT FROM {{table}}
    WHERE scope = $1 AND key = $2
      AND NOT (expires_at < statement_timestamp() AND (state = 'completed' OR fingerprint = $3))
))::integer`

	// lookup: $1 scope, $2 key. The key's record, if any, read by the
	// statement after lock: under READ COMMITTED each statement takes its
	// own snapshot when it starts, and this one starts after the lock was
	// granted, so it sees everything the lock's previous holder committed
	// (PostgreSQL makes a commit visible before it releases the
	// transaction's locks). Read in the same statement as the lock, the
	// record committed by a holder that released the lock while the
	// statement ran would be missed, and the key run again.
	q.lookup = `SELECT fingerprint, token, state = 'completed', coalesce(status, 0), header, body, expires_at,
       expires_at < statement_timestamp()
FROM {{table}}
WHERE scope = $1 AND key = $2`

	// insert: $1 scope, $2 key, $3 fingerprint, $4 new token, $5 status,
	// $6 header, $7 body, $8 retention. The work's outcome when lookup
	// found no row, the common case: written as the last statement of its
	// transaction and pipelined with COMMIT. The primary key is the last
	// line of defence: if a row of the key appeared since the lookup (a
	// claim through Store.Claim, which takes no lock), the insert fails
	// with a unique violation (uniqueViolation), which aborts the
	// transaction: PostgreSQL skips the pipelined COMMIT, and the work
	// rolls back instead of running the key twice. A plain INSERT: about
	// a tenth less of the database's CPU per new key than record's
	// ON CONFLICT, which it needs only to replace a row. Its RETURNING
	// raises synchronous_commit to on for the COMMIT after it ({{sync}}).
	q.insert = `INSERT INTO {{table}} (scope, key, fingerprint, token, state, status, header, body, claimed_at, expires_at)
VALUES ($1, $2, $3, $4, 'completed', $5, $6, $7, transaction_timestamp(),
        statement_timestamp() + $8::bigint * interval '1 microsecond')
RETURNING {{sync}}`

	// record: $1 scope, $2 key, $3 fingerprint, $4 new token, $5 status,
	// $6 header, $7 body, $8 retention, $9 the token of the row lookup
	// found replaceable. The work's outcome when it replaces that row (a
	// completed record past its retention, or a lapsed lease with the
	// same fingerprint), written as insert is. If the row changed since
	// the lookup (the completion of the lapsed lease that was being taken
	// over), nothing is written and the fence fails, so that this
	// transaction rolls back instead of overwriting an outcome that
	// committed.
	q.record = `WITH done AS (
    INSERT INTO {{table}} AS t (scope, key, fingerprint, token, state, status, header, body, claimed_at, expires_at)
    VALUES ($1, $2, $3, $4, 'completed', $5, $6, $7, transaction_timestamp(),
            statement_timestamp() + $8::bigint * interval '1 microsecond')
    ON CONFLICT (scope, key) DO UPDATE
    SET fingerprint = excluded.fingerprint, token = excluded.token, state = 'completed',
        status = excluded.status, header = excluded.header, body = excluded.body,
        claimed_at = excluded.claimed_at, expires_at = excluded.expires_at
    WHERE t.token = $9 AND t.expires_at < statement_timestamp()
      AND (t.state = 'completed' OR t.fingerprint = $3)
    RETURNING {{sync}} AS sync
)
SELECT 1 / count(*)::integer FROM done WHERE done.sync`

	q.schema = r.Replace(q.schema)
	q.claim = r.Replace(q.claim)
	q.takeover = r.Replace(q.takeover)
	q.renew = r.Replace(q.renew)
	q.complete = r.Replace(q.complete)
	q.commit = r.Replace(q.commit)
	q.release = r.Replace(q.release)
	q.purge = r.Replace(q.purge)
	q.lock = r.Replace(q.lock)
	q.lockInSQL = r.Replace(q.lockInSQL)
	q.lookup = r.Replace(q.lookup)
	q.stats, q.running = statsQueries(t.quoted)
	q.insert = r.Replace(q.insert)
	q.record = r.Replace(q.record)
	q.lockClaim = r.Replace(q.lockClaim)
	q.guard = r.Replace(q.guard)
	return q
}

// completeSQL is the fenced completion of a running claim, shared by the
// complete and commit statements, which add their RETURNING lists.
const completeSQL = `UPDATE {{table}}
SET state = 'completed', status = $4, header = $5, body = $6,
    expires_at = statement_timestamp() + $7::bigint * interval '1 microsecond'
WHERE scope = $1 AND key = $2 AND token = $3 AND state = 'running'`

// settingsColumn returns a text column that applies the set_config calls
// of settings, or an empty text for none. Each call is transaction-local
// (is_local true): nothing outlives the transaction, so no setting leaks
// into the connection's next user, and none is lost behind a connection
// pooler in transaction mode, which may serve the session's next
// transaction from another server connection.
func settingsColumn(settings []string) string {
	if len(settings) == 0 {
		return `''::text`
	}
	return "concat_ws(',',\n    " + strings.Join(settings, ",\n    ") + ")"
}

// idleSettings returns the set_config call that sets the work's
// idle_in_transaction_session_timeout (Options.IdleInTransaction: 0 turns
// it off), or none when the session's setting stands.
func idleSettings(d time.Duration) []string {
	if d < 0 {
		return nil
	}
	ms := int64(0)
	if d > 0 {
		ms = max(d.Milliseconds(), 1)
	}
	return []string{`set_config('idle_in_transaction_session_timeout', '` + strconv.FormatInt(ms, 10) + `', true)`}
}
