package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/idemhq/idem"
)

type resumeFlags struct {
	concurrency int
	header      []string
	fromEnv     []string
	place       keyFlags
	quote       bool
	retention   time.Duration
	timeout     time.Duration
	all         bool
}

func newResumeCmd(a *app) *cobra.Command {
	var f resumeFlags
	cmd := &cobra.Command{
		Use:   "resume [--concurrency N] [--header 'Name: value'...] [--header-from-env NAME=VARIABLE...]",
		Short: "Finish every pending operation in a journal",
		Long: `resume sends every pending operation of the journal again, with its
journaled key, method, URL, headers and exact body, as the application's
Client.Resume would, and prints a summary. The server answers each from its
own record if the operation already ran, so nothing runs twice.

Give the conventions the application used: --profile NAME for an API
idem has a profile of (its key place, retry hints and the way it says a
key was reused or a request replayed, which decide whether an answer is
final), or --header-name, --body-key and --quote-key. Each operation
keeps the retention deadline it was journaled with; --key-retention can
only shorten it.

The journal never holds credentials: give them again with --header, or,
to keep them out of the process list and the shell history,
--header-from-env NAME=VARIABLE. An operation older than the server's key
retention (--key-retention) is not sent, since the server may have
forgotten its key: it is marked expired and listed for reconciliation.

On a terminal a progress bar shows done/total, replays, failures and the
rate. Then resume prints the count of each outcome and lists the
operations that need attention (failed, still pending, expired; --all
lists every one). It exits 1 if any is still pending or expired. Ctrl-C
stops at once: operations without an answer stay pending.`,
		Example: `  API_AUTH='Bearer sk_test_...' idem resume --journal app.journal \
      --header-from-env Authorization=API_AUTH --concurrency 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.resume(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.concurrency, "concurrency", 4, "operations sent at once")
	fl.StringArrayVarP(&f.header, "header", "H", nil, "header `'Name: value'` added to every request, such as credentials (repeatable)")
	fl.StringArrayVar(&f.fromEnv, "header-from-env", nil, "header `NAME=VARIABLE` whose value is the environment variable's (repeatable)")
	fl.BoolVar(&f.quote, "quote-key", false, `send keys as quoted Structured Field strings ("abc"), as the application did`)
	fl.DurationVar(&f.retention, "key-retention", 0, "the server's key retention: older operations are not sent (default: the profile's, else 24h)")
	f.place.add(cmd)
	fl.BoolVar(&f.all, "all", false, "list every operation resumed, not only those that need attention")
	fl.DurationVar(&f.timeout, "attempt-timeout", 30*time.Second, "timeout of each attempt")
	return cmd
}

// resumeCounts are the progress bar's counters.
type resumeCounts struct {
	mu                      sync.Mutex
	done, replays, failures int
}

func (a *app) resume(ctx context.Context, f resumeFlags) error {
	if f.concurrency < 1 {
		return usagef("--concurrency must be at least 1")
	}
	extra, err := headers(f.header, f.fromEnv, a.getenv)
	if err != nil {
		return err
	}
	opts, _, err := f.place.resolve()
	if err != nil {
		return err
	}
	if f.retention < 0 {
		return usagef("--key-retention must not be negative")
	}
	opts.QuoteKey, opts.KeyRetention = f.quote, f.retention
	j, err := a.openJournal()
	if err != nil {
		return err
	}
	defer j.Close()
	pending, err := listOperations(j, []string{"pending"})
	if err != nil && !errors.Is(err, idem.ErrJournalCorrupt) {
		return err // an unreadable record is reported by Resume, with the others resumed
	}
	var bar *progressbar.ProgressBar
	if a.stderrTTY && !a.json && len(pending) > 0 {
		bar = progressbar.NewOptions(len(pending),
			progressbar.OptionSetWriter(a.stderr),
			progressbar.OptionSetDescription("resuming"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("ops"),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionShowElapsedTimeOnFinish(),
		)
	}
	var n resumeCounts
	onLast := func(at idem.Attempt) {
		if at.StatusCode == 0 && ctx.Err() != nil {
			return // cut off by Ctrl-C: not done, it stays pending
		}
		n.mu.Lock()
		n.done++
		if at.Replayed {
			n.replays++
		}
		if at.StatusCode == 0 || at.StatusCode >= 400 {
			n.failures++
		}
		desc := fmt.Sprintf("resuming (%d replayed, %d failed)", n.replays, n.failures)
		n.mu.Unlock()
		if bar != nil {
			bar.Describe(desc)
			bar.Add(1)
		}
	}
	prepare := func(r *http.Request) error {
		for k, vs := range extra {
			r.Header[k] = vs
		}
		return nil
	}
	opts.AttemptTimeout, opts.ResumeConcurrency, opts.PrepareRequest = f.timeout, f.concurrency, prepare
	out, err := resumeJournal(ctx, j, opts, onLast)
	if bar != nil {
		if ctx.Err() != nil {
			bar.Exit() // as far as it got: the rest stay pending
		} else {
			bar.Finish() // expired operations, never sent, count as done
		}
		fmt.Fprintln(a.stderr)
	}
	if err != nil {
		return err
	}
	sum := summarise(out)
	sum.Interrupted = ctx.Err() != nil
	if a.json {
		if err := a.writeJSON(sum); err != nil {
			return err
		}
	} else if err := a.printResume(sum, f.all); err != nil {
		return err
	}
	switch {
	case sum.Interrupted:
		return &codeError{code: exitInterrupted, err: fmt.Errorf("interrupted: %s left pending", count(sum.Pending, "operation"))}
	case sum.Unreadable > 0:
		return &codeError{code: exitError, err: fmt.Errorf("%s still pending, %d expired, %d unreadable", count(sum.Pending, "operation"), sum.Expired, sum.Unreadable)}
	case sum.Pending > 0 || sum.Expired > 0:
		return &codeError{code: exitError, err: fmt.Errorf("%s still pending, %d expired", count(sum.Pending, "operation"), sum.Expired)}
	}
	return nil
}
