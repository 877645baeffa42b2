// Package linear checks the histories the chaos programs record
// (internal/history) for linearizability with porcupine, key by key,
// against history's sequential specification of an idempotency record, and
// shrinks a violation to a shortest failing history.
package linear

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idemhq/idem/internal/history"
)

// Model is history's specification as a porcupine model: one object per
// key, each operation's input the history.Op itself.
var Model = porcupine.Model{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		idx := map[string]int{}
		var out [][]porcupine.Operation
		for _, op := range ops {
			k := op.Input.(history.Op).Key
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, nil)
			}
			out[i] = append(out[i], op)
		}
		return out
	},
	Init: func() any { return history.State{} },
	Step: func(state, input, _ any) (bool, any) {
		return history.Step(state.(history.State), input.(history.Op))
	},
	DescribeOperation: func(input, _ any) string { return input.(history.Op).String() },
	DescribeState:     func(state any) string { return fmt.Sprintf("%+v", state.(history.State)) },
}

// Timeout bounds porcupine's search for one key.
const Timeout = 10 * time.Second

// Result is what Check found.
type Result struct {
	Ops, Keys int
	// Violations counts the keys whose history is not linearizable;
	// Shortest is a shortest failing history of the first of them.
	Violations int
	Shortest   []history.Op
	// Unknown counts the keys whose check ran out of Timeout.
	Unknown int
}

// OK reports that every key's history is linearizable.
func (r Result) OK() bool { return r.Violations == 0 && r.Unknown == 0 }

// String is the result's summary line and, for a violation, the shortest
// failing history.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "history: %d operations on %d keys: %d not linearizable, %d unknown", r.Ops, r.Keys, r.Violations, r.Unknown)
	if len(r.Shortest) > 0 {
		fmt.Fprintf(&b, "\nhistory: a shortest failing history (%d operations):\n%s", len(r.Shortest), strings.TrimRight(history.Report(r.Shortest), "\n"))
	}
	return b.String()
}

// Check checks ops key by key.
func Check(ops []history.Op) Result {
	r := Result{Ops: len(ops)}
	for _, h := range history.ByKey(ops) {
		r.Keys++
		switch check(h) {
		case porcupine.Illegal:
			r.Violations++
			if r.Shortest == nil {
				r.Shortest = history.Shortest(h, func(h []history.Op) bool { return check(h) != porcupine.Illegal })
			}
		case porcupine.Unknown:
			r.Unknown++
		}
	}
	return r
}

func check(h []history.Op) porcupine.CheckResult {
	ops := make([]porcupine.Operation, len(h))
	for i, op := range h {
		ops[i] = porcupine.Operation{ClientId: op.Client, Input: op, Call: op.Call, Return: op.Return}
	}
	return porcupine.CheckOperationsTimeout(Model, ops, Timeout)
}
