package grpcidem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemhq/idem/grpcidem/internal/scenario"
)

// TestCrashResume SIGKILLs the calling process, again and again, while
// its calls are at the server, before and after the charge
// (scenario.Crash): on every store, each call charges exactly once, the
// restarted processes resume the calls that were pending, and the last
// gets every answer. The naive variant, a client without a journal that
// mints new keys in each process, charges again for each call a kill cut
// off after its charge: the test can fail.
func TestCrashResume(t *testing.T) {
	t.Parallel()
	for _, mk := range backends(t) {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			res := scenario.Crash(t, b.store, b.ledger, false)
			assert.Equal(t, scenario.CrashKills, res.Kills)
			assert.Positive(t, res.Resumed, "some calls were pending at a kill and resumed")
			for i := range scenario.CrashCalls {
				assert.Equal(t, 1, b.ledger.Count(t, scenario.CrashCustomer(i)), "call %d charged once", i)
			}
			assert.Equal(t, scenario.CrashCalls, b.ledger.Count(t, ""))
		})
	}
	t.Run("naive", func(t *testing.T) {
		t.Parallel()
		ledger := &scenario.MemLedger{}
		res := scenario.Crash(t, nil, ledger, true)
		assert.Equal(t, scenario.CrashKills, res.Kills)
		extra := ledger.Count(t, "") - scenario.CrashCalls
		t.Logf("naive client: %d calls charged %d times", scenario.CrashCalls, ledger.Count(t, ""))
		assert.Positive(t, extra, "a call cut off after its charge is charged again under a new key")
		assert.LessOrEqual(t, extra, scenario.CrashKills)
	})
}

// TestCrashChild is the client process of TestCrashResume.
func TestCrashChild(t *testing.T) { scenario.CrashChild(t) }
