package mysqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemhq/idem/server"
)

var (
	_ server.Store       = (*Store)(nil)
	_ server.Transactor  = (*Store)(nil)
	_ server.WorkClaimer = (*Store)(nil)
	_ server.SystemNamer = (*Store)(nil)
)

// claimAttempts bounds how often Claim looks again when a concurrent claim
// of the same key changed the row between its lookup and its write. Each
// look sees everything committed before it, so two are almost always
// enough.
const claimAttempts = 8

// conflictRetries bounds how often a single-statement write is run again
// after InnoDB ended it for a deadlock (1213) or, under MariaDB's
// innodb_snapshot_isolation, for a row changed since its snapshot (1020).
const conflictRetries = 4

// MySQL and MariaDB error numbers the store tells apart.
const (
	errDupEntry        = 1062 // ER_DUP_ENTRY
	errCheckRead       = 1020 // ER_CHECKREAD: record changed since last read
	errLockDeadlock    = 1213 // ER_LOCK_DEADLOCK (also Galera's certification failure)
	errLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT
	errNotSupportedYet = 1235 // ER_NOT_SUPPORTED_YET: GET_LOCK on a Galera node
)

// Limits of what a record's columns hold.
const (
	maxScope       = 65535 // BLOB
	maxFingerprint = 255   // VARBINARY(255)
)

// ErrTooLong is wrapped by the error Claim and ClaimWork return for a scope
// longer than 65,535 bytes or a fingerprint longer than 255 bytes, which
// the table's columns cannot hold. Nothing was claimed.
var ErrTooLong = errors.New("mysqlstore: scope or fingerprint too long to store")

// Store is a [server.Store] on MySQL or MariaDB (InnoDB), through
// database/sql and github.com/go-sql-driver/mysql. It is safe for
// concurrent use by multiple goroutines and by multiple processes sharing
// the table: leases and expiry use the database's clock, never the local
// one.
type Store struct {
	db   *sql.DB
	opts Options
	name tableName
	q    queries
	// uses counts the background lock releases Close waits for.
	uses uses
	// ownDB is set by Open: Close closes db.
	ownDB bool
}

// New returns a Store keeping its records in opts.Table through db, which
// must be a *sql.DB of github.com/go-sql-driver/mysql. It does not touch
// the database; call [Store.Migrate] to create the table. It fails only if
// db is nil or opts.Table is not a valid name (an error wrapping
// ErrTableName). The caller keeps ownership of db and closes it after the
// Store's last use; [Store.Close] waits for the Store's own background
// statements.
func New(db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("mysqlstore: nil *sql.DB")
	}
	name, err := parseTable(opts.Table)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, opts: opts, name: name, q: newQueries(name, opts.Transactional)}
	s.uses.idle.L = &s.uses.mu
	return s, nil
}

// Open connects to the database dsn names (a go-sql-driver/mysql DSN,
// "user:password@tcp(127.0.0.1:3306)/db") and returns a Store on a
// *sql.DB of its own, which [Store.Close] closes. It checks the connection
// with one round trip and fails if the database cannot be reached or opts
// is invalid; it does not create the table ([Store.Migrate] does). Errors
// never contain the DSN's password.
//
// Open is for programs that have a DSN and no *sql.DB, such as an
// operator's command line. A service whose handlers use the database too
// opens the *sql.DB itself and calls [New], so that the work's connection
// and its other queries share one pool.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if _, err := parseTable(opts.Table); err != nil {
		return nil, err
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, errors.New("mysqlstore: open: the DSN does not parse")
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: open: %v", err)
	}
	db := sql.OpenDB(conn)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, translate(ctx, "open", err)
	}
	s, _ := New(db, opts) // opts was checked above
	s.ownDB = true
	return s, nil
}

// StoreSystem returns "mysql", OpenTelemetry's db.system.name for MySQL
// (MariaDB's is "mariadb"; the store does not ask which it runs on), which
// observers give the store's calls (see [server.SystemNamer]).
func (*Store) StoreSystem() string { return "mysql" }

// Migrate creates the table with its expires_at index if it does not
// exist (the statement [Schema] returns). It is idempotent and safe to run
// from several processes at once; it never alters an existing table.
func (s *Store) Migrate(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, schemaSQLFor(s.name))
	return translate(ctx, "migrate", err)
}

func schemaSQLFor(t tableName) string {
	text, _ := Schema(t.schemaQualified())
	return text
}

// schemaQualified is the table name as given (with its qualifier).
func (t tableName) schemaQualified() string {
	if t.schemaName != "" {
		return t.schemaName + "." + t.bare
	}
	return t.bare
}

// checkKey refuses what the table cannot hold.
func checkKey(k server.Key, fingerprint string) error {
	if len(k.Scope) > maxScope || len(fingerprint) > maxFingerprint {
		return fmt.Errorf("%w: scope %d bytes (at most %d), fingerprint %d bytes (at most %d)",
			ErrTooLong, len(k.Scope), maxScope, len(fingerprint), maxFingerprint)
	}
	return nil
}

// Claim implements [server.Store]. A replay and a repeat while the first
// request runs cost one round trip and write nothing; a new key costs two
// (the lookup, then an INSERT of the running record), and a takeover of a
// lapsed lease with the same fingerprint (TakenOver), or reuse of a record
// past its retention, two (the lookup, then an UPDATE fenced by the token
// it saw). A running record under a lapsed lease with another fingerprint
// is reported, never taken over. In transactional mode, a key held by the
// work of a [Store.ClaimWork] is reported running, with an empty
// Fingerprint when nothing is stored for it yet. A cancelled ctx returns
// its error wrapped.
func (s *Store) Claim(ctx context.Context, k server.Key, fingerprint string, lease time.Duration) (server.Claim, error) {
	if err := checkKey(k, fingerprint); err != nil {
		return server.Claim{}, err
	}
	id := keyID(k.Scope, k.Key)
	token := rand.Text()
	for range claimAttempts {
		var row lookupRow
		var free bool
		if err := row.scan(s.db.QueryRowContext(ctx, s.q.claimLookup(id[:])), &free); err != nil {
			return server.Claim{}, translate(ctx, "claim", err)
		}
		switch {
		case !row.found && !free:
			// A ClaimWork holds the key and nothing is stored yet: running,
			// for a request whose fingerprint is not known until it commits.
			return server.Claim{}, nil
		case !row.found:
			res, err := s.db.ExecContext(ctx, s.q.claimInsert(id[:], keyText{k.Scope, k.Key}, fingerprint, token, lease))
			switch {
			case isCode(err, errDupEntry):
				continue // a concurrent claim inserted it first: look again
			case err != nil:
				return server.Claim{}, translate(ctx, "claim", err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				return server.Claim{Acquired: true, Token: token}, nil
			}
			continue // a ClaimWork took the key's lock since the lookup
		case row.replaceable(fingerprint) && !free:
			// A ClaimWork is running the key again: its retention was over,
			// or it took the lapsed lease over for the same request.
			if row.completed {
				return server.Claim{}, nil
			}
			rec, err := row.record()
			return server.Claim{Record: rec}, err
		case row.replaceable(fingerprint):
			n, err := s.affected(ctx, s.q.claimTakeover(id[:], fingerprint, token, row.token, lease))
			if err != nil {
				return server.Claim{}, translate(ctx, "claim", err)
			}
			if n == 1 {
				// A completed record past its retention is forgotten, not
				// taken from anyone; a running one had a lapsed lease.
				return server.Claim{Acquired: true, Token: token, TakenOver: !row.completed}, nil
			}
			continue // renewed, completed, purged or taken meanwhile
		}
		rec, err := row.record()
		return server.Claim{Record: rec}, err
	}
	return server.Claim{}, errors.New("mysqlstore: claim: key kept changing under concurrent claims")
}

// Renew implements [server.Store]. One round trip.
func (s *Store) Renew(ctx context.Context, k server.Key, token string, lease time.Duration) error {
	id := keyID(k.Scope, k.Key)
	return s.fenced(ctx, "renew", s.q.renew(id[:], token, lease))
}

// Release implements [server.Store]. One round trip.
func (s *Store) Release(ctx context.Context, k server.Key, token string) error {
	id := keyID(k.Scope, k.Key)
	return s.fenced(ctx, "release", s.q.releaseClaim(id[:], token))
}

// Complete implements [server.Store]. One round trip; its commit is as
// durable as the server's innodb_flush_log_at_trx_commit (and sync_binlog,
// with the binary log on) makes it: see the Durability section of the
// package documentation. An outcome over Options.MaxResponse is refused
// with an error wrapping [server.ErrResponseTooLarge], and the key stays
// held.
func (s *Store) Complete(ctx context.Context, k server.Key, token string, resp server.StoredResponse, retention time.Duration) error {
	header := encodeHeader(resp.Header)
	if err := s.fits(header, resp.Body); err != nil {
		return err
	}
	id := keyID(k.Scope, k.Key)
	return s.fenced(ctx, "complete", s.q.complete(id[:], token, resp.Status, header, resp.Body, retention))
}

// fits refuses an outcome over Options.MaxResponse.
func (s *Store) fits(header, body []byte) error {
	if n := len(header) + len(body); n > s.opts.maxResponse() {
		return fmt.Errorf("mysqlstore: outcome of %d bytes over Options.MaxResponse (%d): %w", n, s.opts.maxResponse(), server.ErrResponseTooLarge)
	}
	return nil
}

// fenced runs a write that changes one row when the key is held under the
// statement's token, and maps no row changed to server.ErrLeaseLost.
func (s *Store) fenced(ctx context.Context, op, query string) error {
	n, err := s.affected(ctx, query)
	if err != nil {
		return translate(ctx, op, err)
	}
	if n == 0 {
		return server.ErrLeaseLost
	}
	return nil
}

// affected runs a single-statement write on the pool and returns the rows
// it changed, running it again after a deadlock or a snapshot conflict
// (see conflictRetries). Every write the store makes increments the row's
// version, so a row that matched is a row changed, whether or not the
// DSN sets clientFoundRows.
func (s *Store) affected(ctx context.Context, query string) (int64, error) {
	var err error
	for range conflictRetries {
		var res sql.Result
		res, err = s.db.ExecContext(ctx, query)
		if err == nil {
			return res.RowsAffected()
		}
		if !isCode(err, errLockDeadlock) && !isCode(err, errCheckRead) {
			break
		}
	}
	return 0, err
}

// lookupRow is a record as a lookup reads it.
type lookupRow struct {
	found, completed, expired bool
	fingerprint, token        string
	status                    int
	header, body              []byte
	expiresAt                 int64 // microseconds since the epoch, UTC
	now                       int64 // the database's clock, likewise
}

// scan reads a lookup's row, with the extra column into extra.
func (r *lookupRow) scan(row *sql.Row, extra any) error {
	var fingerprint, token []byte
	err := row.Scan(&r.found, &fingerprint, &token, &r.completed, &r.status, &r.header, &r.body,
		&r.expiresAt, &r.expired, &r.now, extra)
	r.fingerprint, r.token = string(fingerprint), string(token)
	return err
}

// replaceable reports whether the record may be claimed afresh by a
// request with fingerprint: it is past its expiry, and completed or
// running for that very request.
func (r *lookupRow) replaceable(fingerprint string) bool {
	return r.found && r.expired && (r.completed || r.fingerprint == fingerprint)
}

// live reports whether the record stands: completed inside its retention,
// or running under a live lease, or under a lapsed one for another
// request, which is never taken over.
func (r *lookupRow) live(fingerprint string) bool {
	return r.found && !r.replaceable(fingerprint)
}

// record returns the row as a server.Record.
func (r *lookupRow) record() (server.Record, error) {
	expires := time.UnixMicro(r.expiresAt)
	rec := server.Record{Fingerprint: r.fingerprint, Completed: r.completed, ExpiresAt: expires}
	if !r.completed {
		rec.LeaseExpires = expires
		return rec, nil
	}
	h, err := decodeHeader(r.header)
	if err != nil {
		return server.Record{}, fmt.Errorf("mysqlstore: claim: stored header: %v", err)
	}
	rec.Response = server.StoredResponse{Status: r.status, Header: h, Body: r.body}
	return rec, nil
}

// isCode reports whether err is the server's error number code.
func isCode(err error, code uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == code
}

// translate turns a driver error into a mysqlstore error. Only context
// errors keep their identity, so that callers can tell a cancelled or
// timed-out request from a failing database; everything else is reported
// as text.
func translate(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("mysqlstore: %s: %w", op, cerr)
	}
	for _, cerr := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, cerr) {
			return fmt.Errorf("mysqlstore: %s: %w", op, cerr)
		}
	}
	return fmt.Errorf("mysqlstore: %s: %v", op, err)
}
