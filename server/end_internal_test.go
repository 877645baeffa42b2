package server

import (
	"errors"
	"fmt"
	"testing"
)

// TestEndOfIsTotal walks the whole table of a claim's end: every way the
// work can end, with or without an answer to record, against every result
// of ending the claim, and checks what both Middleware and RunOnce rely on.
func TestEndOfIsTotal(t *testing.T) {
	starts := []error{nil, ErrOverloaded, ErrLeaseLost, errors.New("store down")}
	for _, how := range []endHow{abandoned, notStarted, cancelled, answered} {
		for _, record := range []bool{false, true} {
			for res := recorded; res <= releaseFailed; res++ {
				for _, startErr := range starts {
					if (how == notStarted) != (startErr != nil) {
						continue
					}
					name := fmt.Sprintf("how=%d record=%v res=%d start=%v", how, record, res, startErr)
					e := endOf(how, startErr, record, res)
					if e.outcome == "" {
						t.Errorf("%s: no outcome", name)
					}
					if (e.reply == replyLeaseLost) != (e.outcome == OutcomeLeaseLost) {
						t.Errorf("%s: reply %d with outcome %s: a lost lease is reported as one", name, e.reply, e.outcome)
					}
					if (e.reply == replyAnswer || e.reply == replyUnrecorded) && how != answered {
						t.Errorf("%s: answers with the work's answer, which there is not", name)
					}
					if e.outcome == OutcomeExecuted && !(record && (res == recorded || res == recordFailed)) {
						t.Errorf("%s: executed, but nothing was to be recorded", name)
					}
					if res == releaseFailed && e.note == "" {
						t.Errorf("%s: a failed release goes unlogged", name)
					}
					if how == answered && res == recordFailed && e.reply != replyUnrecorded {
						t.Errorf("%s: the work happened and its record failed: the answer must still be given", name)
					}
				}
			}
		}
	}
}
