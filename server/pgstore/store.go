package pgstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem/server"
)

var (
	_ server.Store       = (*Store)(nil)
	_ server.Transactor  = (*Store)(nil)
	_ server.WorkClaimer = (*Store)(nil)
	_ server.SystemNamer = (*Store)(nil)
)

// claimAttempts bounds how often Claim re-runs its statement when a
// concurrent claim or takeover of the same key changed the row under it.
// Each re-run sees everything committed before it, so two are almost always
// enough.
const claimAttempts = 8

// Store is a [server.Store] on PostgreSQL. It is safe for concurrent use by
// multiple goroutines and by multiple processes sharing the table: leases
// and expiry use the database's clock, never the local one.
type Store struct {
	pool *pgxpool.Pool
	opts Options
	name tableName
	q    queries
	res  reserved
	// uses counts what Close waits for: the background rollbacks of
	// claims that acquired nothing (see endClaim) and the statements on
	// the reserved pool.
	uses uses
	// ownPool is set by Open: Close closes pool.
	ownPool bool
	// via is the pool the statements run on: pool, or one of the
	// Store's own when pool's connections go through a pooler.
	via via
	// tableOID is the table's OID as ClaimWork last saw it, 0 before:
	// the lock keys are computed from it (see lockKeyOf).
	tableOID atomic.Uint32
}

// New returns a Store keeping its records in opts.Table through pool. It
// does not touch the database; call [Store.Migrate] to create the table.
// It fails only if pool is nil or opts.Table is not a valid name. The
// caller keeps ownership of pool and closes it after the Store's last
// use; [Store.Close] closes what the Store opened itself.
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgstore: nil pool")
	}
	name, err := parseTable(opts.Table)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, opts: opts, name: name, q: buildQueries(name, opts)}
	s.uses.idle.L = &s.uses.mu
	s.via.sem = make(chan struct{}, 1)
	if poolerSafe(pool.Config().ConnConfig.DefaultQueryExecMode) {
		s.via.pool.Store(pool)
	}
	return s, nil
}

// StoreSystem returns "postgresql", OpenTelemetry's db.system.name for
// PostgreSQL, which observers give the store's calls (see
// [server.SystemNamer]).
func (*Store) StoreSystem() string { return "postgresql" }

// Claim implements [server.Store]. A new key, a replay and a repeat while
// the first request runs each cost one round trip, and only the new key
// writes. Reusing a completed record past its retention, or taking over a
// lapsed lease with the same fingerprint (TakenOver), adds a second round
// trip. A running record under a lapsed lease with another fingerprint is
// reported, never taken over. A key held by the work's transaction of a
// [Store.ClaimWork] is reported running, with an empty Fingerprint and no
// LeaseExpires when nothing is stored for it yet: that request's
// fingerprint is not known until it commits. A cancelled ctx returns its
// error wrapped.
func (s *Store) Claim(ctx context.Context, k server.Key, fingerprint string, lease time.Duration) (server.Claim, error) {
	pool, err := s.conns(ctx)
	if err != nil {
		return server.Claim{}, err
	}
	token := rand.Text()
	for range claimAttempts {
		var (
			acquired, found, completed, takeover, free bool
			oldFingerprint, oldToken                   string
			status                                     int32
			header, body                               []byte
			expiresAt                                  time.Time
		)
		err := pool.QueryRow(ctx, s.q.claim, k.Scope, k.Key, fingerprint, token, lease.Microseconds()).Scan(
			&acquired, &found, &oldFingerprint, &oldToken, &completed, &status, &header, &body, &expiresAt, &takeover, &free)
		switch {
		case errors.Is(err, pgx.ErrNoRows), serializationFailure(err):
			// A concurrent claim committed after our snapshot (a session
			// at REPEATABLE READ or SERIALIZABLE reports it as a
			// serialization failure): look again, with a new snapshot.
			continue
		case err != nil:
			return server.Claim{}, translate(ctx, "claim", err)
		case acquired:
			return server.Claim{Acquired: true, Token: token}, nil
		case !found:
			// The work's transaction of a ClaimWork holds the key, and
			// nothing is stored yet: running, for a request whose
			// fingerprint is not known until it commits.
			return server.Claim{}, nil
		case takeover && !free:
			// A ClaimWork is running the key again: its retention was over,
			// or it took the lapsed lease over for the same request.
			rec := server.Record{}
			if !completed {
				rec = server.Record{Fingerprint: oldFingerprint, LeaseExpires: expiresAt, ExpiresAt: expiresAt}
			}
			return server.Claim{Record: rec}, nil
		case takeover:
			ok, err := s.takeover(ctx, pool, k, fingerprint, token, oldToken, lease)
			if err != nil {
				return server.Claim{}, err
			}
			if ok {
				// A completed record past its retention is forgotten, not
				// taken from anyone; a running one had a lapsed lease.
				return server.Claim{Acquired: true, Token: token, TakenOver: !completed}, nil
			}
			continue // someone else renewed, completed or took it first, or a ClaimWork holds it
		}
		rec := server.Record{Fingerprint: oldFingerprint, Completed: completed, ExpiresAt: expiresAt}
		if completed {
			rec.Response = server.StoredResponse{Status: int(status), Body: body}
			if rec.Response.Header, err = decodeHeader(header); err != nil {
				return server.Claim{}, fmt.Errorf("pgstore: claim: stored header: %v", err)
			}
		} else {
			rec.LeaseExpires = expiresAt
		}
		return server.Claim{Record: rec}, nil
	}
	return server.Claim{}, errors.New("pgstore: claim: key kept changing under concurrent claims")
}

// takeover re-claims a key whose record claim found expired, fenced by the
// token claim saw. It reports false if the row changed meanwhile.
func (s *Store) takeover(ctx context.Context, pool *pgxpool.Pool, k server.Key, fingerprint, token, seen string, lease time.Duration) (bool, error) {
	var async bool
	err := pool.QueryRow(ctx, s.q.takeover, k.Scope, k.Key, fingerprint, token, lease.Microseconds(), seen).Scan(&async)
	if errors.Is(err, pgx.ErrNoRows) || serializationFailure(err) {
		return false, nil
	}
	if err != nil {
		return false, translate(ctx, "claim", err)
	}
	return true, nil
}

// Renew implements [server.Store]. One round trip, committed
// asynchronously unless Options.DurableClaims.
// It runs on the reserved pool (Options.ReservedConns).
func (s *Store) Renew(ctx context.Context, k server.Key, token string, lease time.Duration) error {
	return s.fenced(ctx, "renew", s.q.renew, k.Scope, k.Key, token, lease.Microseconds())
}

// Release implements [server.Store]. One round trip, committed
// asynchronously unless Options.DurableClaims. It runs on the reserved
// pool (Options.ReservedConns).
func (s *Store) Release(ctx context.Context, k server.Key, token string) error {
	return s.fenced(ctx, "release", s.q.release, k.Scope, k.Key, token)
}

// fenced runs a statement returning one row per row it changed and maps no
// row to server.ErrLeaseLost.
func (s *Store) fenced(ctx context.Context, op, sql string, args ...any) error {
	pool, done, err := s.reserved(ctx)
	if err != nil {
		return err
	}
	defer done()
	for range serializationRetries {
		var async bool
		err = pool.QueryRow(ctx, sql, args...).Scan(&async)
		if !serializationFailure(err) {
			break
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return server.ErrLeaseLost
	}
	return translate(ctx, op, err)
}

// serializationRetries bounds how often a fenced single-statement write is
// re-run after a serialization failure.
const serializationRetries = 4

// serializationFailure reports whether err is PostgreSQL's serialization
// failure (40001). The store's statements each run as their own
// transaction at the session's default isolation; at REPEATABLE READ or
// SERIALIZABLE, a statement that finds the key's row changed since its
// snapshot fails this way, where READ COMMITTED would re-check the latest
// version. Run again, the statement takes a new snapshot.
func serializationFailure(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40001"
}

// Complete implements [server.Store]. One round trip; the commit waits
// for the server's synchronous_commit (on disk, by default). It runs on
// the reserved pool (Options.ReservedConns): the work it records is done,
// its lease no longer renewed, and it must not wait for a connection
// behind new work while that lease lapses.
func (s *Store) Complete(ctx context.Context, k server.Key, token string, resp server.StoredResponse, retention time.Duration) error {
	args := completeArgs(k, token, resp, retention)
	var (
		tag pgconn.CommandTag
		err error
	)
	pool, done, err := s.reserved(ctx)
	if err != nil {
		return err
	}
	defer done()
	for range serializationRetries {
		if tag, err = pool.Exec(ctx, s.q.complete, args...); !serializationFailure(err) {
			break
		}
	}
	if err != nil {
		return translate(ctx, "complete", err)
	}
	if tag.RowsAffected() == 0 {
		return server.ErrLeaseLost
	}
	return nil
}

// completeArgs are the parameters of the complete and commit statements.
func completeArgs(k server.Key, token string, resp server.StoredResponse, retention time.Duration) []any {
	return []any{k.Scope, k.Key, token, int32(resp.Status), encodeHeader(resp.Header), resp.Body, retention.Microseconds()}
}

// translate turns a pgx error into a pgstore error. Only context errors keep
// their identity, so that callers can tell a cancelled or timed-out request
// from a failing database; everything else is reported as text.
func translate(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("pgstore: %s: %w", op, cerr)
	}
	for _, cerr := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, cerr) {
			return fmt.Errorf("pgstore: %s: %w", op, cerr)
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case idleSessionTimeout:
			return fmt.Errorf("pgstore: %s: %v: the work's transaction sat idle longer than idle_in_transaction_session_timeout "+
				"(leave Options.IdleInTransaction at 0, or set it above the work limit)", op, err)
		case missingStatement, duplicateStatement:
			return fmt.Errorf("pgstore: %s: %v: a connection pooler in transaction mode moved a prepared statement away from its connection "+
				"(add default_query_exec_mode=cache_describe to the DSN, or use session pooling)", op, err)
		}
	}
	return fmt.Errorf("pgstore: %s: %v", op, err)
}

// SQLSTATEs translate names in its message.
const (
	// idleSessionTimeout: PostgreSQL ended a session idle in a
	// transaction for idle_in_transaction_session_timeout.
	idleSessionTimeout = "25P03"
	// missingStatement and duplicateStatement: a prepared statement that
	// the connection believes it has is missing, or one it prepares is
	// there already; behind a pooler in transaction mode, another
	// server connection's.
	missingStatement   = "26000"
	duplicateStatement = "42P05"
)
