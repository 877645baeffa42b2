// This file generates the model's copy of the client's transition table
// and answer classes (model/client_table.pml) from state.go and retry.go,
// and fails when the committed copy differs: the model cannot drift from
// the code it checks.

package idem

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

//go:generate go test -run ^TestModelTable$ -update-model .

var updateModel = flag.Bool("update-model", false, "rewrite model/client_table.pml from the transition table")

const modelTable = "model/client_table.pml"

// modelName is a state, event, origin, write or action as the model
// spells it.
func modelName(s fmt.Stringer) string {
	n := strings.ToUpper(strings.NewReplacer(" ", "", "(", "", ")", "").Replace(s.String()))
	switch s := s.(type) {
	case write:
		return "W_" + map[string]string{"-": "NONE"}[n] + strings.TrimPrefix(n, "-")
	case action:
		return "A_" + map[action]string{actNone: "NONE", actSend: "SEND", actJournal: "JOURNAL", actExpired: "EXPIRED",
			actAbandoned: "ABANDONED", actNoOperation: "NOOPERATION"}[s]
	case event:
		return "EV_" + n
	}
	return n
}

// stateName is a state as the model spells it (the missing record is
// NONE).
func stateName(s State) string {
	if s == stateNone {
		return "NONE"
	}
	return modelName(s)
}

// renderModelTable is model/client_table.pml: the states' numbers, every
// (from, event, origin) transition defines TO_, WR_ and THEN_ macros,
// and the event each answer of the model is to the client.
func renderModelTable() []byte {
	var b bytes.Buffer
	b.WriteString(`/*
 * Generated from the client's transition table (state.go: transition) and
 * its answer classes (retry.go: isRetryableStatus, state.go: answerEvent)
 * by TestModelTable in modeltable_test.go. Do not edit: run go generate
 * in the repository's root (go test -run TestModelTable -update-model .).
 */

/* The journal's states, numbered as State is. */
`)
	for _, s := range allStates {
		fmt.Fprintf(&b, "#define %-10s %d\n", stateName(s), s)
	}
	b.WriteString("\n/* Events, origins, writes and what the call does next. */\n")
	for _, e := range allEvents {
		fmt.Fprintf(&b, "#define %-14s %d\n", modelName(e), e)
	}
	fmt.Fprintf(&b, "#define %-14s %d  /* not an event: the attempt is retried (isRetryableStatus) */\n", "EV_RETRY", 0)
	for _, o := range allOrigins {
		fmt.Fprintf(&b, "#define %-14s %d\n", strings.ToUpper(o.String()), o)
	}
	for _, w := range []write{noWrite, lazyWrite, durableWrite} {
		fmt.Fprintf(&b, "#define %-14s %d\n", modelName(w), w)
	}
	for _, a := range []action{actNone, actSend, actJournal, actExpired, actAbandoned, actNoOperation} {
		fmt.Fprintf(&b, "#define %-14s %d\n", modelName(a), a)
	}
	b.WriteString("\n/* The transitions: TO_, WR_ and THEN_<from>_<event>_<origin>; a\n * (from, event, origin) with none cannot happen. */\n")
	for _, from := range allStates {
		for _, ev := range allEvents {
			for _, o := range allOrigins {
				st, ok := transition(from, ev, o)
				if !ok {
					continue
				}
				name := stateName(from) + "_" + strings.TrimPrefix(modelName(ev), "EV_") + "_" + strings.ToUpper(o.String())
				fmt.Fprintf(&b, "#define TO_%-28s %s\n#define WR_%-28s %s\n#define THEN_%-26s %s\n",
					name, stateName(st.to), name, modelName(st.write), name, modelName(st.then))
			}
		}
	}
	b.WriteString("\n/* The event each answer of the model (network.pml) is to the client. */\n")
	for _, a := range []struct {
		name     string
		status   int
		replayed bool
	}{
		{"A200", http.StatusOK, false}, {"ARPL", http.StatusOK, true}, {"A409", http.StatusConflict, false},
		{"A422", http.StatusUnprocessableEntity, false}, {"A5XX", http.StatusInternalServerError, false},
		{"A5XX_503", http.StatusServiceUnavailable, false}, {"A401", http.StatusUnauthorized, false},
	} {
		ev := "EV_RETRY"
		if !isRetryableStatus(a.status) {
			ev = modelName(answerEvent(a.status, a.replayed))
		}
		fmt.Fprintf(&b, "#define EVENT_%-9s %-10s /* %d%s */\n", a.name, ev, a.status, map[bool]string{true: ", replayed"}[a.replayed])
	}
	return b.Bytes()
}

// TestModelTable fails if model/client_table.pml is not what the code's
// table generates; -update-model rewrites it.
func TestModelTable(t *testing.T) {
	want := renderModelTable()
	if *updateModel {
		if err := os.WriteFile(modelTable, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(modelTable)
	if err != nil {
		t.Fatalf("%v: run go generate in the repository's root", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the transition table in state.go: run go generate in the repository's root and check the model again (model/check.sh)", modelTable)
	}
}
