// This file tests the transition table of state.go, row by row and pair
// by pair, and reading older records of refusals.

package idem

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	allStates  = []State{stateNone, Pending, Completed, Failed, Expired, Refused, Abandoned}
	allEvents  = []event{evCall, evExpire, evAnswer, evReject, evRefuse, evGiveUp, evAbandon}
	allOrigins = []origin{fromCaller, fromResume}
)

// transitionTable is the table in transition's doc comment, read from
// state.go, so that the documented table and the function cannot drift
// apart: every row must be what transition does, and every (from, event,
// origin) the table leaves out must be refused.
func transitionTable(t *testing.T) map[[3]uint8]step {
	t.Helper()
	src, err := os.ReadFile("state.go")
	require.NoError(t, err)
	_, doc, ok := strings.Cut(string(src), "//\tfrom       event    origin   to         write    then\n")
	require.True(t, ok, "the table's heading is in transition's doc comment")
	doc, _, _ = strings.Cut(doc, "//\n")
	states := map[string]State{"(none)": stateNone}
	for _, s := range allStates[1:] {
		name := s.String()
		states[strings.ToUpper(name[:1])+name[1:]] = s
	}
	events := map[string]event{}
	for _, e := range allEvents {
		events[strings.ReplaceAll(e.String(), " ", "")] = e
	}
	writes := map[string]write{"-": noWrite, "lazy": lazyWrite, "durable": durableWrite}
	actions := map[string]action{"-": actNone, "send": actSend, "answer from the journal": actJournal,
		"ErrExpired": actExpired, "ErrAbandoned": actAbandoned, "ErrNoOperation": actNoOperation}
	rows := map[[3]uint8]step{}
	for _, line := range strings.Split(strings.TrimSpace(doc), "\n") {
		line = strings.TrimPrefix(line, "//\t")
		line = strings.Replace(line, "give up", "giveup", 1)
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 6, "row %q", line)
		from, okFrom := states[f[0]]
		ev, okEv := events[f[1]]
		to, okTo := states[f[3]]
		w, okW := writes[f[4]]
		then, okThen := actions[strings.Join(f[5:], " ")]
		require.True(t, okFrom && okEv && okTo && okW && okThen, "row %q", line)
		origins := allOrigins
		switch f[2] {
		case "caller":
			origins = []origin{fromCaller}
		case "Resume":
			origins = []origin{fromResume}
		default:
			require.Equal(t, "any", f[2], "row %q", line)
		}
		for _, o := range origins {
			k := [3]uint8{uint8(from), uint8(ev), uint8(o)}
			require.NotContains(t, rows, k, "row %q repeats a pair", line)
			rows[k] = step{to, w, then}
		}
	}
	return rows
}

// TestTransitionTable checks every (from, event, origin) against the
// documented table.
func TestTransitionTable(t *testing.T) {
	t.Parallel()
	table := transitionTable(t)
	require.Len(t, table, 28, "the table's rows, each origin counted")
	for _, from := range allStates {
		for _, ev := range allEvents {
			for _, o := range allOrigins {
				got, ok := transition(from, ev, o)
				want, listed := table[[3]uint8{uint8(from), uint8(ev), uint8(o)}]
				assert.Equal(t, listed, ok, "%v on %v from %v: in the table exactly when allowed", from, ev, o)
				assert.Equal(t, want, got, "%v on %v from %v", from, ev, o)
			}
		}
	}
}

// TestTransitionInvariants states what the table must never allow,
// whatever its rows say.
func TestTransitionInvariants(t *testing.T) {
	t.Parallel()
	for _, from := range allStates {
		for _, ev := range allEvents {
			for _, o := range allOrigins {
				s, ok := transition(from, ev, o)
				if !ok {
					continue
				}
				if s.then == actSend {
					assert.Equal(t, Pending, s.to, "only a pending operation is sent (%v, %v, %v)", from, ev, o)
					assert.Equal(t, evCall, ev)
				}
				if s.to == Expired && from != Expired {
					assert.Equal(t, durableWrite, s.write, "an expiry is durable: Resume must not undo it")
				}
				if s.to == Refused && from != Refused {
					assert.Equal(t, durableWrite, s.write, "a refusal is durable: the server stores none")
				}
				if from == Refused && s.to == Pending {
					assert.Equal(t, fromCaller, o, "only the caller continues a refusal")
					assert.Equal(t, durableWrite, s.write, "pending on disk before it is sent")
				}
				if from == Expired {
					assert.Equal(t, actExpired, s.then, "an expired operation is never sent again")
				}
				if from == Abandoned {
					assert.Equal(t, actAbandoned, s.then, "an abandoned operation is never sent again")
				}
				if s.to == Abandoned && from != Abandoned {
					assert.Equal(t, durableWrite, s.write, "abandoning is durable: Resume must not undo it")
				}
			}
		}
	}
}

func TestStateNames(t *testing.T) {
	t.Parallel()
	for s, want := range map[State]string{Pending: "pending", Completed: "completed", Failed: "failed",
		Expired: "expired", Refused: "refused", Abandoned: "abandoned", State(99): "State(99)"} {
		assert.Equal(t, want, s.String())
	}
	assert.Equal(t, "event(99)", event(99).String())
}

func TestAnswerEvent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status   int
		replayed bool
		want     event
	}{
		{200, false, evAnswer},
		{303, false, evAnswer},
		{400, false, evReject},
		{401, false, evRefuse},
		{401, true, evReject},
		{403, false, evRefuse},
		{407, false, evRefuse},
		{404, false, evReject},
		{422, false, evReject},
		{503, true, evReject},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, answerEvent(tc.status, tc.replayed), "%d replayed=%v", tc.status, tc.replayed)
	}
}

// TestOlderRecordsOfRefusalsReadAsRefused: records before Refused had a
// byte of its own (versions 1 and 2) hold a refusal as Failed with its
// status; they read as Refused, and a replayed 401 or another 4xx stays
// Failed. Version 3 writes Refused as it is.
func TestOlderRecordsOfRefusalsReadAsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status   int
		replayed bool
		want     State
	}{
		{http.StatusUnauthorized, false, Refused},
		{http.StatusForbidden, false, Refused},
		{http.StatusProxyAuthRequired, false, Refused},
		{http.StatusUnauthorized, true, Failed},
		{http.StatusBadRequest, false, Failed},
	}
	for _, tc := range cases {
		op := sampleOperation()
		op.State = Failed
		op.Response = &StoredResponse{StatusCode: tc.status, Replayed: tc.replayed}
		for _, version := range []byte{1, 2} {
			enc := op.appendRecord(nil, version)
			require.Equal(t, byte(Failed), enc[1], "written as the earlier releases wrote it")
			got, err := decodeOperation(enc)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.State, "version %d: %d replayed=%v", version, tc.status, tc.replayed)
		}
	}
	op := sampleOperation()
	op.State, op.Response = Refused, &StoredResponse{StatusCode: http.StatusUnauthorized}
	enc := op.encode(nil)
	require.Equal(t, []byte{recordVersion, byte(Refused)}, enc[:2])
	got, err := decodeOperation(enc)
	require.NoError(t, err)
	assert.Equal(t, Refused, got.State)
}
