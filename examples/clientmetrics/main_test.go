package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun: every charge sent is counted once by the client's operation
// histogram, the proxy's faults show as retries, and the journal holds
// nothing pending once the run is over.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	_, err := run(context.Background(), &out, 20, 3)
	require.NoError(t, err)
	text := out.String()
	t.Log("\n" + text)
	assert.NotContains(t, text, "# charge", "every charge got an answer")

	count := regexp.MustCompile(`(?m)^idem_client_operation_duration_seconds_count\{[^}]*idem_outcome="completed"[^}]*\} (\d+)$`)
	var ops int
	for _, m := range count.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		ops += n
	}
	assert.Equal(t, 20, ops, "one completed operation per charge")
	assert.Regexp(t, `(?m)^idem_client_retries_total\{.*\} [1-9]`, text, "the proxy's faults are retried")
	assert.Regexp(t, `(?m)^idem_client_operations_pending 0$`, text)
	assert.Regexp(t, `(?m)^idem_client_journal_commit_duration_seconds_count [1-9]`, text)
}
