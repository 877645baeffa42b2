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
//	if err := store.Migrate(ctx); err != nil { ... }
//	mux.Handle("POST /charges", server.Middleware(store, server.Options{Scope: tenantOf})(charge))
//
// and in the handler:
//
//	tx, _ := pgstore.Tx(r.Context())
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
// what is missing and never alters what exists. Scopes and keys are text
// compared byte for byte (COLLATE "C"); a scope that is not valid UTF-8 or
// holds a NUL byte cannot be stored, and its claims fail with an error.
//
// # Round trips
//
// Every operation is a single statement in a single round trip once the
// pool's connection has prepared it (pgx caches prepared statements per
// connection):
//
//	Claim, new key                 1   INSERT ... ON CONFLICT DO NOTHING, which also reads an existing row
//	Claim, replay or in flight     1   the same statement; no transaction ID, no WAL, no row lock
//	Claim, takeover                2   the claim, then an UPDATE fenced by the token it saw
//	Renew, Release, Complete       1
//	BeginWork (transactional)      1   BEGIN on a connection of its own
//	Work.Commit (transactional)    1   the fenced UPDATE and COMMIT, pipelined
//	Purge                          1   per batch
//
// Through [server.Middleware] a replay therefore costs one round trip, a
// new key two (claim, complete), or three plus the handler's own statements
// in transactional mode. pgxpool may add a ping when it hands out a
// connection that sat idle for over a second (pgxpool.Config.ShouldPing).
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
// work's transaction in transactional mode is always READ COMMITTED: lease
// renewals update the key's row while the work runs, and a stricter level
// would fail the fenced commit.
//
// # Durability
//
// Complete, and Work.Commit in transactional mode, commit with the server's
// synchronous_commit (normally on: the stored outcome is on disk when the
// response is sent). Claim, Renew, Release and Purge commit
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
// Options.DurableClaims.
//
// # Transactional mode
//
// With Options.Transactional, [Store.BeginWork] takes a connection from the
// pool and begins a READ COMMITTED transaction that the
// handler reaches through [Tx]. The work's Commit runs the fenced completion as the
// transaction's last statement and commits: the business writes and the
// stored response are one atomic commit. If the lease was lost (the key was
// taken over while the handler ran), the completion fails, the transaction
// rolls back, and Commit returns [server.ErrLeaseLost]: a late worker's
// writes vanish. Rollback, used by the middleware for 5xx, panics and the
// other released outcomes, discards the writes.
//
// Each running request holds a pool connection for its transaction, and
// lease renewals need another one from the same pool: size the pool above
// the number of requests that run at once. A renewal that cannot get a
// connection fails, and a handler whose renewals fail for a whole lease
// has its context cancelled (see server.Middleware).
//
// The transaction belongs to idem. The handler must not commit or roll it
// back (the [pgx.Tx] from Tx refuses to), must not use it after returning,
// and must not share it between goroutines; savepoints through its Begin
// are fine. A statement error leaves the transaction aborted: roll back to
// a savepoint to continue, or fail the request, which releases the key.
//
// Each running request holds one pool connection for its transaction and
// briefly takes another for its claim, renewals and release; size the pool
// for the concurrency of the handlers.
//
// Repeats that arrive while the first request runs do not wait on its
// transaction: the claim committed on its own, before the work began, so a
// repeat sees a running key at once (409, or the middleware's wait mode).
//
// # Purge
//
// Records stay in the table after they expire; [Store.Purge] deletes them
// in bounded batches along the expires_at index. Run it periodically, for
// example every few minutes from one goroutine per process. Claim does not
// depend on it.
//
// # Errors
//
// Renew, Complete, Release and Work.Commit return [server.ErrLeaseLost]
// when the key is no longer held under the token. A cancelled or expired
// context is returned wrapped (errors.Is with context.Canceled or
// context.DeadlineExceeded). Every other failure is a pgstore error that
// carries the database's message as text; no pgx type is part of the
// error's identity.
package pgstore
