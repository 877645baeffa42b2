/*
 * The client process: Client.Do and Client.Resume over a journal
 * (client.go, journal.go, resume.go, transport.go), for one operation.
 * Each branch of the loop is one atomic step, so a crash can fall between
 * any two of them.
 *
 * The journal state (js in memory, jd on disk) is one of NONE, PENDING,
 * REFUSED, COMPLETED, FAILED, EXPIRED (record.go's State). The call state
 * lives in memory only:
 */
#define C_IDLE  0  /* no call running: not started, or answered */
#define C_FIRST 1  /* a call's first attempt is due (Do, Resume, a continued refusal) */
#define C_RETRY 2  /* a retry is due: after 409, 5xx, or no answer */
#define C_AWAIT 3  /* an attempt is out */
#define C_UNJ   4  /* MUT_JOURNAL_AFTER: sent, not journaled yet */

#define INFLIGHT (toSrv??[CLIENT, _, _] || len(toCli) > 0 || wsrc[0] == CLIENT + 1 || wsrc[1] == CLIENT + 1)

/* A durable journal write: bbolt commit and fsync (journal.begin,
 * updateNow). Lazy writes queued before it go to disk with it. */
inline journal_now(st) {
	js = st; jd = st
}

/* Client.expire: near the key's retention nothing more is sent; the
 * operation is marked expired, durably, for reconciliation. */
inline expire() {
	journal_now(EXPIRED); cs = C_IDLE
}

proctype Client() {
	byte c, sc, e;
	bit fp;
end:
	do
	/* Do: journal.begin writes the operation, durably, before the first
	 * attempt. */
	:: atomic { !started -> started = 1;
#ifndef MUT_JOURNAL_AFTER
		journal_now(PENDING);
#endif
		cs = C_FIRST }

	/* An attempt: same key, same bytes. Before a retry, pastRetention: its
	 * answer could come after the server forgot the key. */
	:: atomic { (cs == C_FIRST || cs == C_RETRY) && nfull(toSrv) && nfull(toCli) ->
		if
		:: cs == C_RETRY && phase > 0 -> expire()
		:: else -> send_req(); sent = 1; cs = (js == NONE -> C_UNJ : C_AWAIT)
		fi }

#ifdef MUT_JOURNAL_AFTER
	/* The mutant journals the operation after its first attempt. */
	:: atomic { cs == C_UNJ -> journal_now(PENDING); cs = C_AWAIT }
#endif

	/* An answer. Final ones are journaled lazily (a lost write costs a
	 * resend that the server replays), except a refusal, of which the
	 * server keeps no record (updateNow). */
	:: atomic { toCli?c, sc, fp, e ->
		if
		:: cs == C_AWAIT ->
			if
			:: c == A200 || c == ARPL ->
				assert(sc == 0);                             /* P4 */
				assert(fp == 0 && e == committed[KEY(0)]);   /* P3 */
				js = COMPLETED; cs = C_IDLE;
				printf("client: gets 200 (execution %d): completed, written lazily\n", e)
			:: c == A422 -> js = FAILED; cs = C_IDLE;       /* ErrKeyReused */
				printf("client: gets 422: failed, written lazily\n")
			:: c == A401 -> journal_now(REFUSED); cs = C_IDLE;
				printf("client: gets 401: refused, written durably\n")
			:: c == A409 || c == A5XX -> cs = C_RETRY;
				printf("client: gets %d: will retry\n", HTTP(c))
			fi
		:: else   /* for an attempt this call gave up on */
		fi;
		c = 0; sc = 0; fp = 0; e = 0 }

	/* No answer is coming (the request or the answer was lost, or the
	 * worker died): the attempt times out. */
	:: atomic { cs == C_AWAIT && !INFLIGHT -> cs = C_RETRY }
	/* ... or it times out although the answer is still coming. */
	:: atomic { F_TIMEOUT && CAN_FAULT && cs == C_AWAIT -> nf++; cs = C_RETRY }

	/* The caller, credentials fixed, calls Do again with the key of the
	 * refused operation: pending again, on disk, before it is sent. */
	:: atomic { js == REFUSED && cs == C_IDLE ->
		if
		:: phase > 0 -> expire()
		:: else -> journal_now(PENDING); cs = C_FIRST
		fi }

	/* The journal's committer writes the lazy outcome (within 20 ms). */
	:: atomic { jd != js -> jd = js }

	/* The process crashes: what was not on disk is lost, and so is the
	 * call in progress. It restarts and calls Resume, which continues a
	 * pending operation, or expires it past its retention. */
	:: atomic { F_CCRASH && CAN_FAULT && started -> nf++;
		printf("client: crashes (the journal on disk says %d) and calls Resume\n", jd);
		js = jd; cs = C_IDLE;
		if
		:: js == PENDING ->
			if
#ifndef MUT_RESUME_EXPIRED
			:: phase > 0 -> expire()
#endif
			:: else -> cs = C_FIRST
			fi
		:: else
		fi }
	od
}

/* Another client with the same Idempotency-Key: in scope 1 with the same
 * body, or in scope 0 with another body (fingerprint 1). It sends once,
 * while the key is within retention, and reads one answer. */
proctype Other() {
	byte c, sc, e, s;
	bit fp, afp;
end_send:
	if
	:: atomic { nfull(toSrv) -> s = 1; toSrv!OTHER, 1, 0 }
	:: atomic { phase == 0 && nfull(toSrv) -> fp = 1; toSrv!OTHER, 0, 1 }
	fi;
end_answer:
	toOther?c, sc, afp, e;
	if
	:: c == A200 || c == ARPL ->
		assert(sc == s);                               /* P4 */
		assert(afp == fp && e == committed[KEY(s)])    /* P3 */
	:: else
	fi
}
