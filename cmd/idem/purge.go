package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem"
)

func newPurgeCmd(a *app) *cobra.Command {
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "purge [--older-than DURATION]",
		Short: "Delete finished operations from a journal",
		Long: `purge deletes the journal's operations that are not pending (completed,
failed, refused, expired, abandoned) last updated more than --older-than
ago, with their name bindings: by default those past the 7 days
(168h) an application's journal keeps them (idem.DefaultPurgeAfter), and
with --older-than 0 every one. Pending operations are never purged.
Purging frees space in the file for new records; idem compact gives it
back to the file system.`,
		Example: `  idem purge --journal app.journal
  idem purge --journal app.journal --older-than 24h
  idem purge --journal app.journal --older-than 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan < 0 {
				return usagef("--older-than must not be negative")
			}
			j, err := a.openJournal()
			if err != nil {
				return err
			}
			defer j.Close()
			n, err := purgeJournal(j, olderThan)
			if err != nil {
				return err
			}
			if err := j.Close(); err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(struct {
					Purged int `json:"purged"`
				}{n})
			}
			fmt.Fprintf(a.stdout, "purged %s\n", count(n, "finished operation"))
			return nil
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", idem.DefaultPurgeAfter, "purge only operations last updated more than this `DURATION` ago (0: every finished one)")
	return cmd
}
