// This file tests New's checks of Options: invalid and contradictory
// settings are refused with an error naming the field.

package idem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewRefusesInvalidOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts Options
		want string // in the error
	}{
		{"bad header", Options{Header: "Idem Key"}, "Options.Header"},
		{"bad format", Options{KeyFormat: KeyFormat(7)}, "Options.KeyFormat"},
		{"negative attempts", Options{MaxAttempts: -1}, "Options.MaxAttempts is negative"},
		{"negative attempt timeout", Options{AttemptTimeout: -time.Second}, "Options.AttemptTimeout is negative"},
		{"negative base delay", Options{BaseDelay: -1}, "Options.BaseDelay is negative"},
		{"negative max delay", Options{MaxDelay: -1}, "Options.MaxDelay is negative"},
		{"negative Retry-After clamp", Options{MaxRetryAfter: -1}, "Options.MaxRetryAfter is negative"},
		{"negative key retention", Options{KeyRetention: -time.Hour}, "Options.KeyRetention is negative"},
		{"negative request body", Options{MaxRequestBody: -1}, "Options.MaxRequestBody is negative"},
		{"negative response body", Options{MaxResponseBody: -1}, "Options.MaxResponseBody is negative"},
		{"negative journal body", Options{MaxJournalBody: -1}, "Options.MaxJournalBody is negative"},
		{"negative error body", Options{MaxErrorBody: -1}, "Options.MaxErrorBody is negative"},
		{"negative resume concurrency", Options{ResumeConcurrency: -2}, "Options.ResumeConcurrency is negative"},
		{"negative retry cost", Options{Budget: BudgetOptions{RetryCost: -5}}, "Options.Budget.RetryCost is negative"},
		{"base above max", Options{BaseDelay: 2 * time.Second, MaxDelay: time.Second}, "Options.BaseDelay (2s) is above Options.MaxDelay (1s)"},
		{"base above the default max", Options{BaseDelay: time.Minute}, "Options.BaseDelay (1m0s) is above Options.MaxDelay (10s, the default)"},
		{"attempt timeout over retention", Options{AttemptTimeout: 2 * time.Hour, KeyRetention: time.Hour}, "Options.AttemptTimeout (2h0m0s) is not below Options.KeyRetention (1h0m0s)"},
		{"retention under the default attempt timeout", Options{KeyRetention: 10 * time.Second}, "Options.AttemptTimeout (30s, the default) is not below Options.KeyRetention (10s)"},
	}
	for _, tc := range cases {
		_, err := New(tc.opts)
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
}

func TestNewAcceptsMeaningfulNegatives(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]Options{
		"zero value":             {},
		"resume starts at once":  {ResumeJitter: -1},
		"no budget":              {Budget: BudgetOptions{Capacity: -1}},
		"base equal to max":      {BaseDelay: time.Second, MaxDelay: time.Second},
		"short retention, quick": {KeyRetention: time.Minute, AttemptTimeout: time.Second},
	} {
		_, err := New(o)
		assert.NoError(t, err, name)
	}
}
