/*
 * A server worker in pgstore's pipelined claim mode: ADVISORY's lock and
 * record, but no round trip at claim time. The handler starts before the
 * claim is known, and its first database statement goes in one pipeline
 * with the claim:
 *
 *   BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE;
 *   lock:  pg_try_advisory_xact_lock(hash(scope, key)), raising an error
 *          when the lock is not taken;                        -- statement 1
 *   guard: reads the key's record, raising an error when it blocks (a
 *          completed record within its retention);            -- statement 2
 *   the handler's first statement;                            -- statement 3
 *   Sync
 *   ... the handler's other writes ...
 *   INSERT INTO idem_keys ... (the record), COMMIT;           -- pipelined
 *
 * PostgreSQL executes a pipeline in order and, after an error, skips every
 * statement up to the Sync: the handler's statement runs only if the lock
 * and the guard passed, in their transaction. After a raise it fails with
 * ErrNotClaimed; the connection runs ROLLBACK and an autocommit lookup, and
 * the middleware throws the handler's response away and answers as the
 * claim would have: a replay of the completed record (or 422 for another
 * request), or 409 in flight. A handler that ends without any statement
 * has the claim sent on its own (BEGIN, lock, guard) before the record's
 * INSERT and COMMIT, with the same refusal.
 *
 * The guard is a statement of its own, after the lock's, so its snapshot
 * sees what the lock's previous holder committed (READ COMMITTED, as in
 * ADVISORY). MUT_SAME_STMT guards in the lock's statement, whose snapshot
 * is taken before the lock is granted.
 *
 * The mode is safe only for a handler that makes no effect outside the
 * database before its first statement returned: that code may run for a
 * request whose claim then fails. With -DOUTSIDE the handler calls the card
 * network after its first statement returned; MUT_OUTSIDE_FIRST calls
 * before sending it. MUT_NO_SKIP executes the handler's statement after a
 * raise, as if the pipeline went on past an error: PostgreSQL's failed
 * transaction takes no more statements, so the statement runs on its own
 * (autocommit) and its write commits outside any claim.
 *
 * The helpers (VERDICT, PK_CONFLICT, look, end_tx) are advisory.pml's.
 * Options.Wait is not modelled in this mode: a refused claim is answered.
 */

/* What the pipeline has done so far, as the connection reports it. */
#define P_OK     0   /* every statement so far passed */
#define P_RAISED 1   /* the lock or the guard raised: the rest was skipped */
#define P_LOST   2   /* the connection or its transaction is gone */

/* P1W: the handler's writes of one (scope, key) commit at most once. */
byte dbfx[NS];   /* ghost counter: the handler's writes committed for key k */
#define WRITE_COMMITS(k) dbfx[k]++; assert(dbfx[k] <= 1)

proctype Worker(byte w) {
	byte src, s, k, t, c, sc, e, pr;
	bit fp, rf, got, hs, wr;
#ifdef MUT_SAME_STMT
	bit blk;   /* the guard's verdict, from the lock statement's snapshot */
#endif
#ifdef PROVIDER
	byte bk, bc;   /* the key the handler sends B, and B's answer */
#endif
end:
	do
	:: atomic { toSrv??src, s, fp -> wsrc[w] = src + 1; k = KEY(s); wkey[w] = k;
		/* Whether the handler makes a database statement. A handler
		 * that calls B makes one before (its call is an outside effect). */
#ifdef PROVIDER
		hs = 1;
#else
		if :: hs = 1 :: hs = 0 fi;
#endif
		printf("worker %d: receives a request for scope %d, fingerprint %d; the handler starts\n", w, s, fp) }
	{
		/* The handler's code before its first statement. */
#if defined(OUTSIDE) && defined(MUT_OUTSIDE_FIRST)
		atomic { ext[k]++;
			printf("worker %d: the handler calls the card network before its first statement (call %d for scope %d)\n", w, ext[k], s);
#ifdef LIMIT
			assert(ext[k] <= 1)
#endif
		}
#endif
		/* The pipeline reaches the database: BEGIN, and statement 1, the
		 * lock. (Without a handler statement: the claim on its own, once
		 * the handler ended.) */
#ifdef MUT_SAME_STMT
		/* Statement 1 takes its snapshot, then the lock. */
		atomic { txa[w] = 1; blk = DONE_LIVE(k);
			printf("worker %d: statement 1 takes its snapshot\n", w) }
		atomic {
			if
			:: !txa[w] -> pr = P_LOST
			:: txa[w] && lock[k] != 0 -> pr = P_RAISED;
				printf("worker %d: statement 1 raises: the key is locked\n", w)
			:: txa[w] && lock[k] == 0 && blk -> lock[k] = w + 1; got = 1; pr = P_RAISED;
				printf("worker %d: statement 1 gets the lock and raises: its snapshot has the record\n", w)
			:: txa[w] && lock[k] == 0 && !blk -> lock[k] = w + 1; got = 1;
				printf("worker %d: statement 1 gets the lock; its snapshot has no record\n", w)
			fi }
#else
		atomic { txa[w] = 1;
			if
			:: lock[k] == 0 -> lock[k] = w + 1; got = 1;
				printf("worker %d: the lock statement gets the lock\n", w)
			:: else -> pr = P_RAISED;
				printf("worker %d: the lock statement raises: the key is locked\n", w)
			fi }
		/* Statement 2, the guard, in a snapshot taken now; skipped after
		 * the lock's error. */
		atomic {
			if
			:: pr != P_OK
			:: pr == P_OK && !txa[w] -> pr = P_LOST
			:: pr == P_OK && txa[w] && DONE_LIVE(k) -> pr = P_RAISED;
				printf("worker %d: the guard raises: the key's record is completed\n", w)
			:: pr == P_OK && txa[w] && !DONE_LIVE(k) ->
				printf("worker %d: the guard passes\n", w)
			fi }
#endif
		/* Statement 3, the handler's. */
		if
		:: hs ->
			atomic {
				if
				:: pr == P_OK && txa[w] ->
#ifndef NO_P5
					/* P5: it runs only under the lock, for a key not answered. */
					assert(lock[k] == w + 1 && !DONE_LIVE(k));
#endif
					wr = 1; printf("worker %d: the handler's statement writes, in the transaction\n", w)
				:: pr == P_OK && !txa[w] -> pr = P_LOST
#ifdef MUT_NO_SKIP
				:: pr == P_RAISED && txa[w] ->
					/* Not skipped: it runs outside the failed transaction. */
#ifndef NO_P5
					assert(lock[k] == w + 1 && !DONE_LIVE(k));
#endif
					printf("worker %d: the handler's statement is not skipped: its write commits on its own\n", w);
					WRITE_COMMITS(k)
#endif
				:: else   /* skipped, or the connection is gone */
				fi }
		:: else
		fi;

		if
		:: pr == P_OK ->
			/* The claim is known: the handler goes on. */
#if defined(OUTSIDE) && !defined(MUT_OUTSIDE_FIRST)
			if
			:: hs -> atomic { ext[k]++;
				printf("worker %d: the handler calls the card network (call %d for scope %d)\n", w, ext[k], s);
#ifdef LIMIT
				assert(ext[k] <= 1)
#endif
				}
			:: else   /* a handler with no statement calls no one */
			fi;
#endif
#ifdef PROVIDER
			call_b();   /* the handler calls B (provider.pml) */
#endif
			/* The record, and COMMIT with the handler's writes. */
			atomic {
				if
				:: txa[w] && !PK_CONFLICT(k) ->
					ntok[k]++; t = ntok[k];
					rst[k] = R_DONE; rtok[k] = t; rsc[k] = s; rfp[k] = fp; rlap[k] = 0;
					COMMIT(k, t); SYNC_ALL;
					c = A200; sc = s; rf = fp; e = t;
					printf("worker %d: commits the record and the work: execution %d\n", w, t);
					if :: wr -> WRITE_COMMITS(k) :: else fi
				:: txa[w] && PK_CONFLICT(k) -> c = A409;   /* the fence fails: rolled back */
					printf("worker %d: the primary key refuses the record: rolled back\n", w)
				:: !txa[w] -> c = A5XX;                    /* the connection is gone: rolled back */
					printf("worker %d: its transaction is gone: the work is undone\n", w)
				fi;
				end_tx() }
		:: pr == P_RAISED ->
			/* ErrNotClaimed: ROLLBACK, the handler's response thrown away. */
			atomic { end_tx(); got = 0;
				printf("worker %d: not claimed: rolls back, throws the handler's response away\n", w) }
			/* The autocommit lookup: answer as the claim would have. */
			atomic { look();
				if
				:: c == 0 -> c = A409
				:: else
				fi }
		:: pr == P_LOST ->
			atomic { end_tx(); got = 0; c = A5XX;
				printf("worker %d: its connection is gone: the handler fails\n", w) }
		fi;
		atomic { answer(src, c, sc, rf, e);
			wsrc[w] = 0; wkey[w] = 0; txa[w] = 0;
			src = 0; s = 0; k = 0; t = 0; c = 0; sc = 0; e = 0; pr = 0; fp = 0; rf = 0; got = 0; hs = 0; wr = 0
#ifdef MUT_SAME_STMT
			; blk = 0
#endif
#ifdef PROVIDER
			; bk = 0; bc = 0
#endif
			}
	} unless {
		/* The worker crashes: its connection closes, and with it the
		 * transaction and the lock. */
		kill[w] -> atomic { printf("worker %d: crashes\n", w); kill[w] = 0; wsrc[w] = 0; wkey[w] = 0;
			end_tx();
			src = 0; s = 0; k = 0; t = 0; c = 0; sc = 0; e = 0; pr = 0; fp = 0; rf = 0; got = 0; hs = 0; wr = 0
#ifdef MUT_SAME_STMT
			; blk = 0
#endif
#ifdef PROVIDER
			; bk = 0; bc = 0
#endif
			}
	}
	od
}
