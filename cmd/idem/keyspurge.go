package main

import (
	"fmt"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/idemhq/idem/server/pgstore"
)

func newKeysPurgeCmd(a *app, f *storeFlags) *cobra.Command {
	var batch int
	cmd := &cobra.Command{
		Use:   "purge [--batch N] [--abandon DURATION]",
		Short: "Delete a store's records past their retention",
		Long: `purge deletes the store's completed records past their retention, and
its running records whose lease lapsed more than --abandon ago (give the
service's pgstore.Options.Abandon), as pgstore's Store.Purge does: in
batches of --batch rows, each a short statement of its own, so it can run
while the service does. On a terminal a progress bar counts the records
deleted against those purgeable when it started; records that expire
meanwhile are purged too.

It deletes nothing a repeat could still be answered from, so it asks no
confirmation. Ctrl-C stops it after the batch in flight; the rest wait for
the next purge.

A Redis store (--redis) needs no purge: Redis deletes each record itself
when it expires, a completed one when its retention ends and a running
one redisstore.Options.Abandon after its lease lapsed. purge --redis
checks that Redis answers, says so, deletes nothing and exits 0 (with
--json, {"purged": 0}), so that one scheduled purge serves either store.`,
		Example: `  idem keys purge --database postgres://idem@db:5432/app --abandon 24h`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if batch < 1 {
				return usagef("--batch must be at least 1")
			}
			ctx := cmd.Context()
			redis, err := a.useRedis(cmd, f)
			if err != nil {
				return err
			}
			if redis {
				return a.purgeRedis(ctx, f)
			}
			s, err := a.openStore(ctx, f)
			if err != nil {
				return err
			}
			defer s.Close()
			st, err := s.Stats(ctx)
			if err != nil {
				return err
			}
			var bar *progressbar.ProgressBar
			if a.stderrTTY && !a.json && st.Purgeable > 0 {
				bar = progressbar.NewOptions(st.Purgeable,
					progressbar.OptionSetWriter(a.stderr),
					progressbar.OptionSetDescription("purging"),
					progressbar.OptionShowCount(),
					progressbar.OptionShowIts(),
					progressbar.OptionSetItsString("records"),
					progressbar.OptionSetWidth(30),
					progressbar.OptionSetPredictTime(false),
					progressbar.OptionShowElapsedTimeOnFinish(),
				)
			}
			n, err := s.PurgeWithProgress(ctx, batch, func(deleted int) {
				if bar == nil {
					return
				}
				if deleted > bar.GetMax() {
					bar.ChangeMax(deleted) // expired while the purge ran
				}
				bar.Set(deleted)
			})
			if bar != nil {
				if ctx.Err() == nil {
					bar.Finish()
				} else {
					bar.Exit()
				}
				fmt.Fprintln(a.stderr)
			}
			if ctx.Err() != nil {
				return &codeError{code: exitInterrupted, err: fmt.Errorf("interrupted after purging %s; the rest wait for the next purge", count(n, "record"))}
			}
			if err != nil {
				return fmt.Errorf("%w (after purging %s)", err, count(n, "record"))
			}
			if a.json {
				return a.writeJSON(struct {
					Purged int `json:"purged"`
				}{n})
			}
			fmt.Fprintf(a.stdout, "purged %s from %s\n", count(n, "record"), f.table)
			return nil
		},
	}
	cmd.Flags().IntVar(&batch, "batch", pgstore.DefaultPurgeBatch, "rows deleted per statement")
	return cmd
}
