/*
 * Everything that happens to the processes rather than by them: database
 * restarts, worker crashes, leases lapsing, the retention running out.
 * Under weak fairness (the liveness check) this process must keep moving,
 * so a crashed worker's lease does lapse; faults never have to happen,
 * since it may declare them over (calm).
 */

/* A live worker holds the token of the running record k. */
#define OWNED(k) (wsrc[0] != 0 && wkey[0] == (k) && wtok[0] == rtok[k] || \
                  wsrc[1] != 0 && wkey[1] == (k) && wtok[1] == rtok[k])
/* Lapse of k's lease: free if no live worker holds it, else a pause. */
#define CAN_LAPSE(k) (rst[k] == R_RUNNING && !rlap[k] && (!OWNED(k) || F_PAUSE && CAN_FAULT))
/* Nothing for scope 0 in flight: no request on the wire, no worker on one. */
#define QUIET (!toSrv??[_, 0, _] && \
               !(wsrc[0] != 0 && wkey[0] == 0) && !(wsrc[1] != 0 && wkey[1] == 0))

inline lapse(k) {
	if
	:: OWNED(k) -> nf++; printf("the lease of token %d lapses: its worker is paused\n", rtok[k])
	:: else -> printf("the lease of token %d lapses: no live worker holds it\n", rtok[k])
	fi;
	rlap[k] = 1
}

inline restore(k) {
	rst[k] = dst[k]; rtok[k] = dtok[k]; rsc[k] = dsc[k]; rfp[k] = dfp[k]; rlap[k] = dlap[k]; ffp[k] = dffp[k]
}

proctype Env() {
end:
	do
	/* The database restarts: open transactions roll back, advisory locks
	 * go, and what was committed asynchronously (a claim, a takeover, a
	 * renewal, a release) is lost unless the WAL writer had flushed it. */
	:: atomic { F_RESTART && CAN_FAULT -> nf++; printf("the database restarts\n");
		if :: restore(0) :: skip fi;   /* the WAL writer had flushed it, or not */
		if :: restore(1) :: skip fi;
		txa[0] = 0; txa[1] = 0; lock[0] = 0; lock[1] = 0 }

	/* A worker crashes, at whatever step it is. */
	:: atomic { F_WCRASH && CAN_FAULT && wsrc[0] != 0 && !kill[0] -> nf++; kill[0] = 1 }
	:: atomic { F_WCRASH && CAN_FAULT && wsrc[1] != 0 && !kill[1] -> nf++; kill[1] = 1 }

	/* A lease lapses (the database's clock). */
	:: atomic { CAN_LAPSE(0) -> lapse(0) }
	:: atomic { CAN_LAPSE(1) -> lapse(1) }

	/* Time passes: the client stops sending (it checks the retention
	 * before every attempt), then, once nothing is in flight (every delay
	 * is shorter than the attempt timeout), the server may forget the key. */
	:: atomic { F_EXPIRY && phase == 0 && sent -> phase = 1;
		printf("time: the key is near the end of its retention\n") }
	:: atomic { F_EXPIRY && phase == 1 && QUIET -> phase = 2;
		printf("time: the key's retention is over: the server may forget it\n") }

#ifdef LIVENESS
	:: atomic { !calm -> calm = 1 }
	/* Nothing else can move: time goes on (for the fairness check, the
	 * run does not end but stutters here). */
	:: timeout -> skip
#endif
	od
}
