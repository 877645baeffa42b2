/*
 * The client process: Client.Do and Client.Resume over a journal, for one
 * operation. Its journal state moves by the table of transition in
 * state.go; each row is marked below as (from, event, origin). Each branch
 * of the loop is one atomic step, so a crash can fall between any two.
 *
 * The journal state (js in memory, jd on disk) is one of NONE, PENDING,
 * REFUSED, COMPLETED, FAILED, EXPIRED. The call lives in memory only:
 */
#define C_IDLE  0  /* no call running */
#define C_SEND  1  /* an attempt is due: the first, or a retry */
#define C_AWAIT 2  /* an attempt is out */
#define C_UNJ   3  /* MUT_JOURNAL_AFTER: sent, not journaled yet */
bit resumed;       /* the call running is Resume's (origin fromResume) */

#define INFLIGHT (toSrv??[CLIENT, _, _] || len(toCli) > 0 || wsrc[0] == CLIENT + 1 || wsrc[1] == CLIENT + 1)

/* The retention check before every attempt (tooLate): past the margin, an
 * attempt could reach the server after it forgot the key. The mutant
 * skips it in calls from Resume. */
#ifdef MUT_RESUME_EXPIRED
#define TOO_LATE (phase > 0 && !resumed)
#else
#define TOO_LATE (phase > 0)
#endif

/* A durable journal write (bbolt commit and fsync: Journal.begin,
 * updateNow). Lazy writes queued before it go to disk with it. */
inline journal_now(st) {
	js = st; jd = st
}

/* A move of the transition table (client_table.pml, generated from
 * state.go): the state it leads to, written durably, lazily (visible to
 * the process, on disk with the next commit) or not at all. MOVE names
 * the row (from, event, origin); a row the table lacks does not compile. */
inline move(to, wr) {
	if
	:: wr == W_DURABLE -> journal_now(to)
	:: wr == W_LAZY -> js = to
	:: else -> assert(js == to)
	fi
}
#define MOVE(f, e, o) move(TO_##f##_##e##_##o, WR_##f##_##e##_##o)
/* What the call does after the row: send, or end. */
#define NEXT(f, e, o) (THEN_##f##_##e##_##o == A_SEND -> C_SEND : C_IDLE)
/* The event an answer is to the client (isRetryableStatus, answerEvent). */
#define EVENT(c) (c == A200 -> EVENT_A200 : (c == ARPL -> EVENT_ARPL : (c == A409 -> EVENT_A409 : \
	(c == A422 -> EVENT_A422 : (c == A5XX -> EVENT_A5XX : EVENT_A401)))))

proctype Client() {
	byte c, sc, e;
	bit fp;
end:
	do
	/* (none, call, caller) -> Pending, durable, send: Do journals the
	 * operation before its first attempt. */
	:: atomic { !started -> started = 1;
#ifndef MUT_JOURNAL_AFTER
		MOVE(NONE, CALL, CALLER);
#endif
		cs = NEXT(NONE, CALL, CALLER); resumed = 0 }

	/* An attempt: same key, same bytes. (Pending, expire) -> Expired,
	 * durable, ErrExpired: too late for it. */
	:: atomic { cs == C_SEND && nfull(toSrv) && nfull(toCli) ->
		if
		:: TOO_LATE -> MOVE(PENDING, EXPIRE, CALLER); cs = NEXT(PENDING, EXPIRE, CALLER);
			printf("client: too near the key's retention: expired, written durably\n")
		:: else -> send_req(); sent = 1; cs = (js == NONE -> C_UNJ : C_AWAIT)
		fi }

#ifdef MUT_JOURNAL_AFTER
	/* The mutant journals the operation after its first attempt. */
	:: atomic { cs == C_UNJ -> MOVE(NONE, CALL, CALLER); cs = C_AWAIT }
#endif

	/* A final answer ends the call; 409 and 5xx are retried. */
	:: atomic { toCli?c, sc, fp, e ->
		if
		:: cs == C_AWAIT ->
			if
			:: EVENT(c) == EV_ANSWER ->    /* (Pending, answer) */
				assert(sc == 0);                             /* P4 */
				assert(fp == 0 && e == committed[KEY(0)]);   /* P3 */
				MOVE(PENDING, ANSWER, CALLER); cs = NEXT(PENDING, ANSWER, CALLER);
				printf("client: gets %d (execution %d): state %d\n", HTTP(c), e, js)
			:: EVENT(c) == EV_REJECT ->    /* (Pending, reject) */
				MOVE(PENDING, REJECT, CALLER); cs = NEXT(PENDING, REJECT, CALLER);
				printf("client: gets %d: state %d\n", HTTP(c), js)
			:: EVENT(c) == EV_REFUSE ->    /* (Pending, refuse) */
				MOVE(PENDING, REFUSE, CALLER); cs = NEXT(PENDING, REFUSE, CALLER);
				printf("client: gets %d: state %d, written durably\n", HTTP(c), js)
			:: EVENT(c) == EV_RETRY -> cs = C_SEND;
				printf("client: gets %d: retries\n", HTTP(c))
			fi
		:: else   /* the answer to an attempt the call gave up on */
		fi;
		c = 0; sc = 0; fp = 0; e = 0 }

	/* No answer is coming (the request or the answer was lost, or the
	 * worker died): the attempt times out, and is retried. */
	:: atomic { cs == C_AWAIT && !INFLIGHT -> cs = C_SEND }
	/* ... or it times out although the answer is still coming. */
	:: atomic { F_TIMEOUT && CAN_FAULT && cs == C_AWAIT -> nf++; cs = C_SEND }

	/* (Refused, call, caller) -> Pending, durable, send: the caller, its
	 * credentials fixed, calls again with the key. */
	:: atomic { js == REFUSED && cs == C_IDLE -> MOVE(REFUSED, CALL, CALLER); cs = NEXT(REFUSED, CALL, CALLER); resumed = 0 }

	/* The journal's committer writes the lazy outcome (within 20 ms). */
	:: atomic { jd != js -> jd = js }

	/* The process crashes: what was not on disk is lost, and so is the
	 * call. It restarts and calls Resume: (Pending, call, Resume) ->
	 * Pending, send; (Refused, call, Resume) leaves a refusal alone. */
	:: atomic { F_CCRASH && CAN_FAULT && started -> nf++;
		printf("client: crashes (on disk: state %d) and restarts with Resume\n", jd);
		js = jd; cs = C_IDLE;
		if
		:: js == PENDING -> MOVE(PENDING, CALL, RESUME); cs = NEXT(PENDING, CALL, RESUME); resumed = 1
		:: js == REFUSED -> MOVE(REFUSED, CALL, RESUME); cs = NEXT(REFUSED, CALL, RESUME)
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
