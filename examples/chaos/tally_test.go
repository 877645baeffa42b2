package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemhq/idem/internal/charges"
)

func TestTally(t *testing.T) {
	t.Parallel()
	refs := func(rs ...string) []charges.Charge {
		cs := make([]charges.Charge, len(rs))
		for i, r := range rs {
			cs[i] = charges.Charge{Ref: r}
		}
		return cs
	}
	for _, tc := range []struct {
		name                          string
		charges                       []charges.Charge
		executed, duplicates, foreign int
	}{
		{"every operation once", refs("op-0", "op-1", "op-2"), 3, 0, 0},
		{"one lost", refs("op-0", "op-2"), 2, 0, 0},
		{"one twice", refs("op-0", "op-1", "op-1", "op-2"), 3, 1, 0},
		{"beyond the batch", refs("op-0", "op-1", "op-2", "op-3"), 3, 0, 1},
		{"another program's", refs("op-0", "order-1", "order-1", "op-1", "op-2"), 3, 0, 2},
		{"nothing", nil, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			executed, duplicates, foreign := tally(tc.charges, 3)
			assert.Equal(t, [3]int{tc.executed, tc.duplicates, tc.foreign}, [3]int{executed, duplicates, foreign})
		})
	}
}
