// Package redisstore is a [server.Store] on Redis, through go-redis/v9: one
// node, Sentinel or Cluster, whatever redis.UniversalClient the service
// already has. Claims, renewals, completions and releases are Lua scripts,
// one round trip each, fenced by the lease token and timed by the Redis
// server's clock; a replay is one round trip that writes nothing.
//
// The canonical sequence:
//
//	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
//	defer rdb.Close()
//	store, err := redisstore.New(rdb, redisstore.Options{})
//	if err != nil { ... }
//	if err := store.Check(ctx); err != nil {
//		logger.Warn("idempotency records can be evicted", "err", err)
//	}
//	mux.Handle("POST /charges", server.Middleware(store, server.Options{Scope: tenantOf})(charge))
//
// A Store is safe for concurrent use, and any number of processes may share
// one Redis: leases and expiry are computed on the Redis server's clock
// (TIME inside each script), never on the local one.
//
// # What holds, and what does not
//
// The record is fenced: of all the requests carrying one (scope, key), one
// runs the handler at a time, a repeat with the same body is answered from
// the stored outcome, a repeat with another body is refused, a crashed
// worker's key is taken over only after its lease lapses and only by the
// same request, and a worker whose lease was taken over cannot overwrite
// the new owner's outcome. While Redis keeps its data (no failover, no
// eviction, no restart without persistence), the handler runs once per key
// within the retention, unless a worker dies between its effect and the
// record (below), and every repeat gets the first answer.
//
// There is no transaction with the handler's business writes: Redis holds
// the record, and the handler writes wherever its data lives. The fenced
// record protects the answer; it cannot undo an effect. If the process
// dies after the handler's effect (a row inserted elsewhere, a call to a
// payment provider) and before Complete records the outcome, the key stays
// running until its lease lapses, and the retry then runs the handler
// again: the effect can happen twice. This is exactly the window of
// pgstore without Options.Transactional. Where the business data is in
// PostgreSQL, pgstore's transactional mode closes it; otherwise make the
// effect itself idempotent downstream (pass the key on to the provider,
// insert under a unique constraint on the key) and keep the handler short.
// [server.RunOnce] gives queue consumers and webhook receivers the same
// claim, run, record cycle on this store, with the same window.
//
// # Round trips
//
// Every operation is one script, EVALSHA, in one round trip once the node
// has the script cached (the first call on a node, and the first after a
// failover, adds one EVAL):
//
//	Claim, new key                 1   reads the record, writes the claim
//	Claim, replay or in flight     1   the same script; it writes nothing
//	Claim, takeover                1   the same script, when the lease lapsed
//	Renew, Complete, Release       1
//	with Options.WaitReplicas      1   Claim and Complete pipeline WAIT behind the script
//
// Through [server.Middleware] a replay therefore costs one round trip and a
// new key two (claim, complete). The counts are checked by a go-redis hook
// on every node's connections (TestRoundTrips).
//
// # Records
//
// A record is one Redis hash named
//
//	<Options.Prefix>{<n>:<scope><key>}
//
// where scope and key are escaped ('%' as "%25", '}' as "%7D") and n is the
// escaped scope's length. The braces are a Cluster hash tag over the whole
// identity: a record lives in one slot, records spread over the slots by
// (scope, key), and no two (scope, key) pairs share a name, whatever bytes
// they hold. The hash holds the fingerprint, the token, the lease's end or
// the retention's end, and once completed the status, the header (a
// length-prefixed binary encoding, byte for byte) and the body.
//
// Redis expiry is the record's lifetime: a completed record expires after
// its retention, a running one Options.Abandon (default 24 h) after its
// lease lapses, so that a request with another body is still refused and
// the same request can take the key over. Nothing needs purging.
//
// # Operators
//
// [Store.Stats] counts the records by state (running, lapsed, completed)
// and [Store.Running] lists the running keys, those whose lease lapsed or
// lapses first, for every scope or some: the keys to look at when work
// seems stuck. Redis keeps no index of the records, so both scan: SCAN
// over Options.Prefix on the server or on every master of a cluster, in
// batches of 1000, and a pipelined HMGET of each batch's state and lease.
// That is O(keys in Redis), in many short commands, never KEYS, and writes
// nothing: meant for an operator (the idem command's keys ls --redis), not
// for the request path. The store does not record when a key was claimed,
// only when its lease lapses.
//
// # Time
//
// Each script reads the Redis server's clock, so every process agrees on
// when a lease lapses. A record lives on one master, so one clock decides
// for it; after a failover the promoted replica's clock takes over (Redis
// replicates expiries as absolute times): keep the nodes' clocks in sync.
//
// # Memory
//
// Size Redis for the records and run it with maxmemory-policy noeviction.
// Under any other policy (the volatile ones included: every record has an
// expiry) Redis deletes records to make room, and an evicted record is
// forgotten: its work runs again on the next retry. [Store.Check] reads the
// policy of the server, or of every master, and says so, also where CONFIG
// is disabled; run it at start (see Checking the server).
//
// Measured with MEMORY USAGE (all samples) on Redis 7.0 with its default
// encodings, for a 64-byte fingerprint, two response header fields, a
// 17-byte scope and a 37-byte key:
//
//	running record                   264 B
//	completed, empty body            392 B
//	completed, 100 B body            1.0 KB
//	completed, 1 KiB body            2.2 KB
//	completed, 4 KiB body            6.0 KB
//	completed, 64 KiB body           81 KB
//
// so about 1 KB plus the body, rounded up to the allocator's size class,
// per key kept for the retention: a day's keys at the day's request rate.
// Options.MaxResponse (default 4 MiB) caps the outcome one record stores.
// Complete of a larger one stores nothing and returns an error wrapping
// [ErrResponseTooLarge]; the middleware answers the first request with the
// handler's response all the same, and records in its place a small answer
// with the same status and a server.ProblemResponseNotKept body, which
// every retry gets: the work never runs again.
//
// A Redis at maxmemory under noeviction refuses new keys: Claim returns an
// error wrapping [ErrFull], which wraps server.ErrStoreFull, so the
// middleware answers a full Redis as a full store (503 with
// server.ProblemStoreFull and Retry-After: 30). Replays, which write
// nothing, still work, and Complete still records the outcome of work
// that has run (its first write is one Redis allows over maxmemory), so
// no running key is forgotten for lack of room.
//
// # Replication and failover
//
// Redis replicates asynchronously: a master acknowledges a write before
// its replicas have it, and if the master dies in between, the promoted
// replica does not have it. A claim lost that way lets a retry run the work
// again while the first run is still going; an outcome lost that way is
// re-run by the next retry instead of replayed.
//
// Options.WaitReplicas sends WAIT behind the Claim and Complete scripts,
// in the same round trip, on the connection that wrote, so they report
// success only once that many replicas have the write. A claim that is not
// acknowledged within Options.WaitTimeout is released and refused (an
// error wrapping [ErrNotReplicated]; the middleware answers 503): work
// never starts under a claim only the master has. An outcome that is not
// acknowledged in time is stored on the master all the same, and Complete
// returns an error wrapping ErrNotReplicated. What it costs: each Claim and
// Complete waits for a replica's acknowledgement (on loopback, a fraction
// of a millisecond), replays included (WAIT then returns at once when the
// connection's earlier writes have reached the replicas); and while a
// master has fewer replicas than WaitReplicas (after a failover, until the
// dead node is back as a replica) every claim of its keys waits
// WaitTimeout and is refused. WAIT does not make Redis strongly
// consistent: a replica that acknowledged can still lose the race to be
// promoted to another that did not, with more than one replica per master.
//
// Measured on the local cluster (scripts/redis-cluster.sh: 3 masters, 3
// replicas, cluster-node-timeout 1 s, loopback) with the harness in
// internal/failover: keyed requests through the middleware, a master
// SIGKILLed mid-run, the replica promoted in 2 to 4 s, then every
// operation re-sent once as a client that lost its answer would:
//
//	                                       duplicates in each of 5 runs    lost
//	replica in step, no WaitReplicas       0 0 0 0 0 (3000 operations)     0
//	replica in step, WaitReplicas 1        0 0 0 0 0 (3000 operations)     0
//	replica 300 ms behind, no WaitReplicas 844 671 668 703 772 (8000)      0
//	replica 300 ms behind, WaitReplicas 1  0 0 0 0 0 (8000 operations)     0
//
// On loopback the replica has every acknowledged write by the time the
// cluster fails over, so nothing was lost. Held back (the harness's -lag),
// it was promoted without the records the master acknowledged meanwhile:
// those outcomes were run again by the next retry, and up to 7 claims per
// run were run twice during the run itself. With WaitReplicas nothing ran
// twice. Its price: each Claim and Complete waits for the replica (on
// loopback 30 to 70 µs more per call; go test -bench . in this package),
// and the killed shard's new keys are refused (503) until the dead node is
// back as the new master's replica.
//
// # Cluster
//
// go-redis's ClusterClient follows MOVED and ASK and retries a broken
// connection, but reloads the cluster's layout only on a redirection or
// every ClusterOptions.ClusterStateReloadInterval (a minute by default):
// after a master dies it keeps sending that master's slots to it. The store
// asks for a reload whenever a call fails because a node is gone, so that
// calls find the promoted replica as soon as the cluster has one, and
// Complete tries again through the failover, until its context ends (the
// middleware gives it one lease). Claims fail fast: the middleware answers
// 503, and the client's retry finds the new master. A claim that may have
// been recorded although its answer was lost (the node died mid-reply) is
// released in the background, fenced by its token, so that it does not
// hold the key from those retries for a whole lease.
//
// With WaitReplicas, Claim and Complete go to the key's master through
// ClusterClient.MasterForKey, since go-redis would send a WAIT given to
// the ClusterClient to every master: hooks that must see those calls
// belong on the node clients (ClusterClient.OnNewNode).
//
// # Checking the server
//
// [Store.Findings] reads how Redis keeps the records, on the server or on
// every master of a cluster, one round trip each: INFO memory, persistence
// and replication, and CONFIG GET where the server allows it. It returns a
// [Finding] for each setting that lets Redis lose records, most severe
// first; each is an error wrapping its kind, so errors.Is tells them apart,
// and its message names the setting read, what it costs and the fix:
//
//	kind                severity  setting                                   fix
//	ErrEvictionPolicy   critical  maxmemory-policy other than noeviction    maxmemory-policy noeviction
//	ErrNoPersistence    warning   appendonly no, save ""                    appendonly yes, appendfsync always
//	ErrWeakPersistence  notice    appendonly yes, appendfsync everysec      appendfsync always
//	ErrWeakPersistence  warning   appendfsync no; or RDB snapshots alone    appendonly yes, appendfsync always
//	ErrAsyncReplicas    warning   replicas, Options.WaitReplicas 0          Options.WaitReplicas
//	ErrTooFewReplicas   warning   fewer replicas than Options.WaitReplicas  attach replicas, or lower it
//	ErrUnverified       critical  INFO and CONFIG both refused              allow INFO, or confirm with the provider
//
// What each costs, in duplicate executions: an evicted record is forgotten
// while Redis runs normally, and its key's next retry runs the work again
// (the volatile policies evict records too: every record has an expiry);
// without persistence a restart forgets every record, and each key re-sent
// after it runs again; with appendfsync everysec a crash of the machine
// loses up to about a second of acknowledged records, with RDB alone all
// those since the last snapshot; with replicas not waited for, a failover
// loses those the replica had not received (668 to 844 duplicates per
// 8,000 operations with a replica 300 ms behind, above). Fewer replicas
// than Options.WaitReplicas refuses every claim instead.
//
// A server that refuses CONFIG (renamed or disabled, the default of many
// managed services) is still read through INFO, which reports
// maxmemory_policy, aof_enabled and the connected replicas, but neither
// appendfsync nor the RDB save schedule (Redis 7.0 included): those come
// back as ErrUnverified findings of lower severity. A server refusing both
// commands is one critical ErrUnverified finding, never silence.
//
// [Store.Check] returns the critical findings, joined, and nil only when
// every server's policy was read and is noeviction: an error from Check
// means records can be evicted, or that nothing says they cannot.
// Persistence and replication findings do not fail it (a Redis without
// persistence may be a deliberate choice); log what Findings returns at
// start-up. Neither writes anything.
//
// # Errors
//
// Renew, Complete and Release return [server.ErrLeaseLost] when the key is
// no longer held under the token. A cancelled or expired context is
// returned wrapped (errors.Is with context.Canceled or
// context.DeadlineExceeded); so are [ErrFull], [ErrNotReplicated] and
// [ErrResponseTooLarge]. Every other failure is a redisstore error that
// carries go-redis's message as text; no go-redis type is part of the
// error's identity.
package redisstore
