package history

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStep(t *testing.T) {
	t.Parallel()
	eff := func(o string) Op { return Op{Key: "k", Kind: Effect, Outcome: o} }
	ans := func(o string, replayed bool) Op { return Op{Key: "k", Kind: Answer, Outcome: o, Replayed: replayed} }
	for _, c := range []struct {
		name string
		s    State
		op   Op
		ok   bool
		next State
	}{
		{"a first answer records", State{}, ans("a", false), true, State{Outcome: "a"}},
		{"a replay of nothing records", State{}, ans("a", true), true, State{Outcome: "a"}},
		{"a later answer carries the recorded outcome", State{Outcome: "a"}, ans("a", false), true, State{Outcome: "a"}},
		{"a later answer of another outcome", State{Outcome: "a"}, ans("b", false), false, State{Outcome: "a"}},
		{"a replay of another outcome", State{Outcome: "a"}, ans("b", true), false, State{Outcome: "a"}},
		{"the effect of the recorded outcome", State{Outcome: "a"}, eff("a"), true, State{Outcome: "a", Effects: 1}},
		{"an effect of another outcome", State{Outcome: "a"}, eff("b"), false, State{Outcome: "a"}},
		{"a second effect", State{Outcome: "a", Effects: 1}, eff("a"), false, State{Outcome: "a", Effects: 1}},
		{"no kind", State{}, Op{Key: "k"}, false, State{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, next := Step(c.s, c.op)
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.next, next)
		})
	}
}

// TestRecordRead: what two recorders append is read back, and a line cut
// short by a kill is dropped.
func TestRecordRead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "history")
	for client := 1; client <= 2; client++ {
		r, err := Create(path, client)
		require.NoError(t, err)
		r.Answer("op-1", "ch_1", client == 2, Now())
		require.NoError(t, r.Close())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"k":"op-2","t":1,"o":"ch`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	ops, err := Read(path)
	require.NoError(t, err)
	require.Len(t, ops, 2)
	assert.Equal(t, "ch_1", ops[1].Outcome)
	assert.True(t, ops[1].Replayed)
	assert.Equal(t, 2, ops[1].Client)
	assert.LessOrEqual(t, ops[0].Call, ops[0].Return)

	require.NoError(t, os.WriteFile(path, []byte("not json\n"), 0o600))
	_, err = Read(path)
	require.Error(t, err)
}

func TestShortest(t *testing.T) {
	t.Parallel()
	// Fails while it holds both "x" and "y".
	h := []Op{{Key: "a"}, {Key: "x"}, {Key: "b"}, {Key: "y"}, {Key: "c"}}
	ok := func(h []Op) bool {
		n := 0
		for _, op := range h {
			if op.Key == "x" || op.Key == "y" {
				n++
			}
		}
		return n < 2
	}
	assert.Equal(t, []Op{{Key: "x"}, {Key: "y"}}, Shortest(h, ok))
}
