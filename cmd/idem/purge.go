package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newPurgeCmd(a *app) *cobra.Command {
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "purge [--older-than DURATION]",
		Short: "Delete finished operations from a journal",
		Long: `purge deletes the journal's operations that are not pending (completed,
failed, refused, expired, abandoned) last updated more than --older-than
ago, all of them by default, with their name bindings. Pending operations
are never purged.`,
		Example: `  idem purge --journal app.journal --older-than 168h`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan < 0 {
				return usagef("--older-than must not be negative")
			}
			path, err := a.journal()
			if err != nil {
				return err
			}
			j, err := openJournal(path, false)
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
			fmt.Fprintf(a.stdout, "purged %d finished operations\n", n)
			return nil
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "purge only operations last updated more than this `DURATION` ago")
	return cmd
}
