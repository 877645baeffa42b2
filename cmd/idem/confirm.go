package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// confirm prints what is about to happen to standard error, then asks
// question unless yes (the command's --yes flag) is set. It asks only a
// person at a terminal: with standard input not a terminal it refuses, so
// that a script never does something by accident.
func (a *app) confirm(yes bool, what, question, command string) error {
	fmt.Fprint(a.stderr, what)
	if yes {
		return nil
	}
	if !a.stdinTTY {
		return usagef("%s needs --yes, or a confirmation at a terminal (standard input is not one)", command)
	}
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	line, err := bufio.NewReader(io.LimitReader(a.stdin, 1024)).ReadString('\n')
	if err != nil && line == "" {
		return errNotConfirmed
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errNotConfirmed
}
