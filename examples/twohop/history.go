package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/examples/internal/linear"
	"github.com/idemhq/idem/internal/history"
)

// recordAnswer records operation i's final answer in the client's
// history: the charge at B that A's answer names, first-hand, or replayed
// by A or from the journal.
func recordAnswer(rec *history.Recorder, i int, resp *idem.Response, call int64) {
	var a struct{ Charge string }
	if json.Unmarshal(resp.Body, &a) != nil || a.Charge == "" {
		return
	}
	rec.Answer(fmt.Sprintf("op-%d", i), a.Charge, resp.Replayed || resp.FromJournal, call)
}

// checkHistory checks the answers the clients recorded, with B's charges
// as the effects (each at some time since began), against the
// specification of an idempotency record: one charge per operation, and
// the one every answer names.
func (h *run) checkHistory(ctx context.Context, pool *pgxpool.Pool, began time.Time) (linear.Result, error) {
	ops, err := history.Read(h.historyFile())
	if err != nil {
		return linear.Result{}, err
	}
	rows, err := pool.Query(ctx, "SELECT id, op FROM "+h.tables.Charges)
	if err != nil {
		return linear.Result{}, err
	}
	defer rows.Close()
	end := history.Now()
	for rows.Next() {
		var id string
		var op int
		if err := rows.Scan(&id, &op); err != nil {
			return linear.Result{}, err
		}
		ops = append(ops, history.Op{Key: fmt.Sprintf("op-%d", op), Kind: history.Effect, Outcome: id, Call: began.UnixNano(), Return: end})
	}
	if err := rows.Err(); err != nil {
		return linear.Result{}, err
	}
	return linear.Check(ops), nil
}

func (h *run) historyFile() string { return h.dir + "/history" }
