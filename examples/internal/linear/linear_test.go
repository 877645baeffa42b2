package linear_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/examples/internal/linear"
	"github.com/idemhq/idem/internal/history"
)

// A run of the ideal key: lost answers, then replays, one effect.
func goodKey(key string, t0 int64) []history.Op {
	return []history.Op{
		{Key: key, Kind: history.Effect, Outcome: "ch_1", Call: 0, Return: 1 << 40},
		{Key: key, Kind: history.Answer, Outcome: "ch_1", Call: t0, Return: t0 + 10},
		{Key: key, Kind: history.Answer, Outcome: "ch_1", Replayed: true, Call: t0 + 20, Return: t0 + 30},
		{Key: key, Kind: history.Answer, Outcome: "ch_1", Replayed: true, Call: t0 + 25, Return: t0 + 40},
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		ops  []history.Op
		ok   bool
	}{
		{"one effect, its answer and replays", append(goodKey("op-1", 100), goodKey("op-2", 100)...), true},
		{"the first answer lost: a replay is the first the client sees", goodKey("op-1", 100)[2:], true},
		{"the first answer lost, its effect recorded", append(goodKey("op-1", 100)[:1], goodKey("op-1", 100)[2:]...), true},
		{"a duplicate: two effects for one key", append(goodKey("op-1", 100),
			history.Op{Key: "op-1", Kind: history.Effect, Outcome: "ch_2", Call: 0, Return: 1 << 40}), false},
		{"a later answer carries another outcome", append(goodKey("op-1", 100),
			history.Op{Key: "op-1", Kind: history.Answer, Outcome: "ch_2", Call: 200, Return: 210}), false},
		{"a replay of another outcome", append(goodKey("op-1", 100),
			history.Op{Key: "op-1", Kind: history.Answer, Outcome: "ch_2", Replayed: true, Call: 200, Return: 210}), false},
		{"a replay, then a first-hand answer of another outcome", []history.Op{
			{Key: "op-1", Kind: history.Answer, Outcome: "ch_1", Replayed: true, Call: 10, Return: 20},
			{Key: "op-1", Kind: history.Answer, Outcome: "ch_2", Call: 30, Return: 40}}, false},
		{"an effect of another outcome than every answer", []history.Op{
			{Key: "op-1", Kind: history.Answer, Outcome: "ch_1", Call: 10, Return: 20},
			{Key: "op-1", Kind: history.Effect, Outcome: "ch_2", Call: 0, Return: 1 << 40}}, false},
		{"concurrent first answer and replay", []history.Op{
			{Key: "op-1", Kind: history.Answer, Outcome: "ch_1", Replayed: true, Call: 10, Return: 40},
			{Key: "op-1", Kind: history.Answer, Outcome: "ch_1", Call: 20, Return: 30}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := linear.Check(c.ops)
			assert.Equal(t, c.ok, r.OK(), "%s", r)
			if !c.ok {
				require.NotEmpty(t, r.Shortest)
				assert.False(t, linear.Check(r.Shortest).OK(), "the shortest history fails too")
				for i := range r.Shortest {
					less := append(append([]history.Op(nil), r.Shortest[:i]...), r.Shortest[i+1:]...)
					assert.True(t, linear.Check(less).OK(), "dropping op %d of the shortest history, %v, passes", i, r.Shortest[i])
				}
			}
		})
	}
}

// TestDoctoredHistory: a chaos history with a duplicate charge slipped in
// fails, and the report is the two effects alone.
func TestDoctoredHistory(t *testing.T) {
	t.Parallel()
	var ops []history.Op
	for i, k := range []string{"op-0", "op-1", "op-2", "op-3"} {
		ops = append(ops, goodKey(k, int64(100*i))...)
	}
	require.True(t, linear.Check(ops).OK())
	ops = append(ops, history.Op{Key: "op-2", Kind: history.Effect, Outcome: "ch_9", Call: 0, Return: 1 << 40})
	r := linear.Check(ops)
	require.False(t, r.OK())
	assert.Equal(t, 1, r.Violations)
	assert.Len(t, r.Shortest, 2, "%s", r)
	t.Log(r)
}
