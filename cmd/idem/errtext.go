package main

// This file holds how the command words an idem client's errors and its
// counts for a person.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/idemhq/idem"
)

// describe words e for a person: the request, its key if it had one, and
// the reason, with no "idem: " inside it (main puts one before the whole
// line), then the attempts and the last status or error.
func describe(e *idem.Error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Method, e.URL)
	if e.Key != "" { // a request refused before it had a key has none
		fmt.Fprintf(&b, " (key %q)", e.Key)
	}
	fmt.Fprintf(&b, ": %s", unprefixed(e.Err))
	if e.Attempts > 0 {
		fmt.Fprintf(&b, " after %s", count(e.Attempts, "attempt"))
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ", last status %d", e.StatusCode)
	}
	if e.Cause != nil && e.Cause != e.Err {
		fmt.Fprintf(&b, ", last error: %s", unprefixed(e.Cause))
	}
	return b.String()
}

// errorText is err's message for a person: describe's for an
// *idem.Error, else err's own without its "idem: ".
func errorText(err error) string {
	var e *idem.Error
	if errors.As(err, &e) {
		return describe(e)
	}
	return unprefixed(err)
}

// unprefixed is err's message without the "idem: " idem's errors start
// with.
func unprefixed(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimPrefix(err.Error(), "idem: ")
}

// count spells n things: "1 operation", "2 operations", "0 operations".
// noun is the singular, made plural with an s.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
