package main

// This file holds "idem compact", which gives a journal's free space
// back to the file system.

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newCompactCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "compact",
		Short: "Give a journal's free space back to the file system",
		Long: `compact rewrites the journal into a file that holds its records and
nothing else, and says how much space that gave back. The journal's
file never shrinks on its own: the space purged operations leave (a large
body, a busy week) is reused for new records but stays in the file.

The application must not be running: like every command, compact
reports a journal another process holds at once. The copy goes to a
temporary file beside the journal, is synced and checked, then renamed
over it: killed at any point, compact leaves the old journal or the new
one, whole. Run idem purge first to drop finished operations; compact
itself deletes nothing.`,
		Example: `  idem purge --journal app.journal && idem compact --journal app.journal`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			path, err := a.journal()
			if err != nil {
				return err
			}
			before, after, err := compactJournal(path)
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(struct {
					Before    int64 `json:"before"`
					After     int64 `json:"after"`
					Reclaimed int64 `json:"reclaimed"`
				}{before, after, before - after})
			}
			fmt.Fprintf(a.stdout, "compacted %s from %s to %s: %s given back\n", path, byteSize(before), byteSize(after), byteSize(before-after))
			return nil
		},
	}
}

// byteSize spells n bytes for a person, in the largest binary unit that
// keeps it at 1 or more: "512 B", "8.0 MiB".
func byteSize(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v, suffix = v/unit, s
		if v < unit && v > -unit {
			break
		}
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
