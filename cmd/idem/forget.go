package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem"
)

func newForgetCmd(a *app) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "forget KEY|NAME",
		Short: "Give up one pending operation on purpose, so that it is never sent again",
		Long: `forget abandons a pending (or refused) operation once it has been
reconciled by other means: the record stays in the journal, in state
abandoned, until it is purged, and neither idem resume nor the application
ever sends it again (a call with its key fails with ErrAbandoned).

It shows the operation and asks for confirmation at the terminal, unless
--yes is given.`,
		Example: `  idem forget --journal app.journal payout/2026-12-25/417
  idem forget --journal app.journal --yes 0193a4c8-8f2e-7c3b-9a41-6f0e2d5c8b17`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			j, op, err := a.lookup(args[0])
			if err != nil {
				return err
			}
			defer j.Close()
			if s := op.State; s != idem.Pending && s != idem.Refused {
				return fmt.Errorf("operation %s is %s: only a pending or refused operation can be forgotten", op.Key, s)
			}
			what := fmt.Sprintf("%s %s\nkey %s", op.Method, op.URL, op.Key)
			if op.Name != "" {
				what += ", name " + op.Name
			}
			what += fmt.Sprintf(", %s, created %s ago\n", stateOf(op), age(time.Now(), op.CreatedAt))
			what += "It will never be sent again, by idem resume or by the application.\n"
			if err := a.confirm(yes, what, "Forget it?", "forget"); err != nil {
				if errors.Is(err, errNotConfirmed) {
					return errors.New("not confirmed; the operation is still " + stateOf(op))
				}
				return err
			}
			op, err = forgetOperation(j, op.Key)
			if err != nil {
				return err
			}
			if err := j.Close(); err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(operationToJSON(op, false))
			}
			fmt.Fprintf(a.stdout, "forgot %s: abandoned, never sent again\n", op.Key)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "forget without asking")
	return cmd
}
