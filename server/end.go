// This file holds the one table of what a claim's end means: how the work
// ended and what ending its claim did, mapped to the observed outcome, the
// reply and what to log. Middleware and RunOnce both read it, and each
// renders the reply in its own terms (an HTTP answer; a result and an
// error).

package server

import (
	"context"
	"errors"
	"log/slog"
)

// endHow is the way a first execution ended.
type endHow uint8

const (
	abandoned  endHow = iota // the work panicked or called runtime.Goexit
	notStarted               // the work never started: refused, or the store failed
	cancelled                // the handler gave up on a cancelled request without answering (Middleware only)
	answered                 // the work answered: a response, or RunOnce's result or error
)

// reply is what the caller is told, once the claim has ended.
type reply uint8

const (
	// replyPanic: the work panicked; the middleware answers 500 (or
	// re-raises http.ErrAbortHandler), RunOnce re-panics.
	replyPanic reply = iota
	// replyOverloaded: the work did not start in time (ErrOverloaded).
	replyOverloaded
	// replyLeaseLost: another run took the key over (ErrLeaseLost).
	replyLeaseLost
	// replyStoreFailed: the store failed before the work began.
	replyStoreFailed
	// replyHandlerFailed: the handler gave up without answering.
	replyHandlerFailed
	// replyCommitFailed: the work's commit failed: undone, or, if only
	// its answer was lost, recorded; a retry gets it right either way.
	replyCommitFailed
	// replyAnswer: the work's own answer (recorded, or released so a
	// retry runs again; for RunOnce, its result or its error).
	replyAnswer
	// replyUnrecorded: the work's answer, although recording it failed:
	// the work happened, and a 503 would invite a retry that runs it
	// again once the lease lapses. RunOnce returns the error with it.
	replyUnrecorded
)

// ending is what one claim's end means.
type ending struct {
	outcome Outcome
	reply   reply
	// note is a failure the reply does not show, to log at level; empty
	// if there is none.
	note  string
	level slog.Level
}

// endOf is the table: the meaning of a first execution that ended as how
// (startErr: why it did not start; record: its answer is one to record)
// and whose claim ended with res.
//
//	how         res                        outcome                 reply              note
//	abandoned   any                        handler_failed          panic              release failed
//	notStarted  any                        by startErr             by startErr        release failed
//	cancelled   lost                       lease_lost              lease lost
//	cancelled   other                      handler_failed          handler failed     release failed
//	answered    recorded, released         executed / released     answer
//	answered    lost                       lease_lost              lease lost         key taken over
//	answered    commitFailed               store_unavailable       commit failed      commit failed
//	answered    recordFailed               executed                unrecorded         not recorded
//	answered    releaseFailed              released                answer             release failed
//
// A claim refused once sent (res refused: the store had deferred it, see
// WorkClaimer) is not in the table: Middleware and RunOnce answer it as
// the claim, whatever the work did, except work that called
// runtime.Goexit or panicked with http.ErrAbortHandler (abandoned, here).
func endOf(how endHow, startErr error, record bool, res endResult) ending {
	e := ending{level: slog.LevelError}
	switch how {
	case abandoned:
		e.outcome, e.reply = OutcomeHandlerFailed, replyPanic
		if res == releaseFailed {
			e.note = "idem: release after panic failed"
		}
	case notStarted:
		switch {
		case errors.Is(startErr, ErrOverloaded):
			e.outcome, e.reply = OutcomeOverloaded, replyOverloaded
		case errors.Is(startErr, ErrLeaseLost):
			e.outcome, e.reply = OutcomeLeaseLost, replyLeaseLost
		default:
			e.outcome, e.reply = storeResult(startErr), replyStoreFailed
		}
		if res == releaseFailed {
			e.note, e.level = "idem: release after the work did not start", slog.LevelWarn
		}
	case cancelled:
		e.outcome = endedAs(OutcomeHandlerFailed, res)
		switch res {
		case lost:
			e.reply = replyLeaseLost
		case releaseFailed:
			e.reply, e.note = replyHandlerFailed, "idem: release after a cancelled request failed"
		default:
			e.reply = replyHandlerFailed
		}
	default: // answered
		// What the store did decides, not what was asked of it: an
		// outcome to record that was released is a release.
		as := OutcomeReleased
		if record && (res == recorded || res == recordFailed) {
			as = OutcomeExecuted
		}
		e.outcome = endedAs(as, res)
		switch res {
		case recorded, released:
			e.reply = replyAnswer
		case lost:
			e.reply = replyLeaseLost
			e.note, e.level = "idem: outcome not recorded, key taken over", slog.LevelWarn
		case commitFailed:
			e.reply, e.note = replyCommitFailed, "idem: commit failed"
		case recordFailed:
			e.reply, e.note = replyUnrecorded, "idem: outcome not recorded"
		default: // releaseFailed
			e.reply, e.note = replyAnswer, "idem: release failed"
		}
	}
	return e
}

// logNote logs e's note, if it has one, for the claim of k that failed
// with err.
func (e ending) logNote(log *slog.Logger, k Key, err error, attrs ...any) {
	if e.note == "" || log == nil {
		return
	}
	log.Log(context.Background(), e.level, e.note, append([]any{"scope", k.Scope, "key", k.Key, "err", err}, attrs...)...)
}
