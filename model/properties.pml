/*
 * The properties. P1, P3, P4 and P5 are assertions in the processes:
 *
 *   P1 (COMMIT, idem.pml)   the outcome of one (scope, key), and in a
 *                           transaction its effect, commits at most once;
 *   P3 (client.pml)         an answer is the answer of the execution that
 *                           committed, for the same request (fingerprint);
 *   P4 (client.pml)         an answer never crosses scopes;
 *   P5 (lease.pml,          one holder at a time: a claim never takes a
 *       advisory.pml,       key another worker holds; a lock holder never
 *       pipelined.pml)      runs the handler for a key already answered;
 *                           in PIPELINED the handler's statement executes
 *                           only for the lock's holder, on a key not
 *                           answered;
 *   P1W (pipelined.pml)     PIPELINED: the handler's database writes of one
 *                           (scope, key) commit at most once.
 *
 * With the second hop (-DPROVIDER, provider.pml), the handler's call to a
 * provider B that is itself protected by idem:
 *
 *   P1B (provider.pml)      B charges at most once for one (scope, key),
 *                           whatever the re-runs of the parent request;
 *   P2B (COMMIT, idem.pml)  an outcome commits only after B charged for
 *                           its (scope, key): a completed operation was
 *                           charged exactly once.
 *
 * P2 is the LTL formula below, checked under weak fairness: an operation
 * that was sent ends, on disk, completed, failed, refused or expired.
 *
 * LIMIT (-DLIMIT -DOUTSIDE) asserts that the handler's call outside the
 * transaction is made at most once; it does not hold, and check.sh keeps
 * the counterexample. In PIPELINED with no connection lost, it holds for a
 * call made after the handler's first statement returned, and fails for
 * one made before it (MUT_OUTSIDE_FIRST): check.sh names it EXT1 there.
 */

#define TERM (jd == COMPLETED || jd == FAILED || jd == REFUSED || jd == EXPIRED)

ltl no_op_lost { [] (sent -> <> [] TERM) }
