package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Exit statuses; see the package documentation.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitUnsafe      = 3
	exitInterrupted = 130
)

func main() {
	os.Exit(run(context.Background(), osEnv(), os.Args[1:]))
}

// env is what a command sees of the world: its streams, whether each is a
// terminal, and the environment. Tests build one around buffers.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// stdinTTY, stdoutTTY and stderrTTY report terminals: a confirmation
	// is asked only on one, tables are aligned for one, and the progress
	// bar is drawn only on one.
	stdinTTY, stdoutTTY, stderrTTY bool
	getenv                         func(string) string
}

func osEnv() env {
	return env{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		stdinTTY: isTerminal(os.Stdin), stdoutTTY: isTerminal(os.Stdout), stderrTTY: isTerminal(os.Stderr),
		getenv: os.Getenv,
	}
}

// isTerminal reports whether f is a terminal (not merely a character
// device, as /dev/null is).
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// run runs the command line args and returns the exit status. Ctrl-C or
// SIGTERM cancels the command's context: commands stop cleanly.
func run(ctx context.Context, e env, args []string) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(&app{env: e})
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *codeError
	if errors.As(err, &ee) && ee.err == nil {
		return ee.code // the command has said everything already
	}
	fmt.Fprintf(e.stderr, "idem: %s\n", strings.TrimPrefix(err.Error(), "idem: "))
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, new(*usageError)):
		fmt.Fprintf(e.stderr, "Run '%s --help' for usage.\n", commandPath(root, args))
		return exitUsage
	case ctx.Err() != nil:
		return exitInterrupted
	}
	return exitError
}

// commandPath names the command args select, for the usage hint.
func commandPath(root *cobra.Command, args []string) string {
	if c, _, err := root.Find(args); err == nil && c != nil {
		return c.CommandPath()
	}
	return "idem"
}

// usageError is a command line that does not parse: a bad flag, a missing
// or extra argument, flags that exclude each other.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// codeError ends a command with a given exit status. With a nil err the
// command has printed its own explanation.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *codeError) Unwrap() error { return e.err }
