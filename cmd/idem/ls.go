package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem"
)

func newLsCmd(a *app) *cobra.Command {
	var (
		state     []string
		olderThan time.Duration
	)
	cmd := &cobra.Command{
		Use:   "ls [--state STATE] [--older-than DURATION]",
		Short: "List a journal's operations",
		Long: `ls lists the operations in a journal, oldest first: key, name, method, URL,
state, age, attempts and last status.

States: pending (no final answer yet: idem resume continues it), refused
(the server refused the credentials: the application continues it),
completed, failed, expired (too old to send again: reconcile it by hand),
abandoned (given up on purpose with idem forget: never sent again).

ATTEMPTS counts the attempts of the process that got the final answer.
The journal writes the count with that answer, so an operation without
one (pending, expired, abandoned) shows "?": it may have been sent any
number of times; --json leaves "attempts" out for it.`,
		Example: `  idem ls --journal app.journal --state pending
  idem ls --state pending --older-than 1h --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range state {
				if !slices.Contains(states, s) {
					return usagef("--state %q: want one of %s", s, strings.Join(states, ", "))
				}
			}
			j, err := a.openJournal()
			if err != nil {
				return err
			}
			defer j.Close()
			ops, err := listOperations(j, state)
			// A journal with unreadable records lists the others, then
			// names the unreadable ones and fails.
			if err != nil && !errors.Is(err, idem.ErrJournalCorrupt) {
				return err
			}
			unreadable := err
			now := time.Now()
			ops = slices.DeleteFunc(ops, func(op *idem.Operation) bool {
				return (len(state) > 0 && !slices.Contains(state, stateOf(op))) ||
					(olderThan > 0 && now.Sub(op.CreatedAt) < olderThan)
			})
			if err := a.printOperations(ops, now); err != nil {
				return err
			}
			return unreadable
		},
	}
	cmd.Flags().StringSliceVar(&state, "state", nil, "list only operations in this `STATE` ("+strings.Join(states, "|")+"; repeatable)")
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "list only operations created more than this `DURATION` ago")
	cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(states, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) printOperations(ops []*idem.Operation, now time.Time) error {
	if a.json {
		out := make([]operationJSON, len(ops))
		for i, op := range ops {
			out[i] = operationToJSON(op, false)
		}
		return a.writeJSON(out)
	}
	if len(ops) == 0 {
		fmt.Fprintln(a.stderr, "no operations")
		return nil
	}
	t := newGrid("KEY", "NAME", "METHOD", "URL", "STATE", "AGE", "ATTEMPTS", "STATUS").omitEmpty("NAME")
	for _, op := range ops {
		status := ""
		if op.Response != nil {
			status = fmt.Sprint(op.Response.StatusCode)
		}
		t.add(op.Key, op.Name, op.Method, op.URL, stateOf(op), age(now, op.CreatedAt), attemptsCell(op), status)
	}
	return t.write(a.stdout)
}

// attemptsCell is op's attempts for a table: "?" when the journal holds
// no count, which it writes only with a final answer.
func attemptsCell(op *idem.Operation) string {
	if n, ok := attempts(op); ok {
		return fmt.Sprint(n)
	}
	return "?"
}
