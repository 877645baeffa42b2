// Package pgstore is a [server.Store] on PostgreSQL, through pgx/v5's
// pgxpool. Replays and repeats of a running request cost one round trip and
// write nothing; in transactional mode the handler's writes commit together
// with the stored response, or not at all.
//
// The canonical sequence:
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	if err != nil { ... }
//	defer pool.Close()
//	store, err := pgstore.New(pool, pgstore.Options{Transactional: true})
//	if err != nil { ... }
//	defer store.Close()
//	if err := store.Migrate(ctx); err != nil { ... }
//	if err := store.Check(ctx); err != nil { ... } // settings that void the promise; see Supported settings
//	mux.Handle("POST /charges", server.Middleware(store, server.Options{Scope: tenantOf})(charge))
//
// and in the handler:
//
//	tx, _ := pgstore.Tx(r.Context()) // without a transaction, its statements fail with ErrNoTx
//	_, err := tx.Exec(r.Context(), "INSERT INTO charges ...")
//
// A Store is safe for concurrent use, and any number of processes may share
// its table: leases and expiry are computed on the database's clock
// (statement_timestamp()), never on the local one.
//
// # Schema
//
// [Store.Migrate] applies the schema embedded in the package (schema.sql):
// one table, named by Options.Table (default "idem_keys"), with primary key
// (scope, key) and an index on expires_at for [Store.Purge]. It creates
// what is missing and never alters what exists; when the table and its
// index exist it runs no DDL, so a service whose role has no CREATE
// privilege can call it. [Schema] returns the same DDL as text psql runs,
// for a database administrator who creates the table and grants the
// service's role SELECT, INSERT, UPDATE and DELETE on it. Scopes and keys are text
// compared byte for byte (COLLATE "C"); a scope that is not valid UTF-8 or
// holds a NUL byte cannot be stored, and its claims fail with an error.
//
// # Round trips
//
// Each operation is one round trip once the pool's connection has prepared
// its statements (pgx caches prepared statements per connection); where it
// sends several statements, they are pipelined:
//
//	ClaimWork, new key             1   BEGIN, the key's lock and the record lookup, pipelined
//	ClaimWork, replay or in flight 1   the same; the ROLLBACK follows after the answer
//	Work.Commit after ClaimWork    1   the record INSERT and COMMIT, pipelined
//	Claim, new key                 1   INSERT ... ON CONFLICT DO NOTHING, which also reads an existing row
//	Claim, replay or in flight     1   the same statement; no transaction ID, no WAL, no row lock
//	Claim, takeover                2   the claim, then an UPDATE fenced by the token it saw
//	Renew, Release, Complete       1
//	BeginWork (transactional)      1   BEGIN on a connection of its own
//	Work.Commit after BeginWork    1   the fenced UPDATE and COMMIT, pipelined
//	Purge                          1   per batch
//
// Through [server.Middleware] a replay therefore costs one round trip, and
// a new key two: claim and complete, or, in transactional mode, ClaimWork
// and the Work's Commit around the handler's own statements (claimed under
// a lease, it would be three: claim, BEGIN, commit). pgxpool may add a ping
// when it hands out a connection that sat idle for over a second
// (pgxpool.Config.ShouldPing). A Store's first operation costs one more
// round trip when the pool prepares statements (pgx's default): it checks
// whether a connection pooler is in between (see Connection poolers).
//
// With Options.PipelineClaim (see Pipelined claim) ClaimWork costs no
// round trip: the claim goes with the handler's first statement, and a
// new key costs two round trips in all, a refused repeat one (the claim
// with the statement), its ROLLBACK following after the answer.
//
// A claim that meets a row inserted by a transaction still in progress
// waits for it (ON CONFLICT does), then runs again, at most a few times, to
// see what that transaction left.
//
// # Isolation
//
// The store's own statements run each as its own transaction, at the
// session's default isolation. Where that is REPEATABLE READ or
// SERIALIZABLE, a statement that finds the key's row changed since its
// snapshot fails with a serialization error; the store runs it again. The
// work's transaction in transactional mode is always READ COMMITTED:
// ClaimWork reads the record in the statement after the one that took the
// lock, which must take a snapshot of its own (a REPEATABLE READ
// transaction keeps its first statement's), and under a lease, renewals
// update the key's row while the work runs, which would fail a stricter
// transaction's fenced commit. Handlers that need a stricter level for
// their own reads lock what they read (SELECT ... FOR UPDATE).
//
// # Durability
//
// Complete, and Work.Commit in transactional mode, commit with
// synchronous_commit on, whatever the server, the database, the role or
// the pool sets: the statement that records the outcome raises it for its
// own transaction (set_config with is_local true, in its RETURNING list;
// remote_apply, which waits for more, is kept), so the stored outcome is
// on disk when the response is sent. With synchronous_commit off,
// PostgreSQL acknowledges a commit whose WAL may still be in its buffers
// (up to three wal_writer_delay periods), and a crash of the server then
// forgets outcomes already answered: measured on a cluster whose database
// sets it off, SIGKILLed right after 400 answered keys
// (TestCrashForgetsNoAnsweredOutcome, 8 runs of each mode), 2 to 11
// answered outcomes were gone in lease mode and 4 to 17 in transactional
// mode, each key charged again when re-sent, against none with the commit
// raised. Options.InheritSynchronousCommit opts out, for those who
// accept that loss; [Store.Findings] reports the setting either way.
// Claim, Renew, Release and Purge commit
// asynchronously: each turns synchronous_commit off for its own
// transaction only (set_config in the statement's RETURNING list), which
// removes the WAL flush, the largest cost of a new key, from the critical
// path. No outcome depends on those commits: a later durable commit on the
// same server flushes all WAL before it, so a claim is on disk before its
// outcome is, and if the server crashes first, the lost claim recorded no
// outcome and the retry simply runs.
//
// What is traded: a crash of the database server shortly after a claim or
// renewal (within three wal_writer_delay periods, 600 ms by default) can
// forget it while the handler is still running in a process that survived.
// The surviving handler's outcome then finds no claim to complete and is
// refused (409), and a retry claims the key again and runs: the work runs
// twice. In transactional mode that is harmless: the first handler's
// transaction died with the crash. When the work is outside the database
// (a call to another service) and that window matters, set
// Options.DurableClaims: those commits then run with synchronous_commit on
// too.
//
// A key claimed with ClaimWork writes nothing before its Commit, which is
// as durable as Complete: a crash of the database server ends the work's
// transaction and its lock together, and the retry runs.
//
// # Transactional mode
//
// With Options.Transactional the handler's writes commit together with the
// stored response, or not at all: the handler reaches the work's
// transaction through [Tx]. The transaction is READ COMMITTED and
// read-write, whatever the session's defaults. The middleware and
// server.RunOnce claim the key with [Store.ClaimWork]:
//
//   - the transaction is the lease: BEGIN, a transaction-scoped advisory
//     lock on the key (pg_try_advisory_xact_lock, which never waits), and
//     then, in the next statement, the key's record, all in one round
//     trip. A statement reads from a snapshot taken when it starts, and
//     the lookup starts after the lock was granted, so it sees any record
//     the lock's previous holder committed; read in the statement that
//     takes the lock, it could miss one committed a moment before, and run
//     the key again.
//   - a free key's work runs in that transaction; its Commit inserts the
//     record as the transaction's last statement, pipelined with COMMIT:
//     one transaction, one commit, one WAL flush. Rollback discards the
//     writes, and the lock with them, which frees the key.
//   - a stored outcome is replayed without a write; a key whose lock
//     another transaction holds is answered in flight (409, or the
//     middleware's wait mode) without holding a connection: the claim's
//     own transaction, which wrote nothing, is rolled back after the
//     answer. Its Fingerprint is empty: the running request's body is not
//     known until it commits, so a request with another body is told 409,
//     then 422 once the first is stored.
//   - nothing renews and nothing needs fencing: a worker that is alive
//     keeps its lock however long it runs and cannot be overtaken; one that
//     dies loses it with its connection, and a retry takes the key at once.
//   - the primary key on (scope, key) is the last line of defence: if a
//     record for the key was stored meanwhile by a path that takes no lock
//     (a process of an earlier version), the Commit fails with
//     [server.ErrLeaseLost] and the work rolls back.
//
// [Store.Claim] tries the key's lock too, in shared mode and for its own
// statement only, so a key that ClaimWork holds is reported running to it
// as well, and lease claims never wait on each other.
//
// The lock's 64-bit key is a hash of the table (by OID) and an unambiguous
// encoding of (scope, key); advisory locks share one space per database,
// so an application that takes advisory locks of its own on 64-bit keys
// could, with negligible probability, meet one. Two keys whose hashes
// collide only make one of them wait (409) while the other runs; they are
// never taken for one another, since each keeps its own record.
//
// Each running request holds one pool connection for its transaction, and
// a request waits for a connection before it holds its key; size the pool
// for the handlers that run at once.
//
// [Store.BeginWork] begins the same transaction under a lease claimed by
// Claim, for a caller that claims that way: the work's Commit runs the
// completion fenced by the lease token and commits; if the lease was lost
// meanwhile, the completion fails, the transaction rolls back, and Commit
// returns server.ErrLeaseLost, so a late worker's writes vanish. Its
// renewals and release run on the reserved pool (Options.ReservedConns),
// never waiting behind running transactions.
//
// The transaction belongs to idem. The handler must not commit or roll it
// back (the [DBTX] from Tx has no Commit or Rollback), must not use it after returning,
// and must not share it between goroutines; savepoints through its Begin
// are fine. A statement error leaves the transaction aborted: roll back to
// a savepoint to continue, or fail the request, which releases the key.
// Without a transaction (a Store not in transactional mode, a request
// without a key on an Optional route), Tx reports false and returns a
// transaction whose statements fail with [ErrNoTx].
//
// # Pipelined claim
//
// With Options.PipelineClaim, in transactional mode, ClaimWork answers at
// once, and the claim is sent in one round trip with the handler's first
// statement through [Tx]: BEGIN, the key's lock, the lookup of its
// record, a guard, then the statement. The guard raises an error when the
// claim does not hold (the lock is another transaction's, or the record
// is completed or running), and PostgreSQL skips the statements after an
// error, so the handler's statement runs only for the request that holds
// the key, in its transaction. A new key then costs a round trip less.
//
// A refused claim fails the statement with [ErrNotClaimed], and every
// later one. The handler returns (its answer does not matter); nothing of
// its work commits, its transaction is rolled back after the answer, and
// the middleware answers the request as its claim, from the lookup:
// 409 while the first runs (even in the middleware's wait mode), a
// replay of the first's outcome, 422 for another body. A statement that
// cannot share the claim's round trip (an Exec without arguments, which
// may hold several statements; a statement with a query option; COPY; a
// savepoint; large objects) is sent after the claim alone, and a handler
// that sends no statement has its claim sent when its work ends, before
// its outcome is recorded or its failure answered: a repeat is answered
// as its claim either way. A first statement PostgreSQL refuses to prepare (a syntax
// error) runs nothing, the claim with it, and the claim goes with the
// next. So does one whose arguments pgx cannot encode, and one whose
// connection closed before the claim's answer came (its backend
// terminated): pgx closes the connection on which it had begun to send
// the claim, and the work gives it back to the pool, takes another, waits
// for the closed one's backend to end (it may hold the key's lock until
// it does), and sends the claim with its next statement on that one. If
// it cannot have another, the work's statements fail, and its key is free
// once that backend ends. In this mode the Claim ClaimWork returns never
// reports TakenOver: whether the key was taken over is known only once
// the claim is sent. Keys that are not ASCII, in a database whose
// encoding is not UTF-8, and the Store's first claim, are claimed before
// the handler runs, as without the option. The mode works behind a
// pooler in transaction pooling (see Connection poolers): the claim and
// the statement are one transaction's.
//
// The mode is safe only for handlers that make no effect outside the
// database before their first statement through Tx has returned without
// error: every repeat runs the handler up to that statement, and an
// effect before it (a provider called, a message sent) is made once per
// request. After it, the key is held, and outside effects are as safe as
// without the option. A handler that must call out first keeps the
// default. The protocol is model-checked (model/, design PIPELINED),
// with the mutant that calls out first.
//
// # Takeover
//
// A worker holds its keys through its connections. When its process dies,
// its operating system closes them, PostgreSQL rolls its transactions back
// and releases their locks, and a retry takes each key at once. When its
// machine vanishes without closing them (a power cut, a partition), the
// keys stay held until PostgreSQL notices the connection is dead. That is
// the takeover time, and it is bounded by, whichever comes first:
//
//   - TCP keepalives: Options.Takeover (default 30 s) sets, for the work's
//     transaction only, tcp_keepalives_idle to a third of it,
//     tcp_keepalives_interval to a sixth and tcp_keepalives_count to 4, and
//     tcp_user_timeout to all of it, so an idle connection whose peer is
//     gone is declared dead about Takeover after it fell silent. (They do
//     not apply on Unix-domain sockets, where the peer is on the same
//     machine; through a connection pooler such as PgBouncer, its own
//     keepalive settings decide.)
//   - idle_in_transaction_session_timeout, if Options.IdleInTransaction
//     sets it for the work's transaction: it also ends the session of a
//     worker that is alive but whose handler sits idle that long between
//     statements, so keep it above the longest handler. By default pgstore
//     turns it off for the work's transaction, whatever the server, role
//     or pool sets (see Supported settings).
//   - client_connection_check_interval (PostgreSQL 14 and later, on Linux
//     and a few other systems), for a worker that dies while one of its
//     statements runs: without it, PostgreSQL notices only when the
//     statement ends. pgstore does not set it, since servers on other
//     platforms refuse any value but 0; set it on the server or the pool
//     (for example RuntimeParams of the pgxpool configuration).
//
// A worker that is alive but stuck keeps its keys for as long as its
// connections live, as a lease-holding worker whose renewals go on would:
// its key answers 409 and is never run twice.
//
// # Supported settings
//
// What each PostgreSQL setting does to the store, as the server, the
// database (ALTER DATABASE ... SET), the role (ALTER ROLE ... SET) or the
// connection's startup parameters set it; [Store.Findings] reads each
// from a session of the pool, and [Store.Check] returns those that void
// the promise ([Critical]):
//
//	synchronous_commit off        handled: outcomes commit with it on (Durability); Notice.
//	                              With Options.InheritSynchronousCommit, a crash loses answered outcomes: Warning.
//	idle_in_transaction_session_timeout
//	                              handled in transactional mode: off for the work's transaction
//	                              (Options.IdleInTransaction 0); Notice. Left standing (negative) or set
//	                              below the work limit, no key whose handler idles that long ever
//	                              completes (measured: 0 of 3 keys in 9 runs): Critical.
//	statement_timeout             below the lease (30 s): a longer statement of the work fails its
//	                              request, and every retry alike: Warning.
//	default_transaction_read_only on: the store's own transactions fail; Critical, or Warning in
//	                              transactional mode, whose work's transaction is READ WRITE.
//	hot standby                   (pg_is_in_recovery) no writes at all: Critical.
//	default_transaction_isolation any: the work's transaction is READ COMMITTED, and the store's
//	                              statements run again after a serialization failure (Isolation).
//	TCP keepalives, tcp_user_timeout
//	                              set for the work's transaction from Options.Takeover (Takeover).
//	client_connection_check_interval
//	                              not set by pgstore; set it on the server (Takeover).
//
// Every setting pgstore makes is transaction-local (set_config with
// is_local true) and every advisory lock it takes is transaction-scoped,
// so nothing depends on session state.
//
// # Connection poolers
//
// A pool whose connections go through PgBouncer in transaction pooling
// (or any pooler that serves a session's transactions from different
// server connections) breaks pgx's default query execution mode,
// cache_statement, which prepares each statement once per connection:
// the next transaction may reach a server connection where it does not
// exist (SQLSTATE 26000), or where another client prepared the same name
// (42P05). Measured through PgBouncer 1.18 (scripts/pgbouncer.sh), 939 of
// 2,000 requests were refused (503) and 15 failed (500) before pgstore
// looked for a pooler, none since. A Store checks, on first use, whether
// a connection of the pool reaches PostgreSQL directly (pg_backend_pid()
// is the process ID the connection announced; through a pooler it is
// not) and, if not, runs its statements and the work's transactions on a
// pool of its own, opened from the given pool's configuration in
// cache_describe mode (each statement parsed unnamed and run in the same
// round trip), which [Store.Close] closes. The application's own
// statements on the given pool still fail at random: add
// default_query_exec_mode=cache_describe (or exec) to the DSN, and the
// Store then uses the given pool as it is. [Store.Findings] reports a
// pooler with prepared statements ([ErrPooler]). A pooler in session mode
// needs nothing; statement mode cannot run the work's transaction.
//
// # Reserved connections
//
// Renew, Complete and Release, the statements that extend or end a running
// claim, run on a small pool of their own that the Store opens from the
// main pool's configuration when it first needs it (Options.ReservedConns,
// default 2): under overload they never queue behind running transactions
// or the application's own queries while the lease they protect lapses.
// [Store.Close] closes it; a Store used only through ClaimWork never opens
// it.
//
// # Purge
//
// Records stay in the table after they expire; [Store.Purge] deletes them
// in bounded batches along the expires_at index. Run it periodically, for
// example every few minutes from one goroutine per process. Claim does not
// depend on it.
//
// # Operating
//
// [Open] gives a program that has only a DSN (an operator's command line)
// a Store on a pool of its own, which [Store.Close] closes. [Store.Stats]
// counts the records by state (running, lapsed, completed, expired, and
// what Purge would delete), per scope or for all; [Store.Running] lists
// the running claims, oldest first, with their lease expiry and whether a
// ClaimWork is running the key again right now; [Store.PurgeWithProgress]
// purges as Purge does and reports each batch. Each is one statement
// over the table (a sequential scan), meant for a person, not for every
// request. A key that ClaimWork claimed has no record until its work
// commits: neither Stats nor Running sees it, and nothing can name it,
// since its lock is on a hash of the key; a crashed worker's such key is
// free again as soon as its connection closes.
//
// # Errors
//
// Renew, Complete, Release and Work.Commit return [server.ErrLeaseLost]
// when the key is no longer held under the token (after ClaimWork: when a
// record of the key was stored by a path that takes no lock). ClaimWork
// without Options.Transactional returns an error wrapping
// errors.ErrUnsupported. A cancelled or expired
// context is returned wrapped (errors.Is with context.Canceled or
// context.DeadlineExceeded). Every other failure is a pgstore error that
// carries the database's message as text; no pgx type is part of the
// error's identity. A session ended for idle_in_transaction_session_timeout,
// and a prepared statement lost behind a pooler, are named in the
// message with their fix. An invalid Options.Table, or table of [Schema],
// is an error wrapping [ErrTableName]. [Store.Findings] returns a
// [Finding] per setting, wrapping one of [ErrStandby], [ErrReadOnly],
// [ErrPooler], [ErrIdleTimeout], [ErrAsyncCommit] and
// [ErrStatementTimeout].
package pgstore
