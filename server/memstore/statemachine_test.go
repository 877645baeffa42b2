package memstore_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/storetest"
)

// TestStateMachine drives memstore through random sequences of claims,
// renewals, completions, releases and lookups on a clock that jumps
// (leases lapsing, records past their abandon time and their retention),
// each answer checked against storetest's reference model; rapid shrinks a
// failing sequence to a minimal one.
func TestStateMachine(t *testing.T) {
	t.Parallel()
	storetest.RunStateMachine(t, drive, func(storetest.T) storetest.Target {
		now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		const abandon = 30*time.Second + 250*time.Millisecond
		s := memstore.New(memstore.Options{Now: func() time.Time { return now }, Abandon: abandon})
		return storetest.Target{Store: s, Advance: func(d time.Duration) { now = now.Add(d) }, Abandon: abandon}
	})
}

// drive runs storetest's state machine on rapid.
func drive(t *testing.T, run func(storetest.T, storetest.Steps)) {
	rapid.Check(t, func(rt *rapid.T) {
		run(rt, func(actions map[string]func(storetest.Draw)) {
			m := make(map[string]func(*rapid.T), len(actions))
			for name, act := range actions {
				m[name] = func(rt *rapid.T) {
					act(func(label string, n int) int { return rapid.IntRange(0, n-1).Draw(rt, label) })
				}
			}
			rt.Repeat(m)
		})
	})
}
