/*
 * A server worker in the advisory-lock design, evaluated for pgstore's
 * transactional mode: no claim row, no lease. One READ COMMITTED
 * transaction per request, on a connection of its own:
 *
 *   BEGIN;
 *   SELECT pg_try_advisory_xact_lock(hash(scope, key));       -- statement 1
 *   SELECT ... FROM idem_keys WHERE scope = $1 AND key = $2;  -- statement 2
 *   ... the handler's writes ...
 *   INSERT INTO idem_keys ...;     -- primary key (scope, key)
 *   COMMIT;                        -- durable
 *
 * A lock that is not granted is answered 409: the key is running. The lock
 * goes with the transaction: when it ends, and when its connection dies
 * with a crashed worker or a restarted database.
 *
 * Under READ COMMITTED each statement takes its own snapshot as it starts.
 * Statement 2 starts after the lock was granted, so it sees every record
 * committed before the grant. MUT_SAME_STMT looks the record up in
 * statement 1, whose snapshot is taken before the lock is granted: a
 * record committed between the two is missed.
 */

#ifdef MUT_REPLAY_NO_FP
#define VERDICT(k, fp) ARPL
#else
#define VERDICT(k, fp) (rfp[k] != (fp) -> A422 : ARPL)
#endif

#ifdef MUT_NO_PK
#define PK_CONFLICT(k) false
#else
#define PK_CONFLICT(k) DONE_LIVE(k)   /* a live row with this (scope, key) */
#endif

/* The lookup, in the snapshot of the statement that makes it: a record
 * within its retention is reported in c; none leaves c at 0. */
inline look() {
	if
	:: DONE_LIVE(k) -> c = VERDICT(k, fp); sc = rsc[k]; rf = rfp[k]; e = rtok[k]
	:: else
	fi
}

proctype Worker(byte w) {
	byte src, s, k, t, c, sc, e;
	bit fp, rf;
end:
	do
	:: atomic { toSrv??src, s, fp -> wsrc[w] = src + 1; k = KEY(s); wkey[w] = k;
		printf("worker %d: receives a request for scope %d, fingerprint %d\n", w, s, fp) }
	{
		txa[w] = 1;   /* BEGIN */
#ifdef MUT_SAME_STMT
		/* One statement: its snapshot first, then the lock. */
		atomic { if :: txa[w] -> look() :: else -> c = A5XX fi;
			printf("worker %d: statement 1 takes its snapshot\n", w) }
		atomic {
			if
			:: c == A5XX
			:: c != A5XX && !txa[w] -> c = A5XX
			:: c != A5XX && txa[w] && lock[k] != 0 -> c = A409
			:: c != A5XX && txa[w] && lock[k] == 0 -> lock[k] = w + 1;
				printf("worker %d: gets the lock (the lookup already made: record state %d)\n", w, c)
			fi }
#else
		/* Statement 1: the lock. */
		atomic {
			if
			:: !txa[w] -> c = A5XX   /* the connection is gone */
			:: txa[w] && lock[k] != 0 -> c = A409
			:: txa[w] && lock[k] == 0 -> lock[k] = w + 1; printf("worker %d: gets the lock\n", w)
			fi }
		/* Statement 2: the lookup, in a snapshot taken now. */
		if
		:: c == 0 -> atomic { if :: txa[w] -> look() :: else -> c = A5XX fi }
		:: else
		fi;
#endif
		if
		:: c == 0 ->
			/* No record: the handler runs in the transaction. */
			atomic {
#ifndef NO_P5
				assert(!(lock[k] == w + 1 && DONE_LIVE(k)));   /* P5 */
#endif
				printf("worker %d: no record: the handler runs\n", w);
#ifdef OUTSIDE
				ext[k]++;
				printf("worker %d: the handler calls the card network (call %d for scope %d)\n", w, ext[k], s);
#ifdef LIMIT
				assert(ext[k] <= 1)
#endif
#endif
			}
			/* INSERT the record and COMMIT, with the handler's writes. */
			atomic {
				if
				:: txa[w] && !PK_CONFLICT(k) ->
					ntok[k]++; t = ntok[k];
					rst[k] = R_DONE; rtok[k] = t; rsc[k] = s; rfp[k] = fp; rlap[k] = 0;
					COMMIT(k, t); SYNC_ALL;
					c = A200; sc = s; rf = fp; e = t;
					printf("worker %d: commits the record and the work: execution %d\n", w, t)
				:: txa[w] && PK_CONFLICT(k) -> c = A5XX;   /* unique violation: rolled back */
					printf("worker %d: the primary key refuses the insert: rolled back\n", w)
				:: !txa[w] -> c = A5XX;                    /* the connection is gone: rolled back */
					printf("worker %d: its transaction is gone: the work is undone\n", w)
				fi;
				txa[w] = 0;
				if :: lock[k] == w + 1 -> lock[k] = 0 :: else fi }
		:: else ->
			/* ROLLBACK, and the lock with it. */
			atomic { txa[w] = 0; if :: lock[k] == w + 1 -> lock[k] = 0 :: else fi }
		fi;
		atomic { answer(src, c, sc, rf, e);
			wsrc[w] = 0; wkey[w] = 0; txa[w] = 0;
			src = 0; s = 0; k = 0; t = 0; c = 0; sc = 0; e = 0; fp = 0; rf = 0 }
	} unless {
		/* The worker crashes: its connection closes, and with it the
		 * transaction and the lock. */
		kill[w] -> atomic { printf("worker %d: crashes\n", w); kill[w] = 0; wsrc[w] = 0; wkey[w] = 0; txa[w] = 0;
			if :: lock[k] == w + 1 -> lock[k] = 0 :: else fi;
			src = 0; s = 0; k = 0; t = 0; c = 0; sc = 0; e = 0; fp = 0; rf = 0 }
	}
	od
}
