// Package etcdstore is a [server.Store] on an etcd v3 cluster, through
// go.etcd.io/etcd/client/v3: a consensus store, where a record the
// cluster acknowledged is on a majority of members' disks and survives
// the loss of any minority of them, the leader included.
//
// The canonical sequence:
//
//	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
//	if err != nil { ... }
//	defer cli.Close()
//	store, err := etcdstore.New(cli, etcdstore.Options{})
//	if err != nil { ... }
//	if err := store.Check(ctx); err != nil {
//		logger.Warn("the etcd cluster cannot keep idempotency records safely", "err", err)
//	}
//	mux.Handle("POST /charges", server.Middleware(store, server.Options{Scope: tenantOf})(charge))
//
// A Store is safe for concurrent use, and any number of processes may
// share one cluster.
//
// # Records and fencing
//
// A record is one etcd key per (scope, key), <Options.Prefix><n>:<scope><key>
// with n the scope's length in bytes, whose value is the record: running
// (the fingerprint, the claim's nonce, when its lease lapses) or completed
// (the fingerprint, the status, header and body, when its retention ends).
//
// A claim of a new key is one transaction, "if the key was never created
// (CreateRevision = 0), put the claim"; a claim over an expired or
// abandoned record, or a takeover of a lapsed lease by the same
// fingerprint, is "if the key is still at the revision read (ModRevision),
// put the claim". Of any number of concurrent claims exactly one compare
// holds: etcd serialises transactions. The token is the revision the claim
// was written at, with the claim's nonce: Renew, Complete and Release are
// transactions "if the key is still at that revision", so a worker whose
// lease was taken over, or whose claim was released, can never renew,
// complete or release another's claim; its compare fails. After a renewal
// the revision has moved on: the failed compare hands back the record,
// and if it still holds the claim's nonce the call writes again at its
// revision (one more round trip).
//
// # etcd leases
//
// Every record is attached to an etcd lease, so that etcd deletes it by
// itself once it may be forgotten: a running record Options.Abandon
// (default 24 h) after its lease lapsed, a completed one after its
// retention. An abandoned running record, whose worker died, disappears
// when its etcd lease expires; nothing needs purging. Records share
// leases, one per window of expiry times (at most 1/32 of the time left,
// 2048 s for a day), so a grant is rare: a record outlives its expiry by
// at most that window, and is treated as gone from its expiry on.
//
// The work's lease is not an etcd lease. etcd's lease TTLs are whole
// seconds, at least 1.5 election timeouts (2 s with the defaults), and
// expire on a 500 ms sweep through consensus, so they cannot lapse a
// 100 ms lease (the conformance suite's) on time, nor report when it
// lapses. The lease is the lapse time written in the running record, on
// the clock of the process that claimed or renewed it, compared with the
// clock of the process that claims next. Keep the clocks of the processes
// sharing a cluster in sync (NTP): a process whose clock is d ahead takes
// a lapsed lease over up to d early; keep leases (default 30 s) far above
// the skew.
//
// # Round trips
//
//	Claim, new key                2   a linearizable read, then the claim's transaction
//	Claim, replay or in flight    1   the read; it writes nothing
//	Claim, takeover or expired    2   the read, then the transaction at its revision
//	Renew, Complete, Release      1   a transaction fenced by the revision (2 after a renewal)
//	a new window's lease          1   a grant, shared by every record of the window
//
// Through [server.Middleware] a new key costs three (two writes through
// consensus, each fsynced on a majority before it is acknowledged), a
// replay one (a linearizable read: the leader confirms it still leads,
// one heartbeat round, no write). Measured through the middleware on
// three members in one process on loopback, fsync on, beside Redis
// Cluster (3 masters, 3 replicas, no persistence) on the same shared
// 2-core machine, in one run (go test -bench . ./server/etcdstore/bench/;
// two runs, under different load):
//
//	                        etcd          Redis Cluster   etcd / Redis
//	new key                 10.6-11.5 ms  0.5-1.15 ms     10-21x
//	replay                  0.63-0.79 ms  0.15-0.38 ms    2-5x
//	new keys, 16 clients    170-210/s     1,850-3,300/s   1/11-1/16
//
// etcd's cost is its disk's fsync latency (every write waits for a
// majority's fsync: a new key's two writes take 10 of its 11 ms) and its
// consensus round; a replay is cheap because it writes nothing.
//
// # What a crash or a failover can lose
//
// Nothing the cluster acknowledged, as long as a majority of members
// keeps its disk: etcd acknowledges a write once a majority has it in its
// write-ahead log, fsynced, and a new leader is always one that has every
// acknowledged write. A claim acknowledged before the leader died is
// still there; an outcome acknowledged is replayed, not run again.
// Measured with internal/failover (go run ./server/etcdstore/internal/failover
// -seeds 1,2,3 -kills 4, and -seeds 4,5,6,7,8): eight seeds, 8,000
// operations through an idem client with retries behind a proxy dropping
// 5% of answers, the leader killed 32 times (its raft loop stopped
// without a word to its peers, then restarted on its data): 0
// duplicates, 0 operations lost, 0 outcomes forgotten, a new leader a
// median 1.2 to 1.3 s after each kill (etcd's default 1 s election
// timeout, and the vote).
//
// What a failover costs instead is time. While the cluster has no leader
// (about an election timeout, 1 s by default, plus the vote) claims fail
// and the middleware answers 503; a write sent to a member that still
// forwards to the dead leader is lost on the wire and never answered, so
// each request is bounded by Options.TryTimeout (default 5 s) and
// Complete tries again, to the next member, until its context ends (the
// middleware gives it one lease). A write whose answer was lost may have
// landed: Claim reads the record once and recognises its own claim by
// its nonce, or, if the read fails too, returns the error and deletes the
// claim in the background once it appears (for at most the lease), so
// that it does not hold the key from the retries; Complete recognises an
// earlier try by its nonce.
//
// What it does not cover: the work itself. There is no transaction with
// the handler's business writes: if the process dies after the handler's
// effect and before Complete records the outcome, the key stays running
// until its lease lapses, and the retry then runs the handler again
// (pgstore's transactional mode closes that window where the business
// data is in PostgreSQL). A cluster that loses a majority of its members
// refuses every claim (503) until it has one again; a cluster restored
// from an older snapshot forgets what came after it. Running with
// --unsafe-no-fsync voids the promise: a crash of a majority of machines
// then loses acknowledged records.
//
// # What it needs
//
// An etcd v3 cluster (tested on 3.6.14, the version the tests embed),
// three members or more (five to survive two failures), on disks with low
// fsync latency, clocks in sync across the processes sharing it, and:
//
//   - auto-compaction (--auto-compaction-retention): every claim, renewal
//     and outcome is a new revision, and without compaction etcd keeps
//     them all until the database reaches --quota-backend-bytes (2 GiB
//     by default) and raises its NOSPACE alarm; then Claim returns an
//     error wrapping [ErrFull] (the middleware answers 503), outcomes of
//     running work cannot be recorded, and the operator must compact,
//     defragment and disarm the alarm;
//   - --max-request-bytes above Options.MaxResponse plus a few hundred
//     bytes, and a client MaxCallSendMsgSize as large (1.5 MiB and 2 MiB
//     by default; MaxResponse defaults to 1 MiB): a larger outcome is not
//     stored ([ErrResponseTooLarge]) and the middleware records a small
//     one in its place;
//   - room for the records: a completed record is its body and header
//     plus about 100 bytes, kept for the retention (times etcd's history
//     until compaction).
//
// # Checking the cluster
//
// [Store.Findings] asks the cluster about itself, writing nothing: the
// member list, each member's status and the alarms. It returns a
// [Finding] for each voting member short of three ([ErrFewMembers]),
// each member that does not answer ([ErrMemberDown]), each raised alarm
// ([ErrAlarm]: NOSPACE stops every write) and each database at 80% of
// its quota or more ([ErrNearQuota]). [Store.Check] returns those that
// stop the store or its promise, joined (all but ErrNearQuota). Neither
// can see from a client whether members fsync or compact.
//
// # Errors
//
// Renew, Complete and Release return [server.ErrLeaseLost] when the key
// is no longer held under the token (a token the store did not issue
// included). A cancelled or expired context is returned wrapped
// (errors.Is with context.Canceled or context.DeadlineExceeded); so are
// [ErrFull] and [ErrResponseTooLarge]. [New] refuses bad Options with an
// error wrapping [ErrInvalidOptions]. Every other failure is an etcdstore
// error that carries the client's message as text; no etcd type is part
// of the error's identity.
package etcdstore
