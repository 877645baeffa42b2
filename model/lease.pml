/*
 * A server worker in the lease designs: server/middleware.go (ServeHTTP,
 * run), server/lease.go (attempt: start, renew, complete, release),
 * server/waiters.go (wait mode), and the Store calls as pgstore makes them
 * (server/pgstore/store.go, queries.go). LEASE_TX adds the work's
 * transaction (server/pgstore/work.go).
 *
 * Claim, Renew and Release commit asynchronously: they change the record
 * (rst...), not its durable copy (dst...). Complete and the work's Commit
 * are durable, and flush everything before them (SYNC_ALL).
 */

/* Worker v holds key k: its token is on the running record, lease valid. */
#define HOLDS(v, k) (wtok[v] != 0 && wkey[v] == (k) && rst[k] == R_RUNNING && rtok[k] == wtok[v] && !rlap[k])

/* The record may be claimed: unknown, completed past its retention, or
 * running under a lapsed lease with the same fingerprint (a takeover). */
#ifdef MUT_NO_LEASE_CHECK
#define CLAIMABLE(k, fp) (rst[k] == R_NONE || EXPIRED_REC(k) || rst[k] == R_RUNNING && rfp[k] == (fp))
#elif defined(MUT_TAKEOVER_NO_FP)
/* The mutant takes a lapsed lease over for any request. */
#define CLAIMABLE(k, fp) (rst[k] == R_NONE || EXPIRED_REC(k) || rst[k] == R_RUNNING && rlap[k])
#else
#define CLAIMABLE(k, fp) (rst[k] == R_NONE || EXPIRED_REC(k) || rst[k] == R_RUNNING && rlap[k] && rfp[k] == (fp))
#endif

/* The fence of Complete and Commit: the key is still held under the token.
 * The mutant writes the outcome over any row with the key. */
#ifdef MUT_UNFENCED
#define FENCE(k, t) (rst[k] != R_NONE)
#else
#define FENCE(k, t) (rst[k] == R_RUNNING && rtok[k] == (t))
#endif

/* Release, fenced by the token, and by the record still running: after a
 * commit whose reply was lost the key is no longer held, and Release
 * changes nothing. The mutant drops the state check (pgstore's
 * state = 'running', redisstore's s == 'r') and deletes the outcome. */
#ifdef MUT_RELEASE_NO_STATE
#define RELEASABLE(k, t) (rst[k] != R_NONE && rtok[k] == (t))
#else
#define RELEASABLE(k, t) (rst[k] == R_RUNNING && rtok[k] == (t))
#endif

/* The outcome's durability: Complete and Commit flush the WAL; on Redis
 * the outcome reaches the replica later, unless WAIT holds the answer. */
#if DESIGN == REDIS && !defined(WAIT_REPLICAS)
#define SYNC_OUTCOME skip
#else
#define SYNC_OUTCOME SYNC_ALL
#endif

/* A repeat is told 422 if its request differs, the stored answer if the
 * first completed, 409 while it runs. */
#ifdef MUT_REPLAY_NO_FP
#define VERDICT(k, fp) (rst[k] == R_DONE -> ARPL : A409)
#else
#define VERDICT(k, fp) (rfp[k] != (fp) -> A422 : (rst[k] == R_DONE -> ARPL : A409))
#endif

/* The claim's insert, or takeover: a fresh token and lease. */
inline acquire() {
	if
	:: rst[k] == R_RUNNING -> printf("worker %d: takes the key over from token %d (its lease lapsed): token %d\n", w, rtok[k], ntok[k] + 1)
	:: else -> printf("worker %d: claims the key: token %d\n", w, ntok[k] + 1)
	fi;
#ifndef NO_P5
	assert(!HOLDS(1 - w, k));   /* P5: one holder at a time */
#endif
	if
	:: rst[k] != R_RUNNING -> ffp[k] = fp   /* a new record: this request's */
	:: else
	fi;
	ntok[k]++; t = ntok[k]; wtok[w] = t;
	rst[k] = R_RUNNING; rtok[k] = t; rsc[k] = s; rfp[k] = fp; rlap[k] = 0
#if DESIGN == REDIS && defined(WAIT_REPLICAS)
	; SYNC(k)   /* WAIT: the claim is on the replica before the work runs */
#endif
}

/* The existing record, as Claim reports it to a repeat. */
inline report() {
	c = VERDICT(k, fp); sc = rsc[k]; rf = rfp[k]; e = rtok[k]
}

proctype Worker(byte w) {
	byte src, s, k, t, c, sc, e;
	bit fp, rf, lost, acq;
#ifdef PROVIDER
	byte bk, bc;   /* the key the handler sends B, and B's answer */
#endif
end:
	do
	:: atomic { toSrv??src, s, fp -> wsrc[w] = src + 1; k = KEY(s); wkey[w] = k;
		printf("worker %d: receives a request for scope %d, fingerprint %d\n", w, s, fp) }
	{
		/* Claim. While the key runs, answer 409, or (Options.Wait) wait
		 * for its record to change and claim again. */
		do
		::
#ifdef MUT_CHECK_THEN_INSERT
			/* The mutant looks, then inserts in another statement. */
			atomic { acq = CLAIMABLE(k, fp); if :: !acq -> report() :: else fi }
			atomic { if :: acq -> acquire() :: else fi }
#else
			/* One statement: INSERT ... ON CONFLICT DO NOTHING, or the
			 * takeover, fenced by the token the claim saw. */
			atomic {
				if
				:: CLAIMABLE(k, fp) -> acquire()
				:: else -> report()
				fi }
#endif
			if
			:: t == 0 && c == A409 ->
				if
				:: break
				:: (rst[k] != R_RUNNING || rtok[k] != e) -> c = 0   /* claim again */
				fi
			:: else -> break
			fi
		od;

		if
		:: t != 0 ->
#if DESIGN == LEASE_TX
			txa[w] = 1;   /* BeginWork: BEGIN on a connection of its own */
#endif
#ifdef PROVIDER
			call_b();     /* the handler calls B (provider.pml) */
#endif
#ifdef OUTSIDE
			/* The handler calls out. */
			atomic {
				ext[k]++;
				printf("worker %d: the handler calls the card network (call %d for scope %d)\n", w, ext[k], s);
#ifdef LIMIT
				assert(ext[k] <= 1)
#endif
			}
#endif
			/* A renewal may fall due, fenced by the token. */
			if
			:: true
			:: atomic {
				if
				:: rst[k] == R_RUNNING && rtok[k] == t -> rlap[k] = 0;
					printf("worker %d: renews its lease\n", w)
				:: else -> lost = 1;   /* ErrLeaseLost: the work is cancelled */
					printf("worker %d: renewal finds the key taken: the work is cancelled\n", w)
				fi }
			fi;
			/* The outcome, fenced by the token: Complete, or the work's
			 * Commit. */
			atomic {
				if
				:: lost -> c = A409
#if DESIGN == LEASE_TX
				:: !lost && !txa[w] -> c = A5XX   /* the transaction died: undone */
				:: !lost && txa[w] && FENCE(k, t) ->
#else
				:: !lost && FENCE(k, t) ->
#endif
#ifndef NO_P6
					assert(fp == ffp[k]);   /* P6: the outcome is the request's that made the record */
#endif
					rst[k] = R_DONE; rtok[k] = t; rlap[k] = 0;
					COMMIT(k, t); SYNC_OUTCOME;
					c = A200; sc = s; rf = fp; e = t;
					printf("worker %d: commits the outcome of token %d\n", w, t);
					/* The commit landed and its reply is lost: the worker
					 * takes it for a failed commit (Complete: the key stays
					 * held; Commit: the key is released). */
					if
					:: F_AMBIG && CAN_FAULT -> nf++; c = A5XX;
						printf("worker %d: the reply to its commit is lost\n", w)
					:: true
					fi
#if DESIGN == LEASE_TX
				:: !lost && txa[w] && !FENCE(k, t) -> c = A409   /* rolled back */
#else
				:: !lost && !FENCE(k, t) -> c = A409             /* ErrLeaseLost */
#endif
				fi;
				if
				:: c == A409 -> printf("worker %d: the fence refuses token %d's outcome: not recorded\n", w, t)
				:: c == A5XX -> printf("worker %d: takes its commit for failed\n", w)
				:: else
				fi;
				txa[w] = 0 }
			/* After a failed Commit, Release, so that a retry runs (after
			 * a failed Complete the work ran: the key stays held). */
			if
#if DESIGN == LEASE_TX
			:: c == A5XX -> atomic {
#else
			:: false -> atomic {
#endif
				if
				:: RELEASABLE(k, t) ->
					printf("worker %d: releases the key\n", w);
					rst[k] = R_NONE; rtok[k] = 0; rsc[k] = 0; rfp[k] = 0; rlap[k] = 0
				:: else
				fi }
			:: else
			fi
		:: else
		fi;
		atomic { answer(src, c, sc, rf, e);
			wsrc[w] = 0; wkey[w] = 0; wtok[w] = 0; txa[w] = 0;
			src = 0; s = 0; k = 0; t = 0; c = 0; sc = 0; e = 0; fp = 0; rf = 0; lost = 0; acq = 0
#ifdef PROVIDER
			; bk = 0; bc = 0
#endif
			}
	} unless {
		/* The worker crashes: the request is gone, the transaction rolls
		 * back with the connection, the claim stays until its lease
		 * lapses. */
		kill[w] -> atomic { printf("worker %d: crashes\n", w); kill[w] = 0; wsrc[w] = 0; wkey[w] = 0; wtok[w] = 0; txa[w] = 0;
			src = 0; s = 0; k = 0; t = 0; c = 0; sc = 0; e = 0; fp = 0; rf = 0; lost = 0; acq = 0
#ifdef PROVIDER
			; bk = 0; bc = 0
#endif
			}
	}
	od
}
