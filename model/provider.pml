/*
 * The second hop (-DPROVIDER): the service's handler calls a provider B
 * (a card network) that is itself protected by idem. B claims the key it
 * receives, charges, and records its outcome; a repeat of the key with the
 * same body is replayed, with another body refused (422). Hop one shows
 * that such a server commits one outcome per key, its effect with it (P1,
 * LEASE_TX and ADVISORY), so B is one atomic step here: claim, charge and
 * record at once. B keeps its records for the whole run: its retention is
 * taken to be no shorter than the service's.
 *
 * The handler derives the key for B from the (scope, key) it holds and the
 * step's name (idem.Step, Client.StepKey in steps.go; server.KeyFrom), so
 * every run of the parent request sends B the same key: a retry after a
 * lost answer, a takeover after a crash or a lapsed lease, a re-run after
 * the parent's transaction rolled back. Every request here carries the
 * same Idempotency-Key, so the parent's record k names the derived key.
 * MUT_FRESH_KEY mints a new key on every run of the handler instead (the
 * retries of one call keep it, as Client.Do's do).
 *
 * The call is synchronous: the handler waits for B's answer. The request
 * to B can be lost (B does nothing) and B's answer can be lost (B charged);
 * either way no answer comes, and the handler's client retries with the
 * same key. Each loss is a fault of the network. The service's worker can
 * crash at any step, between B's charge and its own commit too.
 * MUT_B_UNCHECKED goes on to the commit when no answer came.
 */

#define NB (NS + NW)   /* B's keys: one derived per parent key, one fresh per worker */

/* The key the handler sends B, for parent record k in worker w. A fresh
 * key is one B has never seen: its slot is cleared as it is minted (the
 * worker's previous fresh key is never sent again). */
#ifdef MUT_FRESH_KEY
#define CHILD_KEY(k, w) (NS + (w))
#define MINT(b) bst[b] = 0; bfp[b] = 0; printf("worker %d: the handler calls B with a fresh key\n", w)
#else
#define CHILD_KEY(k, w) (k)
#define MINT(b) printf("worker %d: the handler calls B with the key derived from its own (scope %d)\n", w, s)
#endif

bit  bst[NB];   /* B's record for the key: 1 once it charged */
bit  bfp[NB];   /* the body it charged for (the parent's fingerprint) */
byte bfx[NS];   /* ghost counter: B's charges for parent (scope, key) k */

/* The handler's call to B: derive the key, send, and retry until an
 * answer comes. B's answer is left in bc: A200 (charged), ARPL (replayed)
 * or A422 (the key was used with another body: the other client's request,
 * another body in scope 0, reached B first with the same key). The handler
 * answers whatever B said; idem records 2xx and 4xx outcomes alike, so
 * the outcome commits in every case (a 5xx would be released, the path a
 * lost transaction takes). */
inline call_b() {
	atomic { bk = CHILD_KEY(k, w); bc = 0; MINT(bk) }
	do
	:: atomic {
		if
		:: F_NET && CAN_FAULT -> nf++; printf("network: loses the request to B\n")
		:: true ->
			if
			:: !bst[bk] ->
				bst[bk] = 1; bfp[bk] = fp; bfx[k]++; bc = A200;
				printf("B: claims the key and charges (charge %d for scope %d)\n", bfx[k], s);
				assert(bfx[k] <= 1)   /* P1 for B: at most once */
			:: bst[bk] && bfp[bk] == fp -> bc = ARPL;
				printf("B: the key is a repeat: replays its charge\n")
			:: bst[bk] && bfp[bk] != fp -> bc = A422;
				printf("B: the key was used with another body: 422\n")
			fi;
			if
			:: true
			:: F_NET && CAN_FAULT -> nf++; bc = 0; printf("network: loses B's answer\n")
			fi
		fi }
		if
		:: bc != 0 -> break
#ifdef MUT_B_UNCHECKED
		:: bc == 0 -> break   /* the mutant goes on without an answer */
#else
		:: bc == 0            /* no answer: the call is retried, same key */
#endif
		fi
	od
}
