/*
 * Bounds, the design under check, and the switches that turn faults and
 * mutants on. check.sh passes -D options; the defaults are the real model.
 */

#define LEASE    1
#define LEASE_TX 2
#define ADVISORY 3
#define REDIS    4   /* LEASE on Redis: an outcome is replicated asynchronously
                      * unless -DWAIT_REPLICAS (Options.WaitReplicas) */
#define PIPELINED 5  /* ADVISORY with the claim pipelined with the handler's
                      * first statement */
#ifndef DESIGN
#define DESIGN LEASE_TX
#endif

#define NS 2      /* scopes, and the server's record keys */
#define NW 2      /* server workers */
#define CLIENT 0  /* request source: the journaled client, scope 0 */
#define OTHER  1  /* request source: another client with the same key */

#ifndef MAXF
#define MAXF 2    /* faults in one run */
#endif

/* Fault kinds, all on unless switched off with -DNO_<kind>. */
#ifdef NO_NETFAULT
#define F_NET 0
#else
#define F_NET 1     /* a request lost or duplicated, an answer lost */
#endif
#ifdef NO_CCRASH
#define F_CCRASH 0
#else
#define F_CCRASH 1  /* the client process crashes */
#endif
#ifdef NO_WCRASH
#define F_WCRASH 0
#else
#define F_WCRASH 1  /* a worker process crashes */
#endif
#ifdef NO_RESTART
#define F_RESTART 0
#else
#define F_RESTART 1 /* the database restarts */
#endif
#ifdef NO_PAUSE
#define F_PAUSE 0
#else
#define F_PAUSE 1   /* a live worker's lease lapses: it was paused */
#endif
#ifdef NO_TIMEOUT
#define F_TIMEOUT 0
#else
#define F_TIMEOUT 1 /* the client gives up on an attempt still under way */
#endif
#ifdef NO_REFUSE
#define F_REFUSE 0
#else
#define F_REFUSE 1  /* an attempt is refused for want of credentials (401) */
#endif
#ifdef NO_AMBIGUOUS
#define F_AMBIG 0
#else
#define F_AMBIG 1   /* a store call lands and its reply is lost */
#endif
#ifdef NO_EXPIRY
#define F_EXPIRY 0
#else
#define F_EXPIRY 1  /* time passes beyond the key's retention */
#endif

/* The record a request maps to: its (scope, key). Every request carries
 * the same Idempotency-Key, so the scope alone tells records apart. */
#ifdef MUT_NO_SCOPE
#define KEY(s) 0
#else
#define KEY(s) (s)
#endif

/* Count the handler's call outside the transaction (a card network): all
 * of the work in the LEASE design, only in the limit checks otherwise.
 * With the second hop (-DPROVIDER, provider.pml) the call goes to B, with
 * a key, instead. */
#if (DESIGN == LEASE || DESIGN == REDIS) && !defined(PROVIDER)
#define OUTSIDE
#endif
