package main

import (
	"github.com/spf13/cobra"
)

// app holds what every command shares: the environment and the persistent
// flags.
type app struct {
	env
	json        bool   // --json
	journalPath string // --journal
}

// journalEnv names the journal when --journal is not given.
const journalEnv = "IDEM_JOURNAL"

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "idem",
		Short: "See and resume an idem journal, send keyed requests, check an API's idempotency",
		Long: `idem looks at, resumes, purges and compacts the journal of an application
built on the idem client, sends one keyed, retried and journaled request,
derives keys, and checks whether an HTTP API honours idempotency keys;
"idem keys" reads and purges a server's store of idempotency records.

Every command takes --json to print one JSON document for scripts. The
journal is named by --journal or the ` + journalEnv + ` environment variable.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	pf := root.PersistentFlags()
	pf.BoolVar(&a.json, "json", false, "print one JSON document on standard output instead of text")
	pf.StringVar(&a.journalPath, "journal", "", "journal file `PATH` (default $"+journalEnv+")")

	root.AddCommand(
		newDeriveCmd(a),
		newSendCmd(a),
		newCheckCmd(a),
		newLsCmd(a),
		newShowCmd(a),
		newResumeCmd(a),
		newPurgeCmd(a),
		newCompactCmd(a),
		newForgetCmd(a),
		newKeysCmd(a),
		newVersionCmd(a),
	)
	wrapArgs(root)
	return root
}

// wrapArgs makes the argument validators of cmd's subcommands, at every
// depth, report usage errors.
func wrapArgs(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if c.Args != nil {
			c.Args = usageArgs(c.Args)
		}
		wrapArgs(c)
	}
}

// usageArgs makes an argument validator's complaint a usage error.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// journal returns the journal path from --journal or IDEM_JOURNAL.
func (a *app) journal() (string, error) {
	if a.journalPath != "" {
		return a.journalPath, nil
	}
	if p := a.getenv(journalEnv); p != "" {
		return p, nil
	}
	return "", usagef("no journal: pass --journal PATH or set %s", journalEnv)
}
