/*
 * Generated from the client's transition table (state.go: transition) and
 * its answer classes (retry.go: isRetryableStatus, state.go: answerEvent)
 * by TestModelTable in modeltable_test.go. Do not edit: run go generate
 * in the repository's root (go test -run TestModelTable -update-model .).
 */

/* The journal's states, numbered as State is. */
#define NONE       0
#define PENDING    1
#define COMPLETED  2
#define FAILED     3
#define EXPIRED    4
#define REFUSED    5
#define ABANDONED  6

/* Events, origins, writes and what the call does next. */
#define EV_CALL        1
#define EV_EXPIRE      2
#define EV_ANSWER      3
#define EV_REJECT      4
#define EV_REFUSE      5
#define EV_GIVEUP      6
#define EV_ABANDON     7
#define EV_RETRY       0  /* not an event: the attempt is retried (isRetryableStatus) */
#define CALLER         0
#define RESUME         1
#define W_NONE         0
#define W_LAZY         1
#define W_DURABLE      2
#define A_NONE         0
#define A_SEND         1
#define A_JOURNAL      2
#define A_EXPIRED      3
#define A_ABANDONED    4
#define A_NOOPERATION  5

/* The transitions: TO_, WR_ and THEN_<from>_<event>_<origin>; a
 * (from, event, origin) with none cannot happen. */
#define TO_NONE_CALL_CALLER             PENDING
#define WR_NONE_CALL_CALLER             W_DURABLE
#define THEN_NONE_CALL_CALLER           A_SEND
#define TO_NONE_CALL_RESUME             NONE
#define WR_NONE_CALL_RESUME             W_NONE
#define THEN_NONE_CALL_RESUME           A_NOOPERATION
#define TO_PENDING_CALL_CALLER          PENDING
#define WR_PENDING_CALL_CALLER          W_NONE
#define THEN_PENDING_CALL_CALLER        A_SEND
#define TO_PENDING_CALL_RESUME          PENDING
#define WR_PENDING_CALL_RESUME          W_NONE
#define THEN_PENDING_CALL_RESUME        A_SEND
#define TO_PENDING_EXPIRE_CALLER        EXPIRED
#define WR_PENDING_EXPIRE_CALLER        W_DURABLE
#define THEN_PENDING_EXPIRE_CALLER      A_EXPIRED
#define TO_PENDING_EXPIRE_RESUME        EXPIRED
#define WR_PENDING_EXPIRE_RESUME        W_DURABLE
#define THEN_PENDING_EXPIRE_RESUME      A_EXPIRED
#define TO_PENDING_ANSWER_CALLER        COMPLETED
#define WR_PENDING_ANSWER_CALLER        W_LAZY
#define THEN_PENDING_ANSWER_CALLER      A_NONE
#define TO_PENDING_ANSWER_RESUME        COMPLETED
#define WR_PENDING_ANSWER_RESUME        W_LAZY
#define THEN_PENDING_ANSWER_RESUME      A_NONE
#define TO_PENDING_REJECT_CALLER        FAILED
#define WR_PENDING_REJECT_CALLER        W_LAZY
#define THEN_PENDING_REJECT_CALLER      A_NONE
#define TO_PENDING_REJECT_RESUME        FAILED
#define WR_PENDING_REJECT_RESUME        W_LAZY
#define THEN_PENDING_REJECT_RESUME      A_NONE
#define TO_PENDING_REFUSE_CALLER        REFUSED
#define WR_PENDING_REFUSE_CALLER        W_DURABLE
#define THEN_PENDING_REFUSE_CALLER      A_NONE
#define TO_PENDING_REFUSE_RESUME        REFUSED
#define WR_PENDING_REFUSE_RESUME        W_DURABLE
#define THEN_PENDING_REFUSE_RESUME      A_NONE
#define TO_PENDING_GIVEUP_CALLER        PENDING
#define WR_PENDING_GIVEUP_CALLER        W_NONE
#define THEN_PENDING_GIVEUP_CALLER      A_NONE
#define TO_PENDING_GIVEUP_RESUME        PENDING
#define WR_PENDING_GIVEUP_RESUME        W_NONE
#define THEN_PENDING_GIVEUP_RESUME      A_NONE
#define TO_PENDING_ABANDON_CALLER       ABANDONED
#define WR_PENDING_ABANDON_CALLER       W_DURABLE
#define THEN_PENDING_ABANDON_CALLER     A_NONE
#define TO_PENDING_ABANDON_RESUME       ABANDONED
#define WR_PENDING_ABANDON_RESUME       W_DURABLE
#define THEN_PENDING_ABANDON_RESUME     A_NONE
#define TO_COMPLETED_CALL_CALLER        COMPLETED
#define WR_COMPLETED_CALL_CALLER        W_NONE
#define THEN_COMPLETED_CALL_CALLER      A_JOURNAL
#define TO_COMPLETED_CALL_RESUME        COMPLETED
#define WR_COMPLETED_CALL_RESUME        W_NONE
#define THEN_COMPLETED_CALL_RESUME      A_JOURNAL
#define TO_FAILED_CALL_CALLER           FAILED
#define WR_FAILED_CALL_CALLER           W_NONE
#define THEN_FAILED_CALL_CALLER         A_JOURNAL
#define TO_FAILED_CALL_RESUME           FAILED
#define WR_FAILED_CALL_RESUME           W_NONE
#define THEN_FAILED_CALL_RESUME         A_JOURNAL
#define TO_EXPIRED_CALL_CALLER          EXPIRED
#define WR_EXPIRED_CALL_CALLER          W_NONE
#define THEN_EXPIRED_CALL_CALLER        A_EXPIRED
#define TO_EXPIRED_CALL_RESUME          EXPIRED
#define WR_EXPIRED_CALL_RESUME          W_NONE
#define THEN_EXPIRED_CALL_RESUME        A_EXPIRED
#define TO_REFUSED_CALL_CALLER          PENDING
#define WR_REFUSED_CALL_CALLER          W_DURABLE
#define THEN_REFUSED_CALL_CALLER        A_SEND
#define TO_REFUSED_CALL_RESUME          REFUSED
#define WR_REFUSED_CALL_RESUME          W_NONE
#define THEN_REFUSED_CALL_RESUME        A_JOURNAL
#define TO_REFUSED_ABANDON_CALLER       ABANDONED
#define WR_REFUSED_ABANDON_CALLER       W_DURABLE
#define THEN_REFUSED_ABANDON_CALLER     A_NONE
#define TO_REFUSED_ABANDON_RESUME       ABANDONED
#define WR_REFUSED_ABANDON_RESUME       W_DURABLE
#define THEN_REFUSED_ABANDON_RESUME     A_NONE
#define TO_ABANDONED_CALL_CALLER        ABANDONED
#define WR_ABANDONED_CALL_CALLER        W_NONE
#define THEN_ABANDONED_CALL_CALLER      A_ABANDONED
#define TO_ABANDONED_CALL_RESUME        ABANDONED
#define WR_ABANDONED_CALL_RESUME        W_NONE
#define THEN_ABANDONED_CALL_RESUME      A_ABANDONED

/* The event each answer of the model (network.pml) is to the client. */
#define EVENT_A200      EV_ANSWER  /* 200 */
#define EVENT_ARPL      EV_ANSWER  /* 200, replayed */
#define EVENT_A409      EV_RETRY   /* 409 */
#define EVENT_A422      EV_REJECT  /* 422 */
#define EVENT_A5XX      EV_RETRY   /* 500 */
#define EVENT_A5XX_503  EV_RETRY   /* 503 */
#define EVENT_A401      EV_REFUSE  /* 401 */
