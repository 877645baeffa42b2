// This file holds the suite's checks, on plain testing: must and noError
// stop the subtest, check and equal report and let it go on.

package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// must stops the test with the formatted message if ok is false.
func must(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

// check reports the formatted message if ok is false, and lets the test
// go on.
func check(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}

// noError stops the test if err is not nil; what names the call.
func noError(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// equal reports, and lets the test go on, if got is not deeply equal to
// want; what names the value.
func equal(t *testing.T, want, got any, what string) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: want %s, got %s", what, show(want), show(got))
	}
}

// show formats v for a failure message, quoting strings.
func show(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
}

// eventually calls cond every pollEvery until it returns true, and stops
// the test with the message if it has not within waitFor.
func eventually(t *testing.T, msg string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(waitFor); !cond(); time.Sleep(pollEvery) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (polled for %v)", msg, waitFor)
		}
	}
}

// within reports whether a and b are at most d apart.
func within(a, b time.Time, d time.Duration) bool {
	diff := a.Sub(b)
	return diff <= d && diff >= -d
}
