package pgstore

// This file holds what an operator reads from a Store: Stats, the counts
// of its records by state, and Running, the keys whose work is running.

import (
	"context"
	"strings"
	"time"

	"github.com/idemhq/idem/server"
)

// Stats counts a Store's records by state, as [Store.Stats] read them in
// one statement. Times come from the database's clock.
//
// Keys that [Store.ClaimWork] claimed and whose work has not committed
// yet are not counted: such a key has no record until its work commits
// (the claim is a lock of the work's transaction on a hash of the key,
// which names no key).
type Stats struct {
	// Running counts running claims under a live lease (claimed with
	// Store.Claim, their work not yet completed).
	Running int
	// Lapsed counts running claims whose lease lapsed: work that crashed
	// or hung, which a retry with the same request takes over. Purge
	// deletes them Options.Abandon after their lease lapsed.
	Lapsed int
	// Completed counts stored outcomes inside their retention: what
	// repeats are answered from.
	Completed int
	// Expired counts stored outcomes past their retention, which
	// [Store.Purge] deletes and any request may claim again.
	Expired int
	// Purgeable counts the records the next Purge would delete: the
	// expired ones and the lapsed ones past Options.Abandon.
	Purgeable int
	// Oldest and Newest are when the oldest and newest records counted
	// were claimed; OldestRunning is when the oldest running claim (live
	// or lapsed) was made. Each is zero when there is no such record.
	Oldest, Newest, OldestRunning time.Time
	// At is the database's clock when the counts were taken.
	At time.Time
}

// Stats counts the records of the given scopes by state, or of every
// scope when none is given (the scope of a single-tenant service is "").
// It is one statement, a sequential scan of the table: meant for an
// operator, not for every request. A cancelled ctx returns its error
// wrapped.
func (s *Store) Stats(ctx context.Context, scopes ...string) (Stats, error) {
	var (
		st                            Stats
		oldest, newest, oldestRunning *time.Time
	)
	pool, err := s.conns(ctx)
	if err != nil {
		return Stats{}, err
	}
	err = pool.QueryRow(ctx, s.q.stats, scopeFilter(scopes), s.abandon().Microseconds()).Scan(
		&st.Running, &st.Lapsed, &st.Completed, &st.Expired, &st.Purgeable,
		&oldest, &newest, &oldestRunning, &st.At)
	if err != nil {
		return Stats{}, translate(ctx, "stats", err)
	}
	for _, t := range []struct{ from, to *time.Time }{{oldest, &st.Oldest}, {newest, &st.Newest}, {oldestRunning, &st.OldestRunning}} {
		if t.from != nil {
			*t.to = *t.from
		}
	}
	return st, nil
}

// DefaultRunningLimit is how many keys Running lists when given a limit
// of zero or less.
const DefaultRunningLimit = 100

// RunningKey is a key whose work is running, as [Store.Running] lists it.
type RunningKey struct {
	Key server.Key
	// Since is when the running claim was made, on the database's clock.
	Since time.Time
	// LeaseExpires is when its lease lapses, or lapsed.
	LeaseExpires time.Time
	// Lapsed reports that the lease lapsed (by the database's clock) and
	// nobody completed the key: its worker crashed or hangs.
	Lapsed bool
	// HeldByLock reports that the work's transaction of a
	// [Store.ClaimWork] holds the key right now: a retry took the lapsed
	// lease over and runs the key again.
	HeldByLock bool
}

// Running lists the running claims of the given scopes, or of every
// scope when none is given, oldest first, at most limit of them
// (DefaultRunningLimit if limit <= 0): the work to look at when keys
// seem stuck. It is one statement, a sequential scan of the table and
// one read of pg_locks: meant for an operator, not for every request.
//
// Keys that [Store.ClaimWork] claimed and whose work has not committed
// yet are not listed: such a key has no record until its work commits,
// and its lock, on a hash of the key, names no key. A crashed worker's
// such key is free again as soon as its connection closes (see the
// Takeover section of the package documentation). A cancelled ctx
// returns its error wrapped.
func (s *Store) Running(ctx context.Context, limit int, scopes ...string) ([]RunningKey, error) {
	if limit <= 0 {
		limit = DefaultRunningLimit
	}
	pool, err := s.conns(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, s.q.running, scopeFilter(scopes), limit)
	if err != nil {
		return nil, translate(ctx, "running", err)
	}
	defer rows.Close()
	var keys []RunningKey
	for rows.Next() {
		var r RunningKey
		if err := rows.Scan(&r.Key.Scope, &r.Key.Key, &r.Since, &r.LeaseExpires, &r.Lapsed, &r.HeldByLock); err != nil {
			return nil, translate(ctx, "running", err)
		}
		keys = append(keys, r)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(ctx, "running", err)
	}
	return keys, nil
}

// scopeFilter is the $1 of the stats and running statements: NULL for
// every scope, else the scopes.
func scopeFilter(scopes []string) []string {
	if len(scopes) == 0 {
		return nil // NULL
	}
	return scopes
}

// statsQueries returns the statements of Stats and Running for the table.
//
// stats: $1 scopes (NULL: all), $2 Options.Abandon in microseconds. One
// pass over the table, counting by state with the purge statement's own
// conditions.
//
// running: $1 scopes (NULL: all), $2 limit. The oldest running rows, each
// with whether an exclusive advisory lock on its lock key (the hash
// ClaimWork locks, see lockKey) is granted in this database: pg_locks
// shows a bigint advisory key as its high and low halves, in classid and
// objid, with objsubid 1. The locks are read once (MATERIALIZED), not
// once per row.
func statsQueries(table string) (stats, running string) {
	stats = `SELECT
    count(*) FILTER (WHERE state = 'running' AND expires_at >= statement_timestamp()),
    count(*) FILTER (WHERE state = 'running' AND expires_at < statement_timestamp()),
    count(*) FILTER (WHERE state = 'completed' AND expires_at >= statement_timestamp()),
    count(*) FILTER (WHERE state = 'completed' AND expires_at < statement_timestamp()),
    count(*) FILTER (WHERE expires_at < statement_timestamp()
        AND (state = 'completed' OR expires_at < statement_timestamp() - $2::bigint * interval '1 microsecond')),
    min(claimed_at), max(claimed_at), min(claimed_at) FILTER (WHERE state = 'running'),
    statement_timestamp()
FROM {{table}}
WHERE $1::text[] IS NULL OR scope = ANY ($1::text[])`

	rowLock := strings.NewReplacer("$1", "t.scope", "$2", "t.key").Replace(lockKey)
	running = `WITH held AS MATERIALIZED (
    SELECT l.classid::bigint AS hi, l.objid::bigint AS lo
    FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.mode = 'ExclusiveLock' AND l.granted
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
), r AS (
    SELECT t.scope, t.key, t.claimed_at, t.expires_at, ` + rowLock + ` AS h
    FROM {{table}} t
    WHERE t.state = 'running' AND ($1::text[] IS NULL OR t.scope = ANY ($1::text[]))
    ORDER BY t.claimed_at, t.scope, t.key
    LIMIT $2
)
SELECT r.scope, r.key, r.claimed_at, r.expires_at, r.expires_at < statement_timestamp(),
       EXISTS (SELECT 1 FROM held WHERE held.hi = (r.h >> 32) & 4294967295 AND held.lo = r.h & 4294967295)
FROM r
ORDER BY r.claimed_at, r.scope, r.key`
	r := strings.NewReplacer("{{table}}", table)
	return r.Replace(stats), r.Replace(running)
}
