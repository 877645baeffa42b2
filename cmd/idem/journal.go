package main

// This file is the command's only contact with the idem journal's API, so
// that the rest of the command reads operations through these few
// functions.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/idemhq/idem"
)

// lockTimeout is how long a command waits for a journal another process
// holds: long enough for a process that is closing it, short enough that a
// person is told at once.
const lockTimeout = 200 * time.Millisecond

// errLocked explains idem.ErrJournalLocked to the person at the terminal.
var errLocked = errors.New("is held by a running process (the application, or another idem); stop it or wait for it to exit, then run this again")

// openJournal opens the journal --journal or $IDEM_JOURNAL names, which
// must exist (see openJournalAt). The caller closes it.
func (a *app) openJournal() (*idem.Journal, error) {
	path, err := a.journal()
	if err != nil {
		return nil, err
	}
	return openJournalAt(path, false)
}

// lookup opens the journal as openJournal does and finds the operation
// whose key, or failing that whose name, is ref (see findOperation). The
// caller closes the journal.
func (a *app) lookup(ref string) (*idem.Journal, *idem.Operation, error) {
	j, err := a.openJournal()
	if err != nil {
		return nil, nil, err
	}
	op, err := findOperation(j, ref)
	if err != nil {
		j.Close()
		return nil, nil, err
	}
	return j, op, nil
}

// openJournalAt opens the journal at path. Unless create is set the file
// must exist: a mistyped path must not leave an empty journal behind.
// Opening never purges: the command keeps every record unless told to
// purge.
func openJournalAt(path string, create bool) (*idem.Journal, error) {
	if !create {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no journal at %s", path)
		}
	}
	j, err := idem.OpenJournal(path, journalOptions)
	return j, explainLocked(path, err)
}

// journalOptions are the command's: it waits lockTimeout for a journal
// another process holds, and never purges unless told to.
var journalOptions = idem.JournalOptions{LockTimeout: lockTimeout, PurgeAfter: -1}

// explainLocked words idem.ErrJournalLocked for the person at the
// terminal; other errors pass as they are.
func explainLocked(path string, err error) error {
	if errors.Is(err, idem.ErrJournalLocked) {
		return &codeError{code: exitError, err: fmt.Errorf("journal %s %w", path, errLocked)}
	}
	return err
}

// compactJournal compacts the journal at path (see idem.CompactJournal)
// and returns its size before and after.
func compactJournal(path string) (before, after int64, err error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return 0, 0, fmt.Errorf("no journal at %s", path)
	}
	before, after, err = idem.CompactJournal(path, journalOptions)
	return before, after, explainLocked(path, err)
}

// states are the names --state takes, in an operation's order of life.
var states = []string{"pending", "refused", "completed", "failed", "expired", "abandoned"}

// stateOf names op's state, as --state takes it.
func stateOf(op *idem.Operation) string { return op.State.String() }

// stateNames maps the names --state takes to the journal's states.
var stateNames = map[string]idem.State{
	"pending": idem.Pending, "refused": idem.Refused, "completed": idem.Completed,
	"failed": idem.Failed, "expired": idem.Expired, "abandoned": idem.Abandoned,
}

// listOperations returns the journal's operations in the given states
// (all of them if states is empty), oldest first. If some records cannot
// be read, it returns the others and an error wrapping
// idem.ErrJournalCorrupt that names them.
func listOperations(j *idem.Journal, want []string) ([]*idem.Operation, error) {
	ss := make([]idem.State, 0, len(want))
	for _, s := range want {
		ss = append(ss, stateNames[s])
	}
	return j.Operations(ss...)
}

// findOperation returns the operation whose key, or failing that whose
// name, is ref.
func findOperation(j *idem.Journal, ref string) (*idem.Operation, error) {
	op, ok, err := j.Lookup(ref)
	if err != nil || ok {
		return op, err
	}
	ops, err := j.Operations()
	for _, op := range ops {
		if op.Name == ref {
			return op, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no operation with key or name %q in %s", ref, j.Path())
}

// forgetOperation gives up the pending or refused operation with key on
// purpose: it stays in the journal as abandoned, and is never sent again.
func forgetOperation(j *idem.Journal, key string) (*idem.Operation, error) {
	return j.Abandon(key)
}

// purgeJournal deletes finished operations last updated more than
// olderThan ago and returns how many.
func purgeJournal(j *idem.Journal, olderThan time.Duration) (int, error) {
	return j.Purge(olderThan)
}

// resumeJournal resumes every pending operation of j with a client made
// of o. onLast is called after each operation's last attempt (its answer,
// or the attempt after which it gave up); an operation that is not sent
// (expired) or stopped while waiting between attempts has no such call.
func resumeJournal(ctx context.Context, j *idem.Journal, o idem.Options, onLast func(idem.Attempt)) ([]idem.Resumed, error) {
	o.Journal = j
	o.ResumeJitter = -1 // a person is waiting; concurrency bounds the load
	o.OnAttempt = func(at idem.Attempt) {
		if !at.Retry && onLast != nil {
			onLast(at)
		}
	}
	c, err := idem.New(o)
	if err != nil {
		return nil, usagef("%s", strings.TrimPrefix(err.Error(), "idem: "))
	}
	return c.Resume(ctx)
}
