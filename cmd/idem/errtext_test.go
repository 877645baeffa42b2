package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemhq/idem"
)

// TestDescribe: an *idem.Error reads with "idem: " once (main adds it),
// its key only when it had one, and counts in the singular for one.
func TestDescribe(t *testing.T) {
	t.Parallel()
	cause := errors.New("idem: attempt timed out")
	tests := []struct {
		name string
		e    *idem.Error
		want string
	}{
		{"no key yet", &idem.Error{Method: "POST", URL: "http://api.test/x", Err: fmt.Errorf("%w %q: malformed quoted string", idem.ErrInvalidKey, `"ab`)},
			`POST http://api.test/x: invalid idempotency key "\"ab": malformed quoted string`},
		{"one attempt", &idem.Error{Method: "POST", URL: "http://api.test/x", Key: "k1", Attempts: 1, StatusCode: 503, Err: idem.ErrRetriesExhausted},
			`POST http://api.test/x (key "k1"): retries exhausted after 1 attempt, last status 503`},
		{"five attempts and a cause", &idem.Error{Method: "PUT", URL: "http://api.test/y", Key: "k5", Attempts: 5, Err: idem.ErrRetriesExhausted, Cause: cause},
			`PUT http://api.test/y (key "k5"): retries exhausted after 5 attempts, last error: attempt timed out`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, describe(tc.e))
			assert.Equal(t, tc.want, errorText(fmt.Errorf("wrapped: %w", tc.e)))
		})
	}
	assert.Equal(t, "1 operation", count(1, "operation"))
	assert.Equal(t, "0 operations", count(0, "operation"))
	assert.Equal(t, "2 records", count(2, "record"))
}

// TestSendRefusedBeforeKey: a request the client refuses before it has a
// key (a name over 1024 bytes) is said once, without a key, and not as an
// operation pending in the journal.
func TestSendRefusedBeforeKey(t *testing.T) {
	t.Parallel()
	journal := filepath.Join(t.TempDir(), "app.journal")
	r := runIdem(t, "", nil, "send", "--journal", journal, "--name", strings.Repeat("n", 1025), "-d", "{}", "http://127.0.0.1:9/charges")
	assert.Equal(t, exitError, r.code)
	assert.Equal(t, "idem: POST http://127.0.0.1:9/charges: operation name must be 1 to 1024 bytes, not 1025\n", r.stderr)
}
