package main

import (
	"encoding/json"
	"fmt"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/examples/internal/linear"
	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/internal/history"
)

// recordAnswer records operation i's final answer in the child's history:
// the charge its body names, first-hand, or replayed by the server or
// from the journal.
func recordAnswer(rec *history.Recorder, i int, resp *idem.Response, call int64) {
	var c charges.Charge
	if json.Unmarshal(resp.Body, &c) != nil || c.ID == "" {
		return
	}
	rec.Answer(fmt.Sprintf("op-%d", i), c.ID, resp.Replayed || resp.FromJournal, call)
}

// checkHistory checks the answers the children recorded at path, with the
// run's charges as the effects (each at some time between start and end),
// against the specification of an idempotency record.
func checkHistory(path string, cs []charges.Charge, start, end int64) (linear.Result, error) {
	ops, err := history.Read(path)
	if err != nil {
		return linear.Result{}, err
	}
	for _, c := range cs {
		ops = append(ops, history.Op{Key: c.Ref, Kind: history.Effect, Outcome: c.ID, Call: start, Return: end})
	}
	return linear.Check(ops), nil
}
