package mysqlstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// The kinds of [Finding]: each Finding wraps one, so callers branch with
// errors.Is on a Finding or on the error [Store.Check] returns.
var (
	// ErrLogFlush: innodb_flush_log_at_trx_commit is 0 or 2, so InnoDB
	// acknowledges a commit before its redo log is on disk, and a crash
	// loses up to about a second of acknowledged commits.
	ErrLogFlush = errors.New("idem/mysqlstore: innodb_flush_log_at_trx_commit lets a crash lose committed records")

	// ErrBinlogSync: the binary log is on and sync_binlog is not 1, so a
	// crash of the machine can lose commits from the binary log.
	ErrBinlogSync = errors.New("idem/mysqlstore: sync_binlog lets a crash lose committed records from the binary log")

	// ErrBinlogFormat: the binary log is on with binlog_format STATEMENT,
	// under which the store's statements that test a named lock or delete
	// with LIMIT are unsafe to replicate by statement.
	ErrBinlogFormat = errors.New("idem/mysqlstore: statement-based binary logging of the store's writes")

	// ErrIsolation: the connections' transaction isolation is READ
	// UNCOMMITTED, under which a claim can read, and replay, an outcome
	// whose transaction then rolls back.
	ErrIsolation = errors.New("idem/mysqlstore: READ UNCOMMITTED lets a claim replay an outcome that never commits")

	// ErrGalera: the server is a Galera node (wsrep_on), which refuses the
	// named locks of transactional mode and certifies writes made on
	// several nodes only at commit.
	ErrGalera = errors.New("idem/mysqlstore: a Galera node: named locks are refused and writes meet at commit")

	// ErrGroupReplication: the server is a member of a group in
	// multi-primary mode, where named locks are each member's own.
	ErrGroupReplication = errors.New("idem/mysqlstore: multi-primary group replication: named locks are per member")

	// ErrNotInnoDB: the store's table uses another engine than InnoDB, so
	// its writes are not transactional and not crash-safe.
	ErrNotInnoDB = errors.New("idem/mysqlstore: the table is not InnoDB")

	// ErrUnverified: a setting the other kinds depend on could not be read.
	ErrUnverified = errors.New("idem/mysqlstore: MySQL settings cannot be verified")
)

// Severity orders findings by what it takes for the database to lose or
// double idempotency records.
type Severity int

const (
	// Notice: a setting that costs warnings or retries, not records.
	Notice Severity = iota + 1
	// Warning: a crash, a power loss or a failover can lose acknowledged
	// records, or a key can run on two servers at once.
	Warning
	// Critical: the store's promise does not hold while the server runs
	// normally (the table is not transactional, claims can replay what
	// never committed, ClaimWork is refused), or nothing says whether it
	// does. [Store.Check] returns these.
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

// Finding is one server setting that lets the database lose or double
// idempotency records, or one that could not be read. It is an error
// wrapping its kind, Err, so errors.Is(f, ErrLogFlush) tells one kind from
// another.
//
// Setting, Risk and Fix are text for people (logs, a command's output),
// not for matching; Err and Severity are what callers branch on.
type Finding struct {
	// Err is the kind: one of the Err variables of this package above.
	Err error
	// Severity is how bad the kind is in this setting and mode.
	Severity Severity
	// Setting is what the server reported, such as
	// "innodb_flush_log_at_trx_commit 2".
	Setting string
	// Risk is what the setting costs in records and duplicate executions.
	Risk string
	// Fix names the change that removes the finding.
	Fix string
}

// Error returns "mysqlstore: Setting: Risk; fix: Fix".
func (f Finding) Error() string {
	return "mysqlstore: " + f.Setting + ": " + f.Risk + "; fix: " + f.Fix
}

// Unwrap returns f.Err.
func (f Finding) Unwrap() error { return f.Err }

// Check reports whether the store's promise holds while the server runs
// normally: it returns nil when [Store.Findings] has no [Critical]
// finding, and otherwise an error joining them (a table that is not
// InnoDB, READ UNCOMMITTED, a Galera node in transactional mode, or
// settings that could not be read). Run it at start-up and log what it
// returns; errors.Is and errors.As tell the kinds apart. Findings about
// durability and replication do not make Check fail: read them with
// Findings. A server that cannot be reached is an error too; a cancelled
// ctx returns its error.
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

// Findings reads the server's settings that decide what the store
// promises, and returns every [Finding], most severe first: the table's
// engine if it is not InnoDB, READ UNCOMMITTED on the store's connections
// (Critical); innodb_flush_log_at_trx_commit 0 or 2, the binary log on
// with sync_binlog other than 1 (Warning); a Galera node (Critical in
// transactional mode, where ClaimWork needs named locks, Notice or Warning
// otherwise, by wsrep_sync_wait); a member of a multi-primary replication
// group (Warning in transactional mode); statement-based binary logging
// (Notice); and any of these it could not read ([ErrUnverified]). None
// means InnoDB, flush at every commit, a synced binary log or none, and a
// single server (or a primary with its replicas).
//
// It reads in three statements that need no privilege but the table's:
// SHOW GLOBAL VARIABLES and SHOW SESSION VARIABLES of the settings above
// (a server without a variable, such as wsrep_on on MySQL, simply lacks
// its row), and the table's ENGINE from information_schema.TABLES (a
// table not yet created is not a finding). The session's variables are
// read on a connection of the store's pool, so a DSN that sets them is
// seen. Findings writes nothing; what it returns holds for the settings
// at the time of the call. What no setting shows is not checked: whether
// replicas, if any, are semi-synchronous, and whether the disks honour
// fsync (see the package documentation).
//
// The error is for a server that could not be asked; a cancelled ctx
// returns its error.
func (s *Store) Findings(ctx context.Context) ([]Finding, error) {
	r, err := s.read(ctx)
	if err != nil {
		return nil, translate(ctx, "check", err)
	}
	return r.assess(s.opts.Transactional), nil
}

// The settings Findings reads.
var (
	globalSettings = []string{
		"innodb_flush_log_at_trx_commit", "log_bin", "sync_binlog", "binlog_format",
		"wsrep_on", "wsrep_sync_wait", "group_replication_group_name", "group_replication_single_primary_mode",
		"version",
	}
	sessionSettings = []string{"tx_isolation", "transaction_isolation"}
)

// reading is what the server said.
type reading struct {
	global, session map[string]string
	// engine is the table's ENGINE, "" if the table does not exist.
	engine string
}

// read asks the server for the settings and the table's engine.
func (s *Store) read(ctx context.Context) (reading, error) {
	r := reading{}
	var err error
	if r.global, err = s.variables(ctx, "GLOBAL", globalSettings); err != nil {
		return r, err
	}
	if r.session, err = s.variables(ctx, "SESSION", sessionSettings); err != nil {
		return r, err
	}
	b := &sqlText{}
	b.s("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ").s(s.name.schema).
		s(" AND TABLE_NAME = '").s(s.name.bare).s("'") // both identifiers: nothing to escape
	rows, err := s.db.QueryContext(ctx, b.String())
	if err != nil {
		return r, err
	}
	defer rows.Close()
	for rows.Next() {
		var engine []byte
		if err := rows.Scan(&engine); err != nil {
			return r, err
		}
		r.engine = cmp.Or(string(engine), "(none)")
	}
	return r, rows.Err()
}

// variables runs SHOW <scope> VARIABLES for names (constants: letters and
// underscores) and returns what the server has of them.
func (s *Store) variables(ctx context.Context, scope string, names []string) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SHOW "+scope+" VARIABLES WHERE Variable_name IN ('"+strings.Join(names, "', '")+"')")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	vars := map[string]string{}
	for rows.Next() {
		var name, value []byte
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		vars[strings.ToLower(string(name))] = string(value)
	}
	return vars, rows.Err()
}

// assess turns what the server said into findings, most severe first. It
// is the whole decision, so that it can be tested on readings no real
// server need be set up for.
func (r reading) assess(transactional bool) []Finding {
	var fs []Finding
	add := func(f *Finding) {
		if f != nil {
			fs = append(fs, *f)
		}
	}
	add(r.table())
	add(r.isolation())
	add(r.flush(transactional))
	add(r.binlog())
	add(r.galera(transactional))
	add(r.group(transactional))
	slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(b.Severity, a.Severity) })
	return fs
}

// lost says what a lost record costs in each mode.
func lost(transactional bool) string {
	if transactional {
		return "the work's writes are lost with their record, after the client was answered for them"
	}
	return "a lost record's key runs its work again when re-sent (a duplicate effect outside the database)"
}

// table judges the table's engine.
func (r reading) table() *Finding {
	if r.engine == "" || strings.EqualFold(r.engine, "InnoDB") {
		return nil
	}
	return &Finding{
		Err:      ErrNotInnoDB,
		Severity: Critical,
		Setting:  "table engine " + r.engine,
		Risk:     "its writes are neither transactional nor crash-safe: a record does not commit with the work, and a crash can lose or tear records",
		Fix:      "ALTER TABLE ... ENGINE = InnoDB (Migrate creates it so)",
	}
}

// isolation judges the transaction isolation of the store's connections.
func (r reading) isolation() *Finding {
	level, ok := r.session["transaction_isolation"]
	if !ok {
		level, ok = r.session["tx_isolation"]
	}
	switch {
	case !ok:
		return &Finding{
			Err:      ErrUnverified,
			Severity: Notice,
			Setting:  "transaction isolation not reported",
			Risk:     "under READ UNCOMMITTED a claim can replay an outcome whose transaction then rolls back",
			Fix:      "confirm the connections run at READ COMMITTED or stricter",
		}
	case strings.EqualFold(level, "READ-UNCOMMITTED"):
		return &Finding{
			Err:      ErrIsolation,
			Severity: Critical,
			Setting:  "transaction isolation READ-UNCOMMITTED",
			Risk:     "a claim reads records not yet committed, and can replay the outcome of work that then rolls back: the client is told it succeeded, and it never did",
			Fix:      "run the store's connections at READ COMMITTED or REPEATABLE READ (the DSN's transaction_isolation, or the server's)",
		}
	}
	return nil
}

// flush judges innodb_flush_log_at_trx_commit.
func (r reading) flush(transactional bool) *Finding {
	v, ok := r.global["innodb_flush_log_at_trx_commit"]
	switch {
	case !ok:
		return &Finding{
			Err:      ErrUnverified,
			Severity: Critical,
			Setting:  "innodb_flush_log_at_trx_commit not reported (no InnoDB?)",
			Risk:     "nothing says whether a commit is on disk when it is acknowledged",
			Fix:      "run the table on InnoDB with innodb_flush_log_at_trx_commit = 1",
		}
	case v == "1" || v == "3": // 3: MariaDB's 1 with an extra sync at prepare
		return nil
	case v == "2":
		return &Finding{
			Err:      ErrLogFlush,
			Severity: Warning,
			Setting:  "innodb_flush_log_at_trx_commit 2",
			Risk:     "a crash of the machine (not of mysqld alone) loses up to about a second of acknowledged commits: " + lost(transactional),
			Fix:      "set innodb_flush_log_at_trx_commit = 1",
		}
	}
	return &Finding{
		Err:      ErrLogFlush,
		Severity: Warning,
		Setting:  "innodb_flush_log_at_trx_commit " + v,
		Risk:     "a crash of mysqld or of the machine loses up to about a second of acknowledged commits: " + lost(transactional),
		Fix:      "set innodb_flush_log_at_trx_commit = 1",
	}
}

// binlog judges sync_binlog and binlog_format with the binary log on.
func (r reading) binlog() *Finding {
	logBin, ok := r.global["log_bin"]
	if !ok || !on(logBin) {
		return nil
	}
	if sync := r.global["sync_binlog"]; sync != "1" {
		return &Finding{
			Err:      ErrBinlogSync,
			Severity: Warning,
			Setting:  "log_bin ON, sync_binlog " + cmp.Or(sync, "not reported"),
			Risk: "a crash of the machine can lose commits from the binary log: replicas never get those records and a failover to one forgets them " +
				"(MariaDB, which then recovers InnoDB's commits from the binary log, can lose them on the server itself), and their keys run again when re-sent",
			Fix: "set sync_binlog = 1",
		}
	}
	if strings.EqualFold(r.global["binlog_format"], "STATEMENT") {
		return &Finding{
			Err:      ErrBinlogFormat,
			Severity: Notice,
			Setting:  "log_bin ON, binlog_format STATEMENT",
			Risk:     "the store's claims (IS_FREE_LOCK) and purges (DELETE ... LIMIT) are unsafe for statement-based replication: the server warns for each, and a replica evaluates them on its own",
			Fix:      "set binlog_format = ROW (or MIXED)",
		}
	}
	return nil
}

// galera judges wsrep_on and wsrep_sync_wait.
func (r reading) galera(transactional bool) *Finding {
	if !on(r.global["wsrep_on"]) {
		return nil
	}
	if transactional {
		return &Finding{
			Err:      ErrGalera,
			Severity: Critical,
			Setting:  "wsrep_on ON (Galera)",
			Risk:     "Galera supports no named locks (MariaDB refuses GET_LOCK on a node with wsrep_on): ClaimWork answers errors.ErrUnsupported, and the lease claims of transactional mode, which test the lock, are not supported either",
			Fix:      "run the store with Options.Transactional false on Galera, or on a server that is not a Galera node",
		}
	}
	wait, _ := strconv.Atoi(r.global["wsrep_sync_wait"])
	if wait&1 != 0 {
		return nil
	}
	return &Finding{
		Err:      ErrGalera,
		Severity: Notice,
		Setting:  "wsrep_on ON (Galera), wsrep_sync_wait " + cmp.Or(r.global["wsrep_sync_wait"], "not reported"),
		Risk: "a claim on a node that has not yet applied another node's record does not see it; its write then fails certification, " +
			"and the claim fails (503) or is run again, so records hold, but such claims fail under load",
		Fix: "set wsrep_sync_wait = 1 for the store's connections, or send all of idem's traffic to one node",
	}
}

// group judges group replication's mode.
func (r reading) group(transactional bool) *Finding {
	if r.global["group_replication_group_name"] == "" || !transactional {
		return nil
	}
	if mode, ok := r.global["group_replication_single_primary_mode"]; ok && on(mode) {
		return nil
	}
	return &Finding{
		Err:      ErrGroupReplication,
		Severity: Warning,
		Setting:  "group_replication_group_name set, group_replication_single_primary_mode OFF",
		Risk: "named locks are each member's own: two members can run one key at once; the second commit fails certification and rolls back, " +
			"but whatever the work did outside the database happens twice",
		Fix: "run the group in single-primary mode, or send all of idem's traffic to one member",
	}
}

// on reports whether a variable's value means enabled.
func on(v string) bool {
	switch strings.ToUpper(v) {
	case "ON", "1", "YES", "TRUE":
		return true
	}
	return false
}
