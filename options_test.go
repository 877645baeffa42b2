// This file tests New's checks of Options: invalid and contradictory
// settings are refused with an error naming the field.

package idem

import (
	"strings"
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
		{"header and body key", Options{Header: "Idempotency-Key", BodyKey: "idempotency_key"}, "are both set"},
		{"body key with an empty step", Options{BodyKey: "payment..key"}, "Options.BodyKey"},
		{"negative key limit", Options{MaxKeyLen: -1}, "Options.MaxKeyLen is -1"},
		{"key limit above 255", Options{MaxKeyLen: 300}, "Options.MaxKeyLen is 300"},
		{"minted keys do not fit", Options{MaxKeyLen: 30}, "Options.KeyFormat uuidv7 makes 36-byte keys, longer than Options.MaxKeyLen (30)"},
		{"ULIDs do not fit either", Options{MaxKeyLen: 20, KeyFormat: ULID}, "Options.KeyFormat ulid makes 26-byte keys"},
		{"a hint that is no header", Options{RetryHints: []string{"Should Retry"}}, "Options.RetryHints"},
		{"a required header that is no header", Options{RequiredHeaders: []string{""}}, "Options.RequiredHeaders"},
		{"a profile's limit under the format", Options{Profile: Profile{MaxKeyLen: 30}}, "longer than Options.MaxKeyLen (30)"},
		{"the key in Content-Type", Options{Header: "content-type"}, "Options.Header is Content-Type"},
		{"the key in Authorization", Options{Header: "Authorization"}, "Options.Header is Authorization"},
		{"a budget that cannot pay for a retry", Options{Budget: BudgetOptions{Capacity: 3}}, "Options.Budget.Capacity (3) is below Options.Budget.RetryCost (5)"},
		{"a budget under its own retry cost", Options{Budget: BudgetOptions{Capacity: 10, RetryCost: 20}}, "Options.Budget.Capacity (10)"},
		{"a secret header that is no header", Options{SecretHeaders: []string{"X Api Key"}}, "Options.SecretHeaders"},
		{"a journaled header that is no header", Options{JournalHeaders: []string{"x:y"}}, "Options.JournalHeaders"},
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
		"ULIDs fit 30":           {MaxKeyLen: 30, KeyFormat: ULID},
		"a body key":             {BodyKey: "payment.idempotency_key"},
		"the header overrides a profile's body key": {Profile: Square(), Header: "Idempotency-Key"},
		"a short MaxDelay alone":                    {MaxDelay: 100 * time.Millisecond},
		"a budget of one retry":                     {Budget: BudgetOptions{Capacity: 5}},
	} {
		_, err := New(o)
		assert.NoError(t, err, name)
	}
	o, err := Options{MaxDelay: 100 * time.Millisecond}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 100*time.Millisecond, o.BaseDelay, "the default BaseDelay is no longer than MaxDelay")
	o, err = Options{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, o.BaseDelay)
}

// TestProfileFillsZeroFields: a profile's values fill the fields left zero,
// and a field set on Options overrides its profile's.
func TestProfileFillsZeroFields(t *testing.T) {
	t.Parallel()
	reused := func(*Response) bool { return true }
	p := Profile{Name: "api", Header: "X-Request-Id", MaxKeyLen: 64, KeyRetention: 7 * time.Hour,
		RetryHints: []string{"x-should-retry"}, RequiredHeaders: []string{"api-version"}, IsKeyReused: reused}

	o, err := Options{Profile: p}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, "X-Request-Id", o.Header)
	assert.Empty(t, o.BodyKey)
	assert.Equal(t, 64, o.MaxKeyLen)
	assert.Equal(t, 7*time.Hour, o.KeyRetention)
	assert.Equal(t, []string{"X-Should-Retry"}, o.RetryHints)
	assert.Equal(t, []string{"Api-Version"}, o.RequiredHeaders)
	assert.NotNil(t, o.IsKeyReused)
	assert.Equal(t, []string{"x-should-retry"}, p.RetryHints, "the profile's own slice is left as it was")

	o, err = Options{Profile: p, Header: "Idempotency-Key", MaxKeyLen: 40, KeyRetention: time.Hour, RetryHints: []string{}}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, "Idempotency-Key", o.Header)
	assert.Equal(t, 40, o.MaxKeyLen)
	assert.Equal(t, time.Hour, o.KeyRetention)
	assert.Empty(t, o.RetryHints, "an empty, non-nil list turns the profile's hints off")

	o, err = Options{Profile: Square()}.withDefaults()
	require.NoError(t, err)
	assert.Empty(t, o.Header, "a body key sends no key header")
	assert.Equal(t, "idempotency_key", o.BodyKey)
	o, err = Options{Profile: Square(), Header: "Idempotency-Key"}.withDefaults()
	require.NoError(t, err)
	assert.Empty(t, o.BodyKey, "naming a header takes the key's place from the profile")
}

func TestProfileNamed(t *testing.T) {
	t.Parallel()
	for _, want := range Profiles() {
		got, ok := ProfileNamed(strings.ToUpper(want.Name))
		require.True(t, ok, want.Name)
		assert.Equal(t, want.Name, got.Name)
	}
	_, ok := ProfileNamed("nope")
	assert.False(t, ok)
}
