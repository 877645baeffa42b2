// This file holds an operation's life: its states, the events that move
// it, where a call comes from, and the one transition function that says
// what each event does to each state.

package idem

import (
	"fmt"
	"net/http"
)

// State is where a journaled operation stands. An operation moves between
// states on events, and this table is every move there is: what each event
// does to each state, for a call by the application (caller: Do, DoNamed)
// or by Resume; whether the new state is written before the call goes on
// (durable) or with the next commit (lazy; lost in a crash, the operation
// is pending again and the server replays its answer); and what the call
// does then.
//
//	from       event    origin   to         write    then
//	(none)     call     caller   Pending    durable  send
//	(none)     call     Resume   (none)     -        ErrNoOperation
//	Pending    call     any      Pending    -        send
//	Refused    call     caller   Pending    durable  send
//	Refused    call     Resume   Refused    -        answer from the journal
//	Completed  call     any      Completed  -        answer from the journal
//	Failed     call     any      Failed     -        answer from the journal
//	Expired    call     any      Expired    -        ErrExpired
//	Abandoned  call     any      Abandoned  -        ErrAbandoned
//	Pending    expire   any      Expired    durable  ErrExpired
//	Pending    answer   any      Completed  lazy     -
//	Pending    reject   any      Failed     lazy     -
//	Pending    refuse   any      Refused    durable  -
//	Pending    give up  any      Pending    -        -
//	Pending    abandon  any      Abandoned  durable  -
//	Refused    abandon  any      Abandoned  durable  -
//
// The events: call, a call with the operation's key begins; expire, its
// next attempt, the first included, could reach the server after the key's
// retention (Options.KeyRetention), so it is not sent; answer, a final
// status below 400; reject, a final status of 400 or more that is not a
// refusal; refuse, a 401, 403 or 407 that is not a replay; give up, the
// call ends without a final answer (retries, budget or time ran out, the
// context ended); abandon, Journal.Abandon. An event the table does not
// list for a state cannot happen in it.
//
// A call is refused before any move if the journal holds its key for a
// different request (ErrKeyReused). A new operation is written in the
// same transaction that finds its key unknown. Resume finds no record
// only for an operation abandoned and purged since it listed it: it is
// not sent.
//
// Every write is compare-and-set: the record is written only if, read
// again in the write's own transaction, it is still in the state the
// transition was made from; otherwise nothing is written and the call
// fails with the error the state it found calls for (ErrAbandoned,
// ErrExpired, ErrNoOperation). Calls with one key run one at a time (see
// keyLocks), and a call reads its record again before each retry, so a
// call does not send an operation the journal no longer holds pending.
type State uint8

const (
	// Pending: journaled, no final answer yet. Do with the same key, or
	// Resume, continues it with the same key and bytes.
	Pending State = 1 + iota
	// Completed: the server answered 2xx or 3xx.
	Completed
	// Failed: the server gave a final status of 400 or more (a 4xx or 5xx
	// that is not retried, or any replayed non-success status), other
	// than a refusal.
	Failed
	// Expired: still pending when the server's key retention ran out, so
	// it was not sent again. It needs reconciling.
	Expired
	// Refused: the server turned the request away for want of credentials
	// (401, 403 or 407, not a replay) before running it. That is no answer
	// to the operation: an earlier attempt may have run. Resume leaves a
	// refused operation alone (the caller was told); a call with the same
	// key, once the credentials are right, makes it pending again and
	// continues it.
	//
	// Journals written before this state had a name hold a refusal as
	// Failed with such a status; they read as Refused.
	Refused
	// Abandoned: given up on purpose with Journal.Abandon, while pending or
	// refused, typically after reconciling it by other means. It is never
	// sent again: Resume leaves it, and a call with its key gets
	// ErrAbandoned. The record stays, as a record, until it is purged.
	Abandoned
)

// stateNone stands for "no record": the key is not in the journal yet.
const stateNone State = 0

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	case Expired:
		return "expired"
	case Refused:
		return "refused"
	case Abandoned:
		return "abandoned"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// isRefusal reports whether a final response is a refusal for want of
// credentials: 401, 403 or 407, not replayed. A replay is the server's
// stored answer to an attempt it ran, so it is no refusal.
func isRefusal(status int, replayed bool) bool {
	return !replayed && (status == http.StatusUnauthorized || status == http.StatusForbidden ||
		status == http.StatusProxyAuthRequired)
}

// origin says who makes a call, since a refused operation is continued by
// one and not the other.
type origin uint8

const (
	// fromCaller: the application's own call, Do or DoNamed.
	fromCaller origin = iota
	// fromResume: Resume, continuing what an earlier process left.
	fromResume
)

func (o origin) String() string {
	if o == fromResume {
		return "Resume"
	}
	return "caller"
}

// event is something that happens to an operation.
type event uint8

const (
	// evCall: a call with the operation's key begins (Do, DoNamed or
	// Resume, told apart by origin).
	evCall event = 1 + iota
	// evExpire: the next attempt, first or retry, could reach the server
	// after the key's retention (see tooLate), so it is not sent.
	evExpire
	// evAnswer: a final answer of 1xx to 3xx.
	evAnswer
	// evReject: a final answer of 400 or more that is not a refusal.
	evReject
	// evRefuse: a refusal for want of credentials (see isRefusal).
	evRefuse
	// evGiveUp: the call ends without a final answer: retries, budget or
	// time ran out, the context ended, a hook or the transport failed.
	evGiveUp
	// evAbandon: Journal.Abandon gives the operation up.
	evAbandon
)

var eventNames = [...]string{evCall: "call", evExpire: "expire", evAnswer: "answer", evReject: "reject",
	evRefuse: "refuse", evGiveUp: "give up", evAbandon: "abandon"}

func (e event) String() string {
	if int(e) < len(eventNames) && eventNames[e] != "" {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", uint8(e))
}

// answerEvent returns the event a final response is: an answer, a
// refusal or a rejection.
func answerEvent(status int, replayed bool) event {
	switch {
	case status < 400:
		return evAnswer
	case isRefusal(status, replayed):
		return evRefuse
	}
	return evReject
}

// write says how a transition reaches the journal.
type write uint8

const (
	// noWrite: the record stays as it is.
	noWrite write = iota
	// lazyWrite: visible to this process at once, on disk with the next
	// commit (within lazyFlushDelay). Lost in a crash, the operation is
	// pending again, and resending it gets the server's replay.
	lazyWrite
	// durableWrite: on disk before the call goes on; a crash cannot undo
	// it. For what no server replay makes good: a new operation, a refusal
	// (the server stores none), an expiry (Resume must not send it).
	durableWrite
)

func (w write) String() string {
	return [...]string{"-", "lazy", "durable"}[w]
}

// action is what the call does once the transition is made.
type action uint8

const (
	// actNone: nothing more; the event ended the call.
	actNone action = iota
	// actSend: make attempts.
	actSend
	// actJournal: answer from the journal's record, without the network.
	actJournal
	// actExpired: fail with ErrExpired, without the network.
	actExpired
	// actAbandoned: fail with ErrAbandoned, without the network.
	actAbandoned
	// actNoOperation: fail with ErrNoOperation, without the network.
	actNoOperation
)

func (a action) String() string {
	return [...]string{"-", "send", "answer from the journal", "ErrExpired", "ErrAbandoned", "ErrNoOperation"}[a]
}

// step is one transition: the state it leads to, how it is written, and
// what the call does next.
type step struct {
	to    State
	write write
	then  action
}

// transition returns what event ev does to an operation in state from, for
// a call from o. ok is false for an event that cannot happen in that
// state. It is the whole of an operation's life, as the table in State's
// doc comment gives it; TestTransitionTable holds the one to the other.
func transition(from State, ev event, o origin) (s step, ok bool) {
	switch ev {
	case evCall:
		switch from {
		case stateNone:
			if o == fromCaller {
				return step{Pending, durableWrite, actSend}, true
			}
			return step{stateNone, noWrite, actNoOperation}, true
		case Pending:
			return step{Pending, noWrite, actSend}, true
		case Refused:
			if o == fromCaller {
				return step{Pending, durableWrite, actSend}, true
			}
			return step{Refused, noWrite, actJournal}, true
		case Completed, Failed:
			return step{from, noWrite, actJournal}, true
		case Expired:
			return step{Expired, noWrite, actExpired}, true
		case Abandoned:
			return step{Abandoned, noWrite, actAbandoned}, true
		}
	case evExpire:
		if from == Pending {
			return step{Expired, durableWrite, actExpired}, true
		}
	case evAnswer:
		if from == Pending {
			return step{Completed, lazyWrite, actNone}, true
		}
	case evReject:
		if from == Pending {
			return step{Failed, lazyWrite, actNone}, true
		}
	case evRefuse:
		if from == Pending {
			return step{Refused, durableWrite, actNone}, true
		}
	case evGiveUp:
		if from == Pending {
			return step{Pending, noWrite, actNone}, true
		}
	case evAbandon:
		if from == Pending || from == Refused {
			return step{Abandoned, durableWrite, actNone}, true
		}
	}
	return step{}, false
}
