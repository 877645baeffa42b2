package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem"
)

func newShowCmd(a *app) *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "show KEY|NAME",
		Short: "Show one journaled operation whole",
		Long: `show prints one operation from the journal: the request line, the headers
the journal kept (credentials are never journaled), the body (indented
when it is JSON, a hex dump when it is binary), the deadlines and the
final answer. With --raw it writes the request body's exact bytes and
nothing else.`,
		Example: `  idem show --journal app.journal 0193a4c8-8f2e-7c3b-9a41-6f0e2d5c8b17
  idem show --journal app.journal payout/2026-12-25/417 --raw > body.bin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if raw && a.json {
				return usagef("--raw and --json exclude each other")
			}
			j, op, err := a.lookup(args[0])
			if err != nil {
				return err
			}
			defer j.Close()
			switch {
			case raw:
				_, err = a.stdout.Write(op.Body)
				return err
			case a.json:
				return a.writeJSON(operationToJSON(op, true))
			}
			return showOperation(a.stdout, op, time.Now())
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "write the request body's exact bytes only")
	return cmd
}

func showOperation(w io.Writer, op *idem.Operation, now time.Time) error {
	fmt.Fprintf(w, "%s %s\n", op.Method, op.URL)
	t := newTable(w, "key", op.Key)
	if op.Name != "" {
		t.row("name", op.Name)
	}
	if op.Host != "" {
		t.row("host", op.Host)
	}
	t.row("state", stateOf(op))
	t.row("created", when(now, op.CreatedAt, ""))
	t.row("updated", when(now, op.UpdatedAt, ""))
	t.row("expires", when(now, op.ExpiresAt, "; never sent after it"))
	if n, ok := attempts(op); ok {
		t.row("attempts", fmt.Sprint(n))
	} else {
		t.row("attempts", "? (the journal counts them with the final answer)")
	}
	t.row("fingerprint", hex.EncodeToString(op.Fingerprint[:]))
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nrequest:")
	writeHeader(w, op.Header)
	if len(op.Body) > 0 {
		fmt.Fprintln(w)
		if err := writeBody(w, op.Body, false); err != nil {
			return err
		}
	}
	r := op.Response
	if r == nil {
		fmt.Fprintln(w, "\nno final answer yet")
		return nil
	}
	fmt.Fprintf(w, "\nanswer: %d %s", r.StatusCode, http.StatusText(r.StatusCode))
	if r.Replayed {
		fmt.Fprint(w, " (replayed by the server)")
	}
	fmt.Fprintln(w)
	writeHeader(w, r.Header)
	if len(r.Body) > 0 {
		fmt.Fprintln(w)
		if err := writeBody(w, r.Body, false); err != nil {
			return err
		}
		if r.Truncated {
			fmt.Fprintf(w, "(the journal kept the first %d bytes)\n", len(r.Body))
		}
	}
	return nil
}

// when formats an instant with how far from now it is, and note.
func when(now, t time.Time, note string) string {
	if t.IsZero() {
		return ""
	}
	rel := shortDuration(now.Sub(t)) + " ago"
	if t.After(now) {
		rel = "in " + shortDuration(t.Sub(now))
	}
	return t.Local().Format(time.RFC3339) + " (" + rel + note + ")"
}

// writeHeader prints h in sorted order, one field line each.
func writeHeader(w io.Writer, h http.Header) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range h[k] {
			fmt.Fprintf(w, "%s: %s\n", k, cell(v))
		}
	}
}
