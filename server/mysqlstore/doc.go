// Package mysqlstore is a [server.Store] on MySQL or MariaDB (InnoDB),
// through database/sql and github.com/go-sql-driver/mysql. Replays and
// repeats of a running request cost one round trip and write nothing; in
// transactional mode the handler's writes commit together with the stored
// response, or not at all.
//
// The canonical sequence:
//
//	db, err := sql.Open("mysql", "app:secret@tcp(127.0.0.1:3306)/shop")
//	if err != nil { ... }
//	defer db.Close()
//	store, err := mysqlstore.New(db, mysqlstore.Options{Transactional: true})
//	if err != nil { ... }
//	defer store.Close()
//	if err := store.Migrate(ctx); err != nil { ... }
//	if err := store.Check(ctx); err != nil { log.Print(err) } // and read store.Findings
//	mux.Handle("POST /charges", server.Middleware(store, server.Options{Scope: tenantOf})(charge))
//
// and in the handler (a [DBTX] is what sqlc's generated queries take):
//
//	tx, _ := mysqlstore.Tx(r.Context()) // without a transaction, its statements fail with ErrNoTx
//	_, err := tx.ExecContext(r.Context(), "INSERT INTO charges ...")
//
// A Store is safe for concurrent use, and any number of processes may share
// its table: leases and expiry are computed on the database's clock
// (UTC_TIMESTAMP(6)), never on the local one.
//
// # Schema
//
// [Store.Migrate] applies the schema embedded in the package (schema.sql),
// which [Schema] returns as text for a DBA: one InnoDB table, named by
// Options.Table (default "idem_keys"), keyed by the SHA-256 of (scope, key)
// so that the primary key is 32 bytes whatever the scope's length, with an
// index on expires_at for [Store.Purge]. It creates what is missing and
// never alters what exists. Scopes, keys and fingerprints are bytes,
// compared byte for byte; a scope over 65,535 bytes or a fingerprint over
// 255 cannot be stored ([ErrTooLong]).
//
// Every statement is plain SQL text with its values written in as
// hexadecimal literals, so each costs one round trip whatever the DSN's
// interpolateParams, and nothing is prepared per connection.
//
// # Round trips
//
//	ClaimWork, replay or in flight 1   the lookup (and, for a key without a live record, GET_LOCK in the same statement)
//	ClaimWork, new key             3   that statement, the lookup again once locked, START TRANSACTION
//	Work.Commit after ClaimWork    2   INSERT of the record, COMMIT; RELEASE_LOCK follows after the answer
//	Work.Rollback after ClaimWork  2   ROLLBACK, RELEASE_LOCK
//	Claim, replay or in flight     1   the lookup; no write, no row lock
//	Claim, new key or takeover     2   the lookup, then an INSERT (or an UPDATE fenced by the token it saw)
//	Renew, Release, Complete       1
//	BeginWork (transactional)      2   SET TRANSACTION ISOLATION LEVEL READ COMMITTED, START TRANSACTION
//	Work.Commit after BeginWork    2   the fenced UPDATE, COMMIT
//	Purge                          1   per batch
//
// Through [server.Middleware] a replay therefore costs one round trip. A
// new key costs five in transactional mode around the handler's own
// statements, with one commit: the record and the handler's writes reach
// disk in one redo log flush. Under a lease it costs three and two commits
// (the claim's INSERT and the Complete), each a flush. go-sql-driver sends
// no pipelined statements, so where pgstore pipelines, this store waits.
//
// # Transactional mode
//
// With Options.Transactional the handler's writes commit together with the
// stored response, or not at all: the handler reaches the work's
// transaction through [Tx], a narrow [DBTX] (ExecContext, PrepareContext,
// QueryContext, QueryRowContext) with no Commit or Rollback to refuse. The
// middleware and server.RunOnce claim the key with [Store.ClaimWork]:
//
//   - the claim is a named lock, GET_LOCK(name, 0) on the work's own
//     connection: it never waits, and MySQL releases it when that
//     connection closes, as it rolls back the connection's transaction. A
//     worker that crashes, or whose connection is killed, frees its keys
//     at once, with nothing written: the record is inserted only at
//     commit.
//   - the lookup that follows the lock is a statement of its own: a
//     previous holder commits before it releases the lock, so a lookup
//     that starts after the lock was granted sees its record. (The first
//     statement reads the record and then tries the lock; it may miss a
//     record committed in between, which is why a claim that took the
//     lock looks again.)
//   - a free key's work runs in a transaction on that connection; its
//     Commit inserts the record as the transaction's last statement and
//     commits: one transaction, one flush. Rollback discards the writes
//     and releases the lock, which frees the key.
//   - a stored outcome is replayed without a lock or a write; a key whose
//     lock another connection holds is answered in flight (409, or the
//     middleware's wait mode). Its Fingerprint is empty: the running
//     request's body is not known until it commits, so a request with
//     another body is told 409, then 422 once the first is stored.
//   - nothing renews and nothing needs fencing: a worker that is alive
//     keeps its lock however long it runs; one that dies loses it with its
//     connection.
//   - the primary key is the last line of defence: if a record for the key
//     was stored meanwhile by a path that takes no lock, the Commit fails
//     with [server.ErrLeaseLost] and the work rolls back.
//
// Why a named lock and not a row lock: a running row inserted by the
// work's transaction (or locked by SELECT ... FOR UPDATE) would hold the
// claim as well, and vanish with a crashed connection as well, but every
// other statement that meets a row lock waits for it, up to
// innodb_lock_wait_timeout (50 s by default, at least 1 s on MySQL): a
// repeat of a running key, a concurrent claim of a new one, and the lease
// owner's own Renew and Complete would stall behind the work instead of
// being answered. MySQL's NOWAIT covers only SELECT. GET_LOCK with a zero
// timeout answers at once, and the record's row stays unlocked while the
// work runs. The costs: the release is a statement of its own (sent after
// the answer, on the commit path), and Galera refuses named locks (see
// Replication).
//
// [Store.Claim] of a transactional Store tests the key's lock too
// (IS_FREE_LOCK, inside the statement that writes), so a key that
// ClaimWork holds is reported running to it; lease claims never take the
// lock and never wait on each other. A Store that is not transactional
// uses no lock function at all: do not share one table between Stores of
// both modes while requests are in flight, or a lease claim may run a key
// that a ClaimWork holds (the primary key then rolls the second record's
// work back, but effects outside the database happen twice).
//
// The lock's name is "idem:" and 58 hex digits of the SHA-256 of the
// table's database, the table and the key's id: named locks are one
// namespace per server, shared by every database on it. Two keys whose
// names collide only make one wait (409) while the other runs; they are
// never taken for one another, since each keeps its own record.
//
// Each running request holds one pool connection for its transaction, and
// a request waits for a connection before it holds its key; size the pool
// (SetMaxOpenConns) for the handlers that run at once.
//
// [Store.BeginWork] begins the same kind of transaction under a lease
// claimed by Claim, for a caller that claims that way: the work's Commit
// runs the completion fenced by the lease token and commits; if the lease
// was lost meanwhile, the completion changes nothing, the transaction
// rolls back, and Commit returns server.ErrLeaseLost, so a late worker's
// writes vanish.
//
// The transaction belongs to idem. Statements that would end it (COMMIT,
// ROLLBACK, START TRANSACTION...) fail with [ErrTxControl]; savepoints are
// fine; DDL, which commits implicitly, must not run in it. A statement
// error leaves the transaction open in MySQL (only that statement is
// undone, or, for a deadlock, the whole transaction): a handler that
// meets a deadlock (1213) fails the request, which rolls back and
// releases the key for the client's retry.
//
// # Takeover
//
// A worker holds its keys through its connections. When its process dies,
// its operating system closes them, MySQL rolls back their transactions
// and releases their locks, and a retry takes each key at once. When its
// machine vanishes without closing them (a power cut, a partition), MySQL
// notices only when a read on the connection fails: wait_timeout (default
// 8 hours) after the connection's last statement, or sooner through TCP
// keepalives (MySQL turns SO_KEEPALIVE on, with the kernel's timings, two
// hours by default on Linux). That is the takeover time of such a key;
// a retry meanwhile is answered 409. Set wait_timeout for the store's
// connections (go-sql-driver passes it from the DSN: ?wait_timeout=120)
// above the longest handler, which it also bounds, and lower the kernel's
// keepalive timings on the database server if that is too long.
//
// # Isolation
//
// The store's lookups run as statements of their own (autocommit), which
// InnoDB serves as consistent, non-locking reads of the latest committed
// versions at READ COMMITTED, REPEATABLE READ and SERIALIZABLE alike. Its
// writes are single statements, or the last statements of the work's
// transaction, and InnoDB's UPDATE and DELETE read the latest version of
// the row they lock whatever the level, so the fences hold at every level
// but one:
//
//   - READ UNCOMMITTED: a lookup can read a record inserted by a work's
//     transaction that has not committed, and replay it; if that
//     transaction then rolls back, the client was told of work that never
//     happened. [Store.Findings] reports it as Critical.
//   - READ COMMITTED, REPEATABLE READ (the default), SERIALIZABLE: the
//     guarantee holds. The work's transaction under ClaimWork runs at the
//     session's level, the handler's choice (under SERIALIZABLE its plain
//     reads lock, as InnoDB does); under BeginWork it is READ COMMITTED,
//     because renewals change the key's row while the work runs and
//     MariaDB's innodb_snapshot_isolation (on by default from 11.6) would
//     fail a REPEATABLE READ transaction's fenced completion of it.
//
// A single-statement write that InnoDB ends for a deadlock, or (under
// innodb_snapshot_isolation) for a row changed since its snapshot, is run
// again, at most four times.
//
// # Durability
//
// Every write of the store commits durably exactly as far as the server
// makes commits durable; the store sets nothing. What each setting does to
// the guarantee:
//
//   - innodb_flush_log_at_trx_commit = 1 (the default; MariaDB's 3 too):
//     a commit is on disk when it is acknowledged. A crash of mysqld or of
//     the machine loses no record. 2: the redo log is written at commit
//     and flushed about once a second: a crash of mysqld loses nothing,
//     a crash of the machine up to a second of commits. 0: both can lose
//     up to a second.
//   - sync_binlog, with the binary log on: 1 syncs the binary log at every
//     (group) commit. Otherwise a crash of the machine can lose commits
//     from the binary log, which replicas then never receive; MariaDB,
//     which with innodb_flush_log_at_trx_commit = 1 and the binary log on
//     relies on the binary log to recover InnoDB's commits, can lose them
//     on the server itself.
//
// What a lost record costs depends on the mode. Under a lease the work
// ran outside the database: its key runs again when the client re-sends
// it, a duplicate effect. In transactional mode the record and the work's
// writes are one commit, lost together: nothing runs twice inside the
// database, but the client holds an answer for writes the database no
// longer has (and, if its answer was lost too, its retry runs the work
// again, correctly). Neither loss happens with both settings at 1 on disks
// that honour fsync.
//
// # Replication
//
//   - Asynchronous replicas (the default): a record the primary
//     acknowledged may not have reached a replica when the primary fails;
//     a failover to that replica forgets it, as the durability settings
//     above would. Semi-synchronous replication (rpl_semi_sync_*_enabled,
//     AFTER_SYNC) waits for a replica to have each commit before it is
//     acknowledged, which closes that window while a replica answers.
//     Send idem's traffic to the primary only: a replica's lookup may lag
//     and miss a record.
//   - Group replication, single-primary: writes go to the primary, and a
//     new primary applies what the group certified before it serves
//     (group_replication_consistency BEFORE_ON_PRIMARY_FAILOVER, the
//     default): records hold across a failover. Multi-primary: named
//     locks are each member's own, so transactional mode can run one key
//     on two members at once; the second commit fails certification and
//     its work rolls back, but effects outside the database happen twice
//     ([ErrGroupReplication]).
//   - Galera (MariaDB Galera Cluster, Percona XtraDB Cluster): writes on
//     different nodes meet only at certification, where the later commit
//     fails; a record is replicated to every node before its commit
//     returns. MariaDB refuses GET_LOCK and RELEASE_LOCK on a node with
//     wsrep_on, and Galera supports no named locks, so transactional mode
//     does not work there: ClaimWork answers errors.ErrUnsupported, and
//     its lease claims, which test the lock, are not supported either. Run the
//     store with Options.Transactional false on Galera; lease claims that
//     race on two nodes are settled by certification (the loser's INSERT
//     fails and is looked up again), and wsrep_sync_wait = 1 makes a
//     node's lookups wait until it has applied what the cluster committed.
//
// # Check
//
// [Store.Findings] reads the settings above from the server (SHOW GLOBAL
// VARIABLES, SHOW SESSION VARIABLES, the table's engine) and returns a
// [Finding] for each that voids part of the promise, with its [Severity]
// and a sentinel to match with errors.Is: [ErrNotInnoDB], [ErrIsolation],
// [ErrLogFlush], [ErrBinlogSync], [ErrBinlogFormat], [ErrGalera],
// [ErrGroupReplication], [ErrUnverified]. [Store.Check] returns the
// Critical ones as an error. What no setting shows (whether replicas are
// semi-synchronous and answer, whether the disks honour fsync) it cannot
// tell.
//
// # Purge
//
// Records stay in the table after they expire; [Store.Purge] deletes them
// in bounded batches along the expires_at index. Run it periodically, for
// example every few minutes from one goroutine per process. Claims do not
// depend on it.
//
// # Errors
//
// Renew, Complete, Release and Work.Commit return [server.ErrLeaseLost]
// when the key is no longer held under the token (after ClaimWork: when a
// record of the key was stored by a path that takes no lock). ClaimWork
// without Options.Transactional, or on a server that refuses named locks,
// returns an error wrapping errors.ErrUnsupported. An outcome over
// Options.MaxResponse is refused with [server.ErrResponseTooLarge]. A
// cancelled or expired context is returned wrapped (errors.Is with
// context.Canceled or context.DeadlineExceeded). Every other failure is a
// mysqlstore error that carries the database's message as text; no driver
// type is part of the error's identity.
package mysqlstore
