package mysqlstore

// This file holds the SQL text of every statement a Store sends.
//
// Values never travel as placeholders: every statement is plain text with
// its values written in, byte strings as hexadecimal literals (X'...') and
// numbers in decimal, so that each statement is one COM_QUERY, one round
// trip, whatever the DSN's interpolateParams, with nothing prepared per
// connection and nothing to escape (a hex literal holds only hex digits).
//
// Times are the database's clock, UTC_TIMESTAMP(6): fixed for the
// statement, independent of the session's time_zone, and shared by every
// process using the table. Durations are whole microseconds.

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// keyID is the primary key of (scope, key): the SHA-256 of the scope's
// length in bytes in decimal, a colon, the scope and the key. The length
// makes the encoding unambiguous: ("a", "bc") and ("ab", "c") differ.
func keyID(scope, key string) [32]byte {
	h := sha256.New()
	h.Write(strconv.AppendInt(nil, int64(len(scope)), 10))
	h.Write([]byte{':'})
	h.Write([]byte(scope))
	h.Write([]byte(key))
	var id [32]byte
	h.Sum(id[:0])
	return id
}

// sqlText builds one statement.
type sqlText struct{ b []byte }

func (q *sqlText) s(s string) *sqlText { q.b = append(q.b, s...); return q }

// x writes p as a hexadecimal literal; a nil p as NULL.
func (q *sqlText) x(p []byte) *sqlText {
	if p == nil {
		return q.s("NULL")
	}
	q.b = append(q.b, "X'"...)
	q.b = hex.AppendEncode(q.b, p)
	q.b = append(q.b, '\'')
	return q
}

// xs writes s as a hexadecimal literal (the empty string too).
func (q *sqlText) xs(s string) *sqlText {
	q.b = append(q.b, "X'"...)
	q.b = hex.AppendEncode(q.b, []byte(s))
	q.b = append(q.b, '\'')
	return q
}

func (q *sqlText) n(v int64) *sqlText { q.b = strconv.AppendInt(q.b, v, 10); return q }

// later writes the time d from now on the database's clock.
func (q *sqlText) later(d time.Duration) *sqlText {
	return q.s("UTC_TIMESTAMP(6) + INTERVAL ").n(max(d.Microseconds(), 0)).s(" MICROSECOND")
}

func (q *sqlText) String() string { return string(q.b) }

// queries holds the parts of every statement that depend only on the
// table, built once by New.
type queries struct {
	table string // quoted
	// lockPrefix and lockSuffix surround the hex of a key's id in the SQL
	// expression of its named lock (see lockName).
	lockPrefix, lockSuffix string
	// transactional: the lease statements test the key's named lock.
	transactional bool
}

func newQueries(t tableName, transactional bool) queries {
	// lockName: 'idem:' and the first 58 hex digits (232 bits) of the
	// SHA-256 of the hex of the table's database, ':', the table, ':', and
	// the hex of the key's id: 63 characters, under the 64 that MySQL and
	// MariaDB allow. Named locks are one namespace for the whole server,
	// so the database and table are part of the name: two databases on one
	// server with one table name and one key never meet. All of it is
	// ASCII text, so no character set conversion applies.
	return queries{
		table:         t.quoted,
		lockPrefix:    "CONCAT('idem:', LEFT(SHA2(CONCAT(HEX(IFNULL(" + t.schema + ", '')), ':" + t.bare + ":', '",
		lockSuffix:    "'), 256), 58))",
		transactional: transactional,
	}
}

// lockName writes the SQL expression naming the lock of id.
func (q *queries) lockName(b *sqlText, id []byte) *sqlText {
	b.s(q.lockPrefix)
	b.b = hex.AppendEncode(b.b, id)
	return b.s(q.lockSuffix)
}

// free writes a boolean SQL expression, true when no unit of work holds
// the lock of id: IS_FREE_LOCK, in transactional mode, where ClaimWork
// takes such locks; TRUE otherwise, so that a Store that is not
// transactional uses no lock function (Galera refuses them).
func (q *queries) free(b *sqlText, id []byte) *sqlText {
	if !q.transactional {
		return b.s("TRUE")
	}
	b.s("IFNULL(IS_FREE_LOCK(")
	q.lockName(b, id)
	return b.s("), 0) = 1")
}

// recordColumns are the columns of a lookup, scanned by lookupRow.scan:
// whether a row was found, the record, the database's clock, and one
// column the caller adds. An absent row reads as zeros and NULLs.
const recordColumns = `t.id IS NOT NULL, t.fingerprint, t.token, IFNULL(t.state = 'completed', 0),
       IFNULL(t.status, 0), t.header, t.body,
       IFNULL(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', t.expires_at), 0),
       IFNULL(t.expires_at < UTC_TIMESTAMP(6), 0),
       TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), `

// lookup reads the record of id, if any, and the column extra. It always
// returns one row: the record is left-joined to a one-row table. It is a
// plain, non-locking read (autocommit on the connection): it waits for
// nothing and sees the latest committed version at every isolation level
// but READ UNCOMMITTED, where it could see an outcome whose transaction
// then rolls back (Findings reports that level).
func (q *queries) lookup(id []byte, extra func(*sqlText)) string {
	b := &sqlText{}
	b.s("SELECT ").s(recordColumns)
	extra(b)
	b.s("\nFROM (SELECT 1) AS one LEFT JOIN ").s(q.table).s(" AS t ON t.id = ").x(id)
	return b.String()
}

// claimLookup is the lookup of Store.Claim: the record, and whether the
// key's named lock is free.
func (q *queries) claimLookup(id []byte) string {
	return q.lookup(id, func(b *sqlText) { q.free(b, id) })
}

// workLookup is the first statement of ClaimWork: the record, and then,
// only when the record leaves the key to be claimed (none; or past its
// expiry, completed or running for this fingerprint), GET_LOCK of the
// key's name without waiting: 1 taken, 0 held by another connection, -1
// not tried. The select list is evaluated once the row has been read, so
// the lock is taken after the read: a holder that committed and released
// in between is caught by the lookup that follows the lock (see
// ClaimWork).
func (q *queries) workLookup(id []byte, fingerprint string) string {
	return q.lookup(id, func(b *sqlText) {
		b.s("CASE WHEN t.id IS NULL OR (t.expires_at < UTC_TIMESTAMP(6) AND (t.state = 'completed' OR t.fingerprint = ").
			xs(fingerprint).s("))\n    THEN IFNULL(GET_LOCK(")
		q.lockName(b, id)
		b.s(", 0), 0) ELSE -1 END")
	})
}

// plainLookup is the lookup with no extra test (its last column is 1).
func (q *queries) plainLookup(id []byte) string {
	return q.lookup(id, func(b *sqlText) { b.s("1") })
}

// release gives the key's named lock back.
func (q *queries) release(id []byte) string {
	b := &sqlText{}
	b.s("DO RELEASE_LOCK(")
	q.lockName(b, id)
	return b.s(")").String()
}

// claimInsert inserts a running record for a new key, if no unit of work
// holds the key's lock (in transactional mode). It affects no row when the
// lock is held, and fails with a duplicate key when a row appeared since
// the lookup.
func (q *queries) claimInsert(id []byte, k keyText, fingerprint, token string, lease time.Duration) string {
	b := &sqlText{}
	b.s("INSERT INTO ").s(q.table).s(" (id, scope, idem_key, fingerprint, token, state, claimed_at, expires_at)\nSELECT ").
		x(id).s(", ").xs(k.scope).s(", ").xs(k.key).s(", ").xs(fingerprint).s(", ").xs(token).
		s(", 'running', UTC_TIMESTAMP(6), ").later(lease).s("\nFROM DUAL WHERE ")
	return q.free(b, id).String()
}

// claimTakeover re-claims a key whose record the lookup found past its
// expiry (completed, or running for this fingerprint), fenced by the token
// the lookup saw and by the takeover condition, both re-checked on the
// latest row version under its row lock: of two concurrent takeovers one
// wins, and a row completed or renewed meanwhile is left alone. In
// transactional mode the key's named lock must be free too, so that a key
// ClaimWork began to run again since the lookup is left alone.
func (q *queries) claimTakeover(id []byte, fingerprint, token, seen string, lease time.Duration) string {
	b := &sqlText{}
	b.s("UPDATE ").s(q.table).s("\nSET fingerprint = ").xs(fingerprint).s(", token = ").xs(token).
		s(", state = 'running', status = NULL, header = NULL, body = NULL,\n    claimed_at = UTC_TIMESTAMP(6), expires_at = ").later(lease).
		s(", version = version + 1\nWHERE id = ").x(id).s(" AND token = ").xs(seen).
		s(" AND expires_at < UTC_TIMESTAMP(6) AND (state = 'completed' OR fingerprint = ").xs(fingerprint).s(") AND ")
	return q.free(b, id).String()
}

// renew extends a running lease held under token.
func (q *queries) renew(id []byte, token string, lease time.Duration) string {
	b := &sqlText{}
	return b.s("UPDATE ").s(q.table).s(" SET expires_at = ").later(lease).s(", version = version + 1\nWHERE id = ").x(id).
		s(" AND token = ").xs(token).s(" AND state = 'running'").String()
}

// complete stores an outcome for a running claim held under token.
func (q *queries) complete(id []byte, token string, status int, header, body []byte, retention time.Duration) string {
	b := &sqlText{}
	if body == nil {
		body = []byte{}
	}
	return b.s("UPDATE ").s(q.table).s(" SET state = 'completed', status = ").n(int64(status)).
		s(", header = ").x(header).s(", body = ").x(body).s(",\n    expires_at = ").later(retention).
		s(", version = version + 1\nWHERE id = ").x(id).s(" AND token = ").xs(token).s(" AND state = 'running'").String()
}

// releaseClaim forgets a running claim held under token.
func (q *queries) releaseClaim(id []byte, token string) string {
	b := &sqlText{}
	return b.s("DELETE FROM ").s(q.table).s(" WHERE id = ").x(id).s(" AND token = ").xs(token).s(" AND state = 'running'").String()
}

// insertCompleted is the record of a key ClaimWork claimed, the last
// statement of the work's transaction before COMMIT. The primary key is
// the last line of defence: if a row of the key appeared since the
// lookup (a claim through Store.Claim, which takes no named lock), the
// insert fails with a duplicate key and the work rolls back. claimedAt is
// when ClaimWork read the key, on the database's clock, in microseconds.
func (q *queries) insertCompleted(id []byte, k keyText, fingerprint, token string, status int, header, body []byte, claimedAt int64, retention time.Duration) string {
	b := &sqlText{}
	if body == nil {
		body = []byte{}
	}
	return b.s("INSERT INTO ").s(q.table).s(" (id, scope, idem_key, fingerprint, token, state, status, header, body, claimed_at, expires_at)\nVALUES (").
		x(id).s(", ").xs(k.scope).s(", ").xs(k.key).s(", ").xs(fingerprint).s(", ").xs(token).s(", 'completed', ").
		n(int64(status)).s(", ").x(header).s(", ").x(body).s(", TIMESTAMP'1970-01-01 00:00:00' + INTERVAL ").n(claimedAt).
		s(" MICROSECOND, ").later(retention).s(")").String()
}

// clearSeen deletes the row ClaimWork found replaceable (a completed
// record past its retention, or a lapsed lease with this fingerprint)
// before insertCompleted writes the new one, if the row is still as it
// was: same token, still expired. If it changed (the lapsed lease's owner
// completed after all), nothing is deleted, the insert then meets the row,
// and the work rolls back instead of overwriting an outcome that
// committed. If Purge deleted the row meanwhile, the insert simply writes.
func (q *queries) clearSeen(id []byte, fingerprint, seen string) string {
	b := &sqlText{}
	return b.s("DELETE FROM ").s(q.table).s(" WHERE id = ").x(id).s(" AND token = ").xs(seen).
		s(" AND expires_at < UTC_TIMESTAMP(6) AND (state = 'completed' OR fingerprint = ").xs(fingerprint).s(")").String()
}

// purge deletes at most batch rows past their expiry, oldest first along
// the expires_at index (whose entries end with the primary key, so the
// order is total and a replica deleting by statement deletes the same
// rows): completed records, and running records whose lease lapsed more
// than abandon ago.
func (q *queries) purge(batch int, abandon time.Duration) string {
	b := &sqlText{}
	return b.s("DELETE FROM ").s(q.table).s("\nWHERE expires_at < UTC_TIMESTAMP(6)\n  AND (state = 'completed' OR expires_at < UTC_TIMESTAMP(6) - INTERVAL ").
		n(max(abandon.Microseconds(), 0)).s(" MICROSECOND)\nORDER BY expires_at, id LIMIT ").n(int64(batch)).String()
}

// keyText is a key's scope and key as stored in the scope and idem_key
// columns.
type keyText struct{ scope, key string }
