/*
 * idem's protocol, client and server, for the spin model checker.
 *
 * One journaled operation of a client process (scope 0) and one request of
 * another client with the same Idempotency-Key: either in scope 1 with the
 * same body, which must never get scope 0's answer, or in scope 0 with
 * another body, which must get 422 or run on its own. A bounded network
 * loses, duplicates and reorders requests and loses answers. Two server
 * workers run one of five designs (-DDESIGN=...):
 *
 *   LEASE     a claim row with a lease; the work runs outside the store and
 *             its outcome is stored by a fenced Complete (memstore, pgstore);
 *   LEASE_TX  the same claim, the work in a database transaction that
 *             commits with the fenced outcome (pgstore, Transactional);
 *   REDIS     LEASE on Redis: a failover loses what the master had not
 *             replicated, an outcome too unless -DWAIT_REPLICAS;
 *   ADVISORY  no claim row: one transaction takes pg_try_advisory_xact_lock
 *             on (scope, key), looks the record up in its next statement,
 *             runs the work and inserts the record (the design evaluated
 *             for pgstore's transactional mode);
 *   PIPELINED ADVISORY with no round trip at claim time: the handler starts
 *             at once, and its first statement goes in one pipeline with
 *             BEGIN, a lock that raises when not taken and a guard that
 *             raises on a completed record (pgstore's pipelined claim).
 *
 * At most MAXF faults in one run: a request lost or duplicated, an answer
 * lost, a client crash, a worker crash, a database restart (open
 * transactions and advisory locks gone, asynchronous commits lost), a
 * worker paused past its lease, a spurious client timeout, a refusal for
 * want of credentials.
 *
 * With -DPROVIDER, the second hop (provider.pml): the handler calls a
 * provider B, itself behind idem, with a key derived from the (scope, key)
 * it holds; B's request or answer may be lost on the way.
 *
 * README.md maps every process and variable to the Go code.
 */

#include "config.pml"

/* ---- time: the retention of the operation's key --------------------- */
/* 0: within retention; 1: within the client's margin, it sends nothing
 * more; 2: past the server's retention, which may forget the record. */
byte phase;

/* ---- the client's journal (journal.go, journal_record.go) ------------------ */
/* The states NONE, PENDING, COMPLETED, FAILED, EXPIRED, REFUSED, and the
 * transition table the client moves by, generated from state.go. */
#include "client_table.pml"
byte js;        /* the journal as the process sees it, lazy writes included */
byte jd;        /* the journal on disk: what a crash leaves */
byte cs;        /* the call running, in memory only (client.pml) */
bit  started;   /* the caller has called Do */
bit  sent;      /* an attempt has left */

/* ---- the server's records (server/store.go Record; pgstore's table) -- */
#define R_NONE    0
#define R_RUNNING 1
#define R_DONE    2
byte rst[NS], rtok[NS], rsc[NS];  /* state, token (= the execution), scope */
bit  rfp[NS], rlap[NS];           /* fingerprint, lease lapsed */
byte dst[NS], dtok[NS], dsc[NS];  /* the same, as durably committed */
bit  dfp[NS], dlap[NS];
/* P6: the fingerprint of the request that created the running record (a
 * claim of a free key); a takeover keeps it. dffp is its durable copy. */
bit  ffp[NS], dffp[NS];
byte ntok[NS];                    /* tokens handed out, per key */
byte lock[NS];                    /* ADVISORY, PIPELINED: 1 + the worker holding the lock */

/* ---- the workers ---------------------------------------------------- */
byte wsrc[NW];   /* 1 + source of the request being served, 0 when idle */
byte wkey[NW];   /* the record it maps to */
byte wtok[NW];   /* the lease token it holds, 0 for none */
bit  txa[NW];    /* its database transaction is open */
bit  kill[NW];   /* a crash is on its way */

/* ---- what the properties count --------------------------------------- */
byte commits[NS];    /* outcomes committed (with the effect, in a transaction) */
byte committed[NS];  /* the execution whose outcome committed */
byte ext[NS];        /* calls made outside the transaction */
byte nf;             /* faults so far */
bit  calm;           /* no more faults from here on (liveness runs) */

#define CAN_FAULT (nf < MAXF && !calm)
/* A completed record past its retention (only scope 0's runs out here). */
#define EXPIRED_REC(k) (rst[k] == R_DONE && rsc[k] == 0 && phase == 2)
#define DONE_LIVE(k) (rst[k] == R_DONE && !EXPIRED_REC(k))

/* A durable commit flushes the whole WAL before it (pgstore/doc.go,
 * Durability): every asynchronous commit becomes durable with it. */
#define SYNC(k) dst[k] = rst[k]; dtok[k] = rtok[k]; dsc[k] = rsc[k]; dfp[k] = rfp[k]; dlap[k] = rlap[k]; dffp[k] = ffp[k]
#define SYNC_ALL SYNC(0); SYNC(1)

/* P1: the outcome of one (scope, key), and in a transaction its effect,
 * commits at most once. Nothing is sent for the key past its retention,
 * so a second commit is a second run even after the record expired. */
#ifdef PROVIDER
/* P2B (the second hop): an outcome commits only once B has charged for
 * it, and B charges at most once (P1B, provider.pml): exactly once. */
#define COMMIT(k, t) assert(commits[k] == 0); assert(bfx[k] == 1); commits[k]++; committed[k] = t
#else
#define COMMIT(k, t) assert(commits[k] == 0); commits[k]++; committed[k] = t
#endif

#include "network.pml"
#include "client.pml"
#ifdef PROVIDER
#include "provider.pml"
#endif
#if DESIGN == ADVISORY || DESIGN == PIPELINED
#include "advisory.pml"
#if DESIGN == PIPELINED
#include "pipelined.pml"
#endif
#else
#include "lease.pml"
#endif
#include "env.pml"
#include "properties.pml"

init {
	atomic {
		run Client();
#ifndef NO_OTHER
		run Other();
#endif
		run Worker(0);
		run Worker(1);
		run Env()
	}
}
