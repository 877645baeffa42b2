/*
 * The network: HTTP requests and answers in flight. Workers take requests
 * in any order (random receive), so a request can be overtaken, and a
 * duplicate can arrive long after its original was answered. Bounds: at
 * most QREQ requests and QANS answers in flight, and (env.pml) none still
 * in flight once the server may have forgotten the key.
 */

#define QREQ 3
#define QANS 2

/* Answers, as the client classifies them (transport.go). */
#define A200 1  /* the first execution's answer */
#define ARPL 2  /* a replay: Idempotent-Replayed: true */
#define A409 3  /* in flight, or the lease was lost: retried */
#define A422 4  /* the key was used for another request: final */
#define A5XX 5  /* 500 or 503: retried */
#define A401 6  /* refused for want of credentials: final, and no answer */
#define HTTP(c) (c == A200 || c == ARPL -> 200 : (c == A409 -> 409 : (c == A422 -> 422 : (c == A5XX -> 500 : 401))))

chan toSrv   = [QREQ] of { byte, byte, bit };        /* source, scope, fingerprint */
chan toCli   = [QANS] of { byte, byte, bit, byte };  /* code, scope, fingerprint, execution */
chan toOther = [1]    of { byte, byte, bit, byte };

/* send_req puts the client's request on the wire; the network may lose it
 * or deliver it twice. The authentication in front of the middleware may
 * refuse it (credentials expired): 401, before idem sees it. The caller
 * has checked nfull(toSrv) and nfull(toCli). */
inline send_req() {
	if
	:: toSrv!CLIENT, 0, 0; printf("client: sends the request\n")
	:: F_NET && CAN_FAULT -> nf++; printf("network: loses the request\n")
	:: F_NET && CAN_FAULT && len(toSrv) < QREQ - 1 ->
		nf++; toSrv!CLIENT, 0, 0; toSrv!CLIENT, 0, 0;
		printf("client: sends the request; the network will deliver it twice\n")
	:: F_REFUSE && CAN_FAULT -> nf++; toCli!A401, 0, 0, 0;
		printf("client: sends the request; it is refused for its credentials (401)\n")
	fi
}

/* answer sends a worker's answer to the source of its request; the network
 * may lose it. The other client reads one answer. */
inline answer(src, code, sc, fp, e) {
	if
	:: code == A200 -> printf("worker %d: answers 200 (execution %d)\n", w, e)
	:: code == ARPL -> printf("worker %d: answers 200 from the record, replayed (execution %d)\n", w, e)
	:: else -> printf("worker %d: answers %d\n", w, HTTP(code))
	fi;
	if
	:: src == OTHER ->
		if
		:: nfull(toOther) -> toOther!code, sc, fp, e
		:: full(toOther)
		fi
	:: else ->
		if
		:: toCli!code, sc, fp, e
		:: F_NET && CAN_FAULT -> nf++; printf("network: loses the answer\n")
		fi
	fi
}
