/*
 * A server worker in the advisory-lock design of pgstore's transactional
 * mode (WorkClaimer.ClaimWork, server/pgstore/claimwork.go): no claim row,
 * no lease. One READ COMMITTED transaction per request, on a connection of
 * its own, its first three statements pipelined:
 *
 *   BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE;
 *   SELECT pg_try_advisory_xact_lock(hash(scope, key));       -- statement 1
 *   SELECT ... FROM idem_keys WHERE scope = $1 AND key = $2;  -- statement 2
 *   ... the handler's writes ...
 *   INSERT INTO idem_keys ... ON CONFLICT (scope, key) DO UPDATE ... WHERE
 *       the row found was past its retention;                 -- the record
 *   COMMIT;                                                   -- durable
 *
 * A completed record inside its retention is replayed (or refused, for
 * another request), lock or no lock. Without the lock and without such a
 * record, the key is running: 409, or (Options.Wait) wait and claim again.
 * The lock goes with the transaction: when it ends, and when its
 * connection dies with a crashed worker or a restarted database.
 *
 * Under READ COMMITTED each statement takes its own snapshot as it starts.
 * Statement 2 starts after the lock was granted, so it sees every record
 * committed before the grant. MUT_SAME_STMT reads the record in statement
 * 1, whose snapshot is taken before the lock is granted: a record committed
 * between the two is missed.
 */

#ifdef MUT_REPLAY_NO_FP
#define VERDICT(k, fp) ARPL
#else
#define VERDICT(k, fp) (rfp[k] != (fp) -> A422 : ARPL)
#endif

/* The primary key (scope, key) refuses the insert over a live record. */
#ifdef MUT_NO_PK
#define PK_CONFLICT(k) false
#else
#define PK_CONFLICT(k) DONE_LIVE(k)
#endif

/* The lookup, in the snapshot of the statement that makes it: a record
 * within its retention is reported in c; none leaves c at 0. */
inline look() {
	if
	:: DONE_LIVE(k) -> c = VERDICT(k, fp); sc = rsc[k]; rf = rfp[k]; e = rtok[k];
		printf("worker %d: the lookup finds the record of execution %d\n", w, e)
	:: else -> printf("worker %d: the lookup finds no record\n", w)
	fi
}

/* The transaction ends (ROLLBACK, or the commit): the lock goes with it. */
inline end_tx() {
	txa[w] = 0;
	if :: lock[k] == w + 1 -> lock[k] = 0 :: else fi
}

/* The helpers above are PIPELINED's too (pipelined.pml); the worker below
 * is ADVISORY's. */
#if DESIGN == ADVISORY
proctype Worker(byte w) {
	byte src, s, k, t, c, sc, e;
	bit fp, rf, got;
#ifdef PROVIDER
	byte bk, bc;   /* the key the handler sends B, and B's answer */
#endif
end:
	do
	:: atomic { toSrv??src, s, fp -> wsrc[w] = src + 1; k = KEY(s); wkey[w] = k;
		printf("worker %d: receives a request for scope %d, fingerprint %d\n", w, s, fp) }
	{
		/* ClaimWork. */
		do
		::
#ifdef MUT_SAME_STMT
			/* BEGIN; statement 1 takes its snapshot, then the lock. */
			atomic { txa[w] = 1; printf("worker %d: statement 1 takes its snapshot\n", w); look() }
			atomic {
				if
				:: !txa[w] -> c = A5XX
				:: txa[w] && lock[k] != 0
				:: txa[w] && lock[k] == 0 -> lock[k] = w + 1; got = 1;
					printf("worker %d: statement 1 gets the lock\n", w)
				fi }
#else
			/* BEGIN; statement 1: the lock. */
			atomic { txa[w] = 1;
				if
				:: lock[k] == 0 -> lock[k] = w + 1; got = 1; printf("worker %d: gets the lock\n", w)
				:: else
				fi }
			/* Statement 2: the lookup, in a snapshot taken now. */
			atomic { if :: txa[w] -> look() :: else -> c = A5XX fi }
#endif
			if
			:: c == 0 && got && txa[w] -> break   /* acquired */
			:: c == 0 && !(got && txa[w]) ->
				/* Running elsewhere: 409, or wait for the lock and claim
				 * again. */
				atomic { end_tx(); got = 0; c = A409 }
				if
				:: break
				:: lock[k] == 0 -> c = 0
				fi
			:: c != 0 ->   /* a record to replay or refuse, or a failed statement */
				atomic { end_tx(); got = 0 }
				break
			fi
		od;

		if
		:: got ->
			/* The handler runs in the transaction. */
			atomic {
				printf("worker %d: the handler runs\n", w);
#ifndef NO_P5
				assert(!(lock[k] == w + 1 && DONE_LIVE(k)));   /* P5 */
#endif
#ifdef OUTSIDE
				ext[k]++;
				printf("worker %d: the handler calls the card network (call %d for scope %d)\n", w, ext[k], s);
#ifdef LIMIT
				assert(ext[k] <= 1)
#endif
#endif
			}
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
					printf("worker %d: commits the record and the work: execution %d\n", w, t)
				:: txa[w] && PK_CONFLICT(k) -> c = A409;   /* the fence fails: rolled back */
					printf("worker %d: the primary key refuses the record: rolled back\n", w)
				:: !txa[w] -> c = A5XX;                    /* the connection is gone: rolled back */
					printf("worker %d: its transaction is gone: the work is undone\n", w)
				fi;
				end_tx() }
		:: else
		fi;
		atomic { answer(src, c, sc, rf, e);
			wsrc[w] = 0; wkey[w] = 0; txa[w] = 0;
			src = 0; s = 0; k = 0; t = 0; c = 0; sc = 0; e = 0; fp = 0; rf = 0; got = 0
#ifdef PROVIDER
			; bk = 0; bc = 0
#endif
			}
	} unless {
		/* The worker crashes: its connection closes, and with it the
		 * transaction and the lock. */
		kill[w] -> atomic { printf("worker %d: crashes\n", w); kill[w] = 0; wsrc[w] = 0; wkey[w] = 0;
			end_tx();
			src = 0; s = 0; k = 0; t = 0; c = 0; sc = 0; e = 0; fp = 0; rf = 0; got = 0
#ifdef PROVIDER
			; bk = 0; bc = 0
#endif
			}
	}
	od
}
#endif
