package pgstore

// This file holds Check and Findings: the PostgreSQL settings that void
// or weaken the store's promise, read from a session of the pool.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemhq/idem/server"
)

// The kinds of [Finding]: each Finding wraps one, so callers branch with
// errors.Is on a Finding or on the error [Store.Check] returns.
var (
	// ErrStandby: the server is a hot standby (in recovery): it accepts
	// no writes, so no claim and no work can run.
	ErrStandby = errors.New("pgstore: the server is a hot standby: it accepts no writes")

	// ErrReadOnly: the sessions' default_transaction_read_only is on, so
	// the store's statements that run as transactions of their own
	// (Claim, Renew, Complete, Release, Purge) fail.
	ErrReadOnly = errors.New("pgstore: sessions are read-only by default: the store's writes fail")

	// ErrPooler: the pool's connections go through a connection pooler
	// (PgBouncer, for one) and the pool prepares statements, which a
	// pooler in transaction mode breaks: a statement prepared on one
	// server connection is missing (SQLSTATE 26000) or already there
	// (42P05) on the one the next transaction gets.
	ErrPooler = errors.New("pgstore: a connection pooler, with prepared statements")

	// ErrIdleTimeout: in transactional mode, the work's transaction has
	// an idle_in_transaction_session_timeout shorter than a handler may
	// run, so PostgreSQL ends the session of a handler that sends no
	// statement for that long, and the key's work never completes.
	ErrIdleTimeout = errors.New("pgstore: idle_in_transaction_session_timeout is shorter than the work")

	// ErrAsyncCommit: synchronous_commit is off for the sessions, so a
	// crash of the database server forgets commits it acknowledged.
	ErrAsyncCommit = errors.New("pgstore: synchronous_commit is off: a crash of the database forgets acknowledged commits")

	// ErrStatementTimeout: statement_timeout is shorter than the lease,
	// so a statement of the work that runs longer is cancelled.
	ErrStatementTimeout = errors.New("pgstore: statement_timeout is shorter than the lease")
)

// Severity orders findings by what a setting costs the store's promise.
type Severity int

const (
	// Notice: the setting would cost records or runs, and pgstore
	// handles it (it says how), or it costs only the application's own
	// statements.
	Notice Severity = iota + 1
	// Warning: a crash can lose acknowledged outcomes, or some requests
	// or operations fail.
	Warning
	// Critical: the store cannot keep its promise while it runs
	// normally: no key can run, or no key's work can complete.
	// [Store.Check] returns these.
	Critical
)

// String returns "notice", "warning" or "critical".
func (s Severity) String() string {
	switch s {
	case Notice:
		return "notice"
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	}
	return "Severity(" + strconv.Itoa(int(s)) + ")"
}

// Finding is one PostgreSQL setting that voids or weakens the store's
// promise. It is an error wrapping its kind, Err, so errors.Is(f,
// ErrAsyncCommit) tells one kind from another.
//
// Setting, Risk and Fix are text for people (logs, a command's output),
// not for matching; Err and Severity are what callers branch on.
type Finding struct {
	// Err is the kind: ErrStandby, ErrReadOnly, ErrPooler, ErrIdleTimeout,
	// ErrAsyncCommit or ErrStatementTimeout.
	Err error
	// Severity is how bad the kind is in this setting and with the
	// Store's Options.
	Severity Severity
	// Addr is the host and port the pool dials.
	Addr string
	// Setting is what the session reported and where the value comes
	// from, such as "synchronous_commit off (set by the database: ALTER
	// DATABASE ... SET)".
	Setting string
	// Risk is what the setting costs in records, runs and failed
	// requests, and what pgstore does about it.
	Risk string
	// Fix names the change that removes the finding.
	Fix string
}

// Error returns "pgstore: [Addr: ]Setting: Risk; fix: Fix".
func (f Finding) Error() string {
	var b strings.Builder
	b.WriteString("pgstore: ")
	if f.Addr != "" {
		b.WriteString(f.Addr)
		b.WriteString(": ")
	}
	b.WriteString(f.Setting)
	b.WriteString(": ")
	b.WriteString(f.Risk)
	b.WriteString("; fix: ")
	b.WriteString(f.Fix)
	return b.String()
}

// Unwrap returns f.Err.
func (f Finding) Unwrap() error { return f.Err }

// Check reports whether the store can keep its promise while PostgreSQL
// runs normally: it returns nil unless [Store.Findings] has [Critical]
// findings, and otherwise an error joining them (a hot standby; sessions
// read-only by default outside transactional mode; in transactional mode,
// an idle_in_transaction_session_timeout shorter than the work that
// Options.IdleInTransaction lets stand). Run it at start-up and log what
// it returns, and Findings' other findings; errors.Is and errors.As tell
// the kinds apart. A failure to read the settings is returned too, joined
// with nothing; a cancelled ctx returns its error wrapped.
func (s *Store) Check(ctx context.Context) error {
	findings, err := s.Findings(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range findings {
		if f.Severity == Critical {
			errs = append(errs, f)
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// Findings reads, in one round trip on a connection of the pool given to
// New, the settings a session of that pool gets (from the server's
// configuration, the database, the role, or the connection's startup
// parameters), and returns every [Finding], most severe first:
//
//   - pg_is_in_recovery() true: a hot standby ([ErrStandby], Critical).
//   - default_transaction_read_only on ([ErrReadOnly]): Critical, or
//     Warning in transactional mode, whose work's transaction is READ
//     WRITE whatever the default (Purge, and Claim, Renew, Complete and
//     Release called directly, still fail).
//   - a connection pooler, seen as a backend process ID (pg_backend_pid)
//     other than the one the connection announced, while the pool
//     prepares statements (pgx's default_query_exec_mode cache_statement
//     or describe_exec) ([ErrPooler], Warning): pgstore runs on a pool of
//     its own that does not, but the application's statements on the
//     pool fail.
//   - in transactional mode, an idle_in_transaction_session_timeout
//     shorter than the middleware's default work limit
//     (server.DefaultWorkTimeout) ([ErrIdleTimeout]): Critical when it
//     applies to the work's transaction (Options.IdleInTransaction
//     negative, or positive and that short), Notice when pgstore
//     overrides it there.
//   - synchronous_commit off ([ErrAsyncCommit]): Warning with
//     Options.InheritSynchronousCommit, Notice otherwise, since pgstore
//     raises it to on for the commits that record an outcome.
//   - statement_timeout shorter than the middleware's default lease
//     (server.DefaultLease) ([ErrStatementTimeout], Warning).
//
// default_transaction_isolation is not a finding: the work's transaction
// is READ COMMITTED whatever the default, and the store's own statements
// run again after a serialization failure. Settings a handler changes in
// its own transaction, or that a pooler applies to server connections
// only, are not seen. Findings writes nothing; what it returns holds for
// the settings at the time of the call. A cancelled ctx returns its error
// wrapped; an unreachable database is an error.
func (s *Store) Findings(ctx context.Context) ([]Finding, error) {
	r, err := s.read(ctx)
	if err != nil {
		return nil, translate(ctx, "check", err)
	}
	return r.assess(s.opts), nil
}

// settingNames are the pg_settings Findings reads.
var settingNames = []string{
	"synchronous_commit", "idle_in_transaction_session_timeout", "statement_timeout", "default_transaction_read_only",
}

// checkSQL reads settingNames with where each value comes from, and the
// server's recovery state and backend process ID, as rows of text.
var checkSQL = `SELECT name, setting, source FROM pg_settings WHERE name IN ('` + strings.Join(settingNames, "', '") + `')
UNION ALL SELECT 'pg_is_in_recovery', pg_is_in_recovery()::text, ''
UNION ALL SELECT 'pg_backend_pid', pg_backend_pid()::text, ''
UNION ALL SELECT 'current_database', current_database(), ''`

// setting is a value of pg_settings and where it comes from.
type setting struct{ value, source string }

// reading is what one session said about its settings, and what the pool
// is.
type reading struct {
	addr     string
	settings map[string]setting
	// announced is the process ID the connection announced at start-up
	// (BackendKeyData), backend pg_backend_pid().
	announced, backend uint32
	recovery           bool
	database           string
	mode               pgx.QueryExecMode
}

// read runs checkSQL on a connection of the pool given to New, through
// pgconn's simple protocol (nothing prepared, safe behind any pooler).
func (s *Store) read(ctx context.Context) (reading, error) {
	cfg := s.pool.Config().ConnConfig
	r := reading{
		addr:     net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))),
		settings: map[string]setting{},
		mode:     cfg.DefaultQueryExecMode,
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return reading{}, err
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	r.announced = pc.PID()
	res, err := pc.Exec(ctx, checkSQL).ReadAll()
	if err != nil {
		return reading{}, err
	}
	if len(res) != 1 {
		return reading{}, fmt.Errorf("%d results to one statement", len(res))
	}
	for _, row := range res[0].Rows {
		if len(row) != 3 {
			return reading{}, fmt.Errorf("a row of %d columns", len(row))
		}
		name, value, source := string(row[0]), string(row[1]), string(row[2])
		switch name {
		case "pg_is_in_recovery":
			r.recovery = value == "true"
		case "pg_backend_pid":
			pid, err := strconv.ParseUint(value, 10, 32)
			if err != nil {
				return reading{}, fmt.Errorf("pg_backend_pid() returned %q", value)
			}
			r.backend = uint32(pid)
		case "current_database":
			r.database = value
		default:
			r.settings[name] = setting{value, source}
		}
	}
	return r, nil
}

// assess turns a reading into findings, most severe first. It is the
// whole decision, so that it can be tested on readings no real server
// need be set up for.
func (r reading) assess(opts Options) []Finding {
	var fs []Finding
	for _, f := range []*Finding{r.standby(), r.readOnly(opts), r.pooler(), r.idle(opts), r.syncCommit(opts), r.statementTimeout()} {
		if f != nil {
			f.Addr = r.addr
			fs = append(fs, *f)
		}
	}
	slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(b.Severity, a.Severity) })
	return fs
}

func (r reading) standby() *Finding {
	if !r.recovery {
		return nil
	}
	return &Finding{
		Err:      ErrStandby,
		Severity: Critical,
		Setting:  "pg_is_in_recovery() true (a hot standby)",
		Risk:     "the server accepts no writes: every claim and every work fails (503) and no key runs",
		Fix:      "point the pool at the primary (with several hosts in the DSN, add target_session_attrs=read-write)",
	}
}

func (r reading) readOnly(opts Options) *Finding {
	st, ok := r.settings["default_transaction_read_only"]
	if !ok || st.value != "on" {
		return nil
	}
	f := &Finding{
		Err:      ErrReadOnly,
		Severity: Critical,
		Setting:  "default_transaction_read_only on" + r.from(st),
		Risk:     "Claim, Renew, Complete, Release and Purge run as read-only transactions and fail: every request with a key is refused (503) and no key runs",
		Fix:      "set default_transaction_read_only off for the store's sessions" + r.where(st, "default_transaction_read_only", "off"),
	}
	if opts.Transactional {
		f.Severity = Warning
		f.Risk = "the work's transaction is READ WRITE whatever the default, so the middleware's requests run; " +
			"but Purge fails (expired records are never deleted), and so do Claim, Renew, Complete and Release called directly"
	}
	return f
}

func (r reading) pooler() *Finding {
	if r.backend == r.announced || poolerSafe(r.mode) {
		return nil
	}
	return &Finding{
		Err:      ErrPooler,
		Severity: Warning,
		Setting: fmt.Sprintf("a connection pooler (the backend's process ID %d is not the %d the connection announced), default_query_exec_mode %s",
			r.backend, r.announced, execModeName(r.mode)),
		Risk: "through a pooler in transaction mode (PgBouncer's pool_mode transaction) a statement prepared on one server connection is missing " +
			"(SQLSTATE 26000) or already there (42P05) on the next transaction's: pgstore runs its statements and the work's transaction " +
			"on a pool of its own in default_query_exec_mode cache_describe, but the application's statements on this pool fail at random",
		Fix: "add default_query_exec_mode=cache_describe (or exec) to the DSN, or use session pooling",
	}
}

func (r reading) idle(opts Options) *Finding {
	if !opts.Transactional {
		return nil
	}
	st, ok := r.settings["idle_in_transaction_session_timeout"]
	if !ok {
		return nil
	}
	session := durationMS(st.value)
	effective := session
	switch {
	case opts.IdleInTransaction == 0:
		effective = 0
	case opts.IdleInTransaction > 0:
		effective = opts.IdleInTransaction
	}
	limit := server.DefaultWorkTimeout
	switch {
	case effective > 0 && effective < limit:
		where := "Options.IdleInTransaction"
		if opts.IdleInTransaction < 0 {
			where = "the session's setting, which Options.IdleInTransaction (negative) lets stand"
		}
		return &Finding{
			Err:      ErrIdleTimeout,
			Severity: Critical,
			Setting:  fmt.Sprintf("idle_in_transaction_session_timeout %v for the work's transaction (%s; session: %s%s)", effective, where, st.value+"ms", r.from(st)),
			Risk: fmt.Sprintf("a handler that sends no statement for %v loses its session: its work rolls back, its key is released, "+
				"and every retry runs the handler again and fails alike, never to complete (measured with 50 ms and a handler idle 300 ms: 0 of 3 keys completed in 9 runs)", effective),
			Fix: fmt.Sprintf("leave Options.IdleInTransaction at 0 (pgstore then turns the timeout off for the work's transaction), or set it above the work limit (server.Options.WorkTimeout, default %v)", limit),
		}
	case session > 0 && session < limit:
		how := "turns it off for the work's transaction (Options.IdleInTransaction 0)"
		if opts.IdleInTransaction > 0 {
			how = fmt.Sprintf("sets it to %v for the work's transaction (Options.IdleInTransaction)", opts.IdleInTransaction)
		}
		return &Finding{
			Err:      ErrIdleTimeout,
			Severity: Notice,
			Setting:  "idle_in_transaction_session_timeout " + st.value + "ms" + r.from(st),
			Risk:     "handled: pgstore " + how + ", so a handler that is idle longer keeps its session; the application's other transactions keep the timeout",
			Fix:      "nothing for pgstore",
		}
	}
	return nil
}

func (r reading) syncCommit(opts Options) *Finding {
	st, ok := r.settings["synchronous_commit"]
	if !ok || st.value != "off" {
		return nil
	}
	if opts.InheritSynchronousCommit {
		return &Finding{
			Err:      ErrAsyncCommit,
			Severity: Warning,
			Setting:  "synchronous_commit off" + r.from(st) + ", Options.InheritSynchronousCommit",
			Risk: "PostgreSQL answers a commit before its WAL is on disk, and pgstore records outcomes with that setting: " +
				"a crash of the database server forgets outcomes already answered, and a retry of their keys runs the work again " +
				"(measured: 2 to 17 of 400 answered outcomes gone in a crash, each key charged again when re-sent)",
			Fix: "clear Options.InheritSynchronousCommit (pgstore then raises synchronous_commit to on for the commits that record an outcome), " +
				"or set synchronous_commit on" + r.where(st, "synchronous_commit", "on"),
		}
	}
	return &Finding{
		Err:      ErrAsyncCommit,
		Severity: Notice,
		Setting:  "synchronous_commit off" + r.from(st),
		Risk: "handled: pgstore raises synchronous_commit to on for the commits that record an outcome (Complete, the work's Commit), " +
			"so no answered outcome is lost in a crash; the application's other commits stay asynchronous",
		Fix: "nothing for pgstore",
	}
}

func (r reading) statementTimeout() *Finding {
	st, ok := r.settings["statement_timeout"]
	if !ok {
		return nil
	}
	d := durationMS(st.value)
	if d <= 0 || d >= server.DefaultLease {
		return nil
	}
	return &Finding{
		Err:      ErrStatementTimeout,
		Severity: Warning,
		Setting:  "statement_timeout " + st.value + "ms" + r.from(st),
		Risk: fmt.Sprintf("a statement that runs longer than %v is cancelled: a handler's statement in the work's transaction fails, "+
			"its request with it (the key is released), and every retry fails alike; a claim that waits for a concurrent claim's row fails (503)", d),
		Fix: fmt.Sprintf("raise statement_timeout above the work's longest statement and the lease (server.Options.Lease, default %v)", server.DefaultLease) +
			r.where(st, "statement_timeout", "0") + ", and shorten single statements in the handler with SET LOCAL statement_timeout",
	}
}

// durationMS reads a pg_settings value in milliseconds.
func durationMS(v string) time.Duration {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// from says where a setting's value comes from, as " (set by ...)".
func (r reading) from(st setting) string {
	switch st.source {
	case "", "default":
		return " (PostgreSQL's default)"
	case "configuration file":
		return " (set by the server's configuration file)"
	case "command line", "environment variable":
		return " (set by the server's " + st.source + ")"
	case "database":
		return " (set by the database: ALTER DATABASE ... SET)"
	case "user":
		return " (set by the role: ALTER ROLE ... SET)"
	case "database user":
		return " (set by the role in this database: ALTER ROLE ... IN DATABASE ... SET)"
	case "client":
		return " (set by the connection's startup parameters: the DSN, or the pool's RuntimeParams)"
	}
	return " (set by " + st.source + ")"
}

// where names, as ", ...", where to change a setting to value, from its
// source.
func (r reading) where(st setting, name, value string) string {
	db := pgx.Identifier{r.database}.Sanitize()
	switch st.source {
	case "database":
		return fmt.Sprintf(" (ALTER DATABASE %s SET %s = %s)", db, name, value)
	case "user", "database user":
		return fmt.Sprintf(" (ALTER ROLE <the store's role> SET %s = %s)", name, value)
	case "client":
		return " (in the DSN or the pool's RuntimeParams)"
	case "configuration file", "command line", "environment variable":
		return fmt.Sprintf(" (ALTER SYSTEM SET %s = %s, or the server's configuration)", name, value)
	}
	return ""
}

// execModeName returns the DSN's name for mode (default_query_exec_mode).
func execModeName(mode pgx.QueryExecMode) string {
	switch mode {
	case pgx.QueryExecModeCacheStatement:
		return "cache_statement"
	case pgx.QueryExecModeCacheDescribe:
		return "cache_describe"
	case pgx.QueryExecModeDescribeExec:
		return "describe_exec"
	case pgx.QueryExecModeExec:
		return "exec"
	case pgx.QueryExecModeSimpleProtocol:
		return "simple_protocol"
	}
	return mode.String()
}
