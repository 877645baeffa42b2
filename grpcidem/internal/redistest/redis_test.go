package redistest

import (
	"crypto/rand"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/server/redisstore"
)

// newStore returns a redisstore on IDEM_TEST_REDIS_SINGLE under a fresh
// prefix, or skips the test when it is unset.
func newStore(t *testing.T) *redisstore.Store {
	addr := os.Getenv("IDEM_TEST_REDIS_SINGLE")
	if addr == "" {
		t.Skip("set IDEM_TEST_REDIS_SINGLE (such as 127.0.0.1:6379) to run grpcidem's runs on redisstore")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	st, err := redisstore.New(rdb, redisstore.Options{Prefix: "grpcidem-test-" + strings.ToLower(rand.Text()[:10]) + ":"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestConcurrentCallsRunOnce: 100 identical calls at once charge once
// and all get its answer (the naive server's 100 charges are shown in
// grpcidem's own test).
func TestConcurrentCallsRunOnce(t *testing.T) {
	t.Parallel()
	const calls = 100
	res := scenario.Race(t, newStore(t), &scenario.MemLedger{}, calls)
	if len(res.Errors) > 0 || res.Effects != 1 || len(res.Answers) != 1 || res.Replays != calls-1 {
		t.Errorf("%d calls: %d charges, %d distinct answers, %d replays, errors %v; want 1, 1, %d, none",
			calls, res.Effects, len(res.Answers), res.Replays, res.Errors, calls-1)
	}
}

// TestFaultsChargeOnce: calls through the lossy proxy charge once each.
func TestFaultsChargeOnce(t *testing.T) {
	t.Parallel()
	res := scenario.Faults(t, newStore(t), &scenario.MemLedger{})
	t.Logf("%d calls, %d charges; proxy %+v", scenario.FaultCalls, res.Effects, res.Proxy)
	if len(res.Errors) > 0 || res.Effects != scenario.FaultCalls || res.Proxy.Dropped == 0 || res.Proxy.Resets == 0 {
		t.Errorf("%d calls: %d charges, errors %v, proxy %+v; want one charge a call, and faults", scenario.FaultCalls, res.Effects, res.Errors, res.Proxy)
	}
}

// TestCrashResume: client processes SIGKILLed before and after the
// charge, resumed from their journal, charge once a call.
func TestCrashResume(t *testing.T) {
	t.Parallel()
	ledger := &scenario.MemLedger{}
	res := scenario.Crash(t, newStore(t), ledger, false)
	if res.Kills != scenario.CrashKills || res.Resumed == 0 || ledger.Count(t, "") != scenario.CrashCalls {
		t.Errorf("%d kills, %d resumed: %d charges for %d calls; want %d kills, some resumed, one charge a call",
			res.Kills, res.Resumed, ledger.Count(t, ""), scenario.CrashCalls, scenario.CrashKills)
	}
	for i := range scenario.CrashCalls {
		if n := ledger.Count(t, scenario.CrashCustomer(i)); n != 1 {
			t.Errorf("call %d charged %d times", i, n)
		}
	}
}

// TestCrashChild is the client process of TestCrashResume.
func TestCrashChild(t *testing.T) { scenario.CrashChild(t) }
