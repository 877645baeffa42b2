// Package history records what a run of idem's chaos programs saw, as
// operations with a start and an end, and holds the sequential
// specification of an idempotency record that every such history must be
// linearizable to. The linearizability checker itself (porcupine) lives
// with the programs that run it, so that the core module takes no
// dependency for it; this package is the specification, the records and
// the shrinking of a failing history, on the standard library alone.
//
// # The specification
//
// Each key is an object of its own, with two fields: the outcome its record
// holds (none at first) and the effects the service made for it. An
// operation is one of
//
//   - an answer: a request for the key that got a final answer naming an
//     outcome (an execution's ID), first-hand or replayed. A first-hand
//     answer records its outcome if none is recorded, and must carry the
//     recorded one otherwise: a key's first completed outcome is the only
//     one any later answer may carry. A replay must carry the recorded
//     outcome; a replay that finds none recorded records its own, since
//     the answer that recorded it may be missing from the history (lost
//     on the way, or its client killed), and the history stays
//     meaningful when ops are dropped from it (see Shortest).
//   - an effect: the service's record of an execution (a charge row),
//     which happened at some time during the run. The effects of one key
//     are at most one, and an effect's execution is the recorded outcome,
//     or becomes it.
//
// Requests that got no final answer (a lost answer, a 409, a 5xx, a
// killed client) constrain nothing and are left out.
package history

import (
	"fmt"
	"sort"
	"strings"
)

// Kind tells an answer from an effect.
type Kind uint8

const (
	// Answer is a final answer to a request for the key.
	Answer Kind = 1 + iota
	// Effect is an execution the service recorded for the key.
	Effect
)

// Op is one operation of a history: its key, what it was, its outcome (an
// execution's ID), and when it began and ended, in nanoseconds on a clock
// every process of the run shares (the wall clock).
type Op struct {
	Key      string `json:"k"`
	Kind     Kind   `json:"t"`
	Outcome  string `json:"o"`
	Replayed bool   `json:"p,omitempty"` // an Answer from the server's record or the client's journal
	Call     int64  `json:"c"`
	Return   int64  `json:"r"`
	Client   int    `json:"n,omitempty"` // which client made it, for the report
}

// String describes op for a report.
func (op Op) String() string {
	switch {
	case op.Kind == Effect:
		return fmt.Sprintf("%s: effect %s", op.Key, op.Outcome)
	case op.Replayed:
		return fmt.Sprintf("%s: replayed answer %s", op.Key, op.Outcome)
	}
	return fmt.Sprintf("%s: answer %s", op.Key, op.Outcome)
}

// State is one key's object in the specification.
type State struct {
	Outcome string // the recorded outcome; "" for none
	Effects int
}

// Step applies op to s and reports whether the specification allows it,
// with the state after it. It is pure: s is not changed.
func Step(s State, op Op) (bool, State) {
	switch op.Kind {
	case Effect:
		if s.Effects >= 1 || (s.Outcome != "" && s.Outcome != op.Outcome) {
			return false, s
		}
		return true, State{Outcome: op.Outcome, Effects: s.Effects + 1}
	case Answer:
		if s.Outcome == "" {
			return true, State{Outcome: op.Outcome, Effects: s.Effects}
		}
		return s.Outcome == op.Outcome, s
	}
	return false, s
}

// ByKey splits ops into one history per key, each in order of call, the
// keys sorted.
func ByKey(ops []Op) [][]Op {
	m := map[string][]Op{}
	for _, op := range ops {
		m[op.Key] = append(m[op.Key], op)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]Op, 0, len(keys))
	for _, k := range keys {
		h := m[k]
		sort.SliceStable(h, func(i, j int) bool { return h[i].Call < h[j].Call })
		out = append(out, h)
	}
	return out
}

// Shortest returns a shortest failing sub-history of the failing history
// h: ops are dropped one at a time, as long as ok (a linearizability
// check) still fails without them, pass after pass until none can be. The
// result is minimal (no op of it can go), though not always the least of
// all.
func Shortest(h []Op, ok func([]Op) bool) []Op {
	h = append([]Op(nil), h...)
	for dropped := true; dropped; {
		dropped = false
		for i := 0; i < len(h); {
			without := append(append([]Op(nil), h[:i]...), h[i+1:]...)
			if !ok(without) {
				h, dropped = without, true
				continue
			}
			i++
		}
	}
	return h
}

// Report describes a failing history, one op a line, times from its
// first call, in milliseconds; an effect's time is the run's.
func Report(h []Op) string {
	if len(h) == 0 {
		return ""
	}
	t0 := h[0].Call
	for _, op := range h {
		t0 = min(t0, op.Call)
	}
	var b strings.Builder
	for _, op := range h {
		fmt.Fprintf(&b, "  [%8.3f ms, %8.3f ms] %s", float64(op.Call-t0)/1e6, float64(op.Return-t0)/1e6, op)
		if op.Client != 0 {
			fmt.Fprintf(&b, " (client %d)", op.Client)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
