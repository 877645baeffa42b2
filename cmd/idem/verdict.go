package main

// This file holds idem check's verdicts: what each probe expects, how an
// answer is judged, and the report they make.

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/idemhq/idem"
)

// Verdicts, best first.
const (
	pass = "PASS"
	skip = "SKIP"
	warn = "WARN"
	fail = "FAIL"
)

func worse(a, b string) string {
	rank := map[string]int{pass: 0, skip: 0, warn: 1, fail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// probeResult is one row of the verdict table.
type probeResult struct {
	Probe    string       `json:"probe"`
	Expected string       `json:"expected"`
	Observed string       `json:"observed"`
	Verdict  string       `json:"verdict"`
	Answers  []answerJSON `json:"answers,omitempty"`
}

type answerJSON struct {
	Status    int    `json:"status,omitempty"`
	Replayed  bool   `json:"replayed"`
	KeyReused bool   `json:"key_reused,omitempty"`
	ID        string `json:"id,omitempty"`
	Error     string `json:"error,omitempty"`
}

func answersJSON(as ...answer) []answerJSON {
	out := make([]answerJSON, len(as))
	for i, a := range as {
		out[i] = answerJSON{Status: a.status, Replayed: a.replayed, KeyReused: a.keyReused}
		if a.err != nil {
			out[i].Error = a.err.Error()
		} else if a.ok() {
			out[i].ID, _ = a.identity()
		}
	}
	return out
}

// checkReport is idem check's result.
type checkReport struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	// KeyHeader or KeyField is where the key went.
	KeyHeader   string        `json:"key_header,omitempty"`
	KeyField    string        `json:"key_field,omitempty"`
	KeyLength   int           `json:"key_length"`
	Profile     *profileJSON  `json:"profile,omitempty"`
	Requests    int           `json:"requests"`
	ToldApartBy string        `json:"told_apart_by"`
	Probes      []probeResult `json:"probes"`
	Verdict     string        `json:"verdict"`
}

func (r *checkReport) add(row probeResult) {
	r.Probes = append(r.Probes, row)
	if r.Verdict == "" {
		r.Verdict = pass
	}
	r.Verdict = worse(r.Verdict, row.Verdict)
}

func (p *prober) judgeBurst(as []answer, execs map[string]bool) probeResult {
	row := probeResult{
		Probe:    fmt.Sprintf("%d copies at once, one key", len(as)),
		Expected: "1 execution; the others 409 or the same answer",
		Answers:  answersJSON(as...),
	}
	var busy, replays, fresh, other, lost int
	for _, a := range as {
		switch {
		case a.err != nil:
			lost++
		case a.replayed:
			replays++
		case a.ok():
			fresh++
		case a.busy():
			busy++
		default:
			other++
		}
	}
	_, how := as[0].identity()
	for _, a := range as {
		if a.ok() {
			_, how = a.identity()
			break
		}
	}
	executed := "executed"
	if len(execs) > 1 {
		executed = "different " + plural(how)
	}
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{len(execs), executed}, {fresh - len(execs), "the same answer"}, {busy, "busy (409)"}, {replays, "replayed"}, {other, "other status"}, {lost, "no answer"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	row.Observed = strings.Join(parts, ", ")
	switch {
	case len(execs) > 1:
		row.Verdict = fail
		row.Observed = fmt.Sprintf("executed %d times: %s", len(execs), row.Observed)
	case fresh > 1 && how == "body":
		row.Verdict = warn
		row.Observed += fmt.Sprintf("; %d identical answers without an id or a replay mark: one execution or several cannot be told apart", fresh)
	case other > 0 || lost > 0:
		row.Verdict = warn
	default:
		row.Verdict = pass
	}
	return row
}

// plural names what tells executions apart, in the plural.
func plural(how string) string {
	switch how {
	case "Location":
		return "Locations"
	case "id":
		return "ids"
	}
	return "bodies"
}

// sameExecution reports whether a success a reports one of the executions
// seen. Without a Location or an id, equal bodies count as the same.
func sameExecution(a answer, execs map[string]bool) bool {
	id, _ := a.identity()
	return execs[id]
}

func judgeRepeat(a answer, execs map[string]bool) (row probeResult, same bool) {
	row = probeResult{Probe: "same request again", Expected: "the first answer again", Observed: a.describe(), Answers: answersJSON(a)}
	switch {
	case a.ok() && sameExecution(a, execs):
		row.Verdict, same = pass, true
	case a.replayed && !a.ok():
		// An API that answers a repeat with its own status (GoCardless's
		// 409 idempotent_creation_conflict): it says the first ran.
		row.Verdict, same = pass, true
		row.Observed += ": the API's answer to a repeat"
	case a.ok():
		row.Verdict = fail
		row.Observed += ": executed again"
	default:
		row.Verdict = warn
	}
	return row, same
}

func judgeReplayMark(a answer, same bool, p *idem.Profile) probeResult {
	row := probeResult{Probe: "replay marked", Expected: "Idempotent-Replayed: true"}
	if p != nil && p.IsReplayed != nil {
		row.Expected = "Idempotent-Replayed: true, or the API's own answer to a repeat"
	}
	switch {
	case !same:
		row.Verdict, row.Observed = skip, "no replay to look at"
	case strings.EqualFold(a.header.Get("Idempotent-Replayed"), "true"):
		row.Verdict, row.Observed = pass, "Idempotent-Replayed: true"
	case a.replayed:
		row.Verdict, row.Observed = pass, fmt.Sprintf("%d, the API's own answer to a repeat", a.status)
	default:
		row.Verdict, row.Observed = warn, "not marked: a client cannot tell a replay from a first execution"
	}
	return row
}

// judgeQuoted judges the answer to the key sent quoted: quotedLen
// characters, where the API takes at most maxLen.
func judgeQuoted(a answer, execs map[string]bool, quotedLen, maxLen int) probeResult {
	row := probeResult{Probe: `key quoted ("key")`, Expected: "the same key: the first answer", Observed: a.describe(), Answers: answersJSON(a)}
	switch {
	case a.ok() && sameExecution(a, execs):
		row.Verdict = pass
	case a.ok():
		row.Verdict = warn
		row.Observed += ": a different key here; send every attempt's key in one form"
	case a.status == http.StatusBadRequest && quotedLen > maxLen:
		row.Verdict = warn
		row.Observed += fmt.Sprintf(": refused; quoted, the key is %d characters, over the %d the API takes: send keys bare", quotedLen, maxLen)
	case a.status == http.StatusBadRequest:
		row.Verdict = warn
		row.Observed += ": the quoted form is refused; send keys bare"
	default:
		row.Verdict = warn
	}
	return row
}

func judgeOtherBody(a answer, execs map[string]bool) probeResult {
	row := probeResult{Probe: "same key, different body", Expected: "refused as key reuse (422)", Observed: a.describe(), Answers: answersJSON(a)}
	switch {
	case a.err == nil && a.keyReused:
		row.Verdict = pass
		if a.status != http.StatusUnprocessableEntity {
			row.Observed += ": the API's key-reuse error"
		}
	case a.err == nil && a.status == http.StatusUnprocessableEntity:
		row.Verdict = pass
	case a.ok() && sameExecution(a, execs):
		row.Verdict = warn
		row.Observed += ": the first answer; the changed request was ignored without a word"
	case a.ok():
		row.Verdict = fail
		row.Observed += ": executed a different request under a used key"
	case a.err == nil && a.status >= 400 && a.status < 500 && !a.busy():
		row.Verdict = warn
		row.Observed += ": refused, but not as key reuse; a client cannot tell it from a bad request"
	default:
		row.Verdict = warn
	}
	return row
}

func judgeNoKey(a answer) probeResult {
	row := probeResult{Probe: "no key", Expected: "400: key required", Observed: a.describe(), Answers: answersJSON(a)}
	switch {
	case a.err == nil && (a.status == http.StatusBadRequest || a.status == http.StatusPreconditionRequired || a.status == http.StatusUnprocessableEntity):
		row.Verdict = pass
	case a.ok():
		row.Verdict = warn
		row.Observed += ": ran without a key, unprotected"
	default:
		row.Verdict = warn
	}
	return row
}
