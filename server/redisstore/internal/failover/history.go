package main

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idemhq/idem/internal/history"
)

// This file checks a run's history (internal/history) for
// linearizability with porcupine, key by key: each final answer the
// client got names the run of the key's work it came from, and each run
// of the work is an effect. It is the examples' internal/linear, which
// this module cannot import, in the few lines the command needs.

// ops collects the run's operations; safe for concurrent use.
type ops struct {
	mu  sync.Mutex
	ops []history.Op
}

// answer records a final answer for key naming run n, to a request sent at
// call and answered now.
func (o *ops) answer(key string, n int, replayed bool, call int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops = append(o.ops, history.Op{Key: key, Kind: history.Answer, Outcome: fmt.Sprintf("run-%d", n),
		Replayed: replayed, Call: call, Return: history.Now()})
}

// effects adds the runs of the work per key, each at some time between
// start and end.
func (o *ops) effects(runs map[string]int, start, end int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for key, n := range runs {
		for i := 1; i <= n; i++ {
			o.ops = append(o.ops, history.Op{Key: key, Kind: history.Effect, Outcome: fmt.Sprintf("run-%d", i), Call: start, Return: end})
		}
	}
}

var historyModel = porcupine.Model{
	Init:              func() any { return history.State{} },
	Step:              func(s, in, _ any) (bool, any) { return history.Step(s.(history.State), in.(history.Op)) },
	DescribeOperation: func(in, _ any) string { return in.(history.Op).String() },
}

// linearizable checks one key's history.
func linearizable(h []history.Op) porcupine.CheckResult {
	po := make([]porcupine.Operation, len(h))
	for i, op := range h {
		po[i] = porcupine.Operation{Input: op, Call: op.Call, Return: op.Return}
	}
	return porcupine.CheckOperationsTimeout(historyModel, po, 10*time.Second)
}

// check returns the history's summary: keys not linearizable (each a
// duplicate run, or an answer naming another run than the first), and a
// shortest failing history of the first.
func (o *ops) check() (violations int, report string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys, unknown := 0, 0
	var shortest []history.Op
	for _, h := range history.ByKey(o.ops) {
		keys++
		switch linearizable(h) {
		case porcupine.Illegal:
			violations++
			if shortest == nil {
				shortest = history.Shortest(h, func(h []history.Op) bool { return linearizable(h) != porcupine.Illegal })
			}
		case porcupine.Unknown:
			unknown++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "history: %d operations on %d keys: %d not linearizable, %d unknown", len(o.ops), keys, violations, unknown)
	if shortest != nil {
		fmt.Fprintf(&b, "\nhistory: a shortest failing history (%d operations):\n%s", len(shortest), strings.TrimRight(history.Report(shortest), "\n"))
	}
	return violations + unknown, b.String()
}
