package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// sample is a set of measured durations.
type sample []time.Duration

func (s sample) quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c[min(len(c)-1, int(q*float64(len(c))))]
}

func (s sample) median() time.Duration { return s.quantile(0.5) }
func (s sample) p99() time.Duration    { return s.quantile(0.99) }

func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := slices.Clone(v)
	slices.Sort(c)
	return c[len(c)/2]
}

// table prints a Markdown table.
type table struct {
	title string
	head  []string
	rows  [][]string
	notes []string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) print() {
	fmt.Printf("\n### %s\n\n", t.title)
	fmt.Printf("| %s |\n", strings.Join(t.head, " | "))
	fmt.Printf("|%s\n", strings.Repeat(" --- |", len(t.head)))
	for _, r := range t.rows {
		fmt.Printf("| %s |\n", strings.Join(r, " | "))
	}
	for _, n := range t.notes {
		fmt.Printf("\n%s\n", n)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond)) }
func ratio(a, b float64) string { return fmt.Sprintf("%.2f×", a/b) }

// dur writes a round duration for prose: "300 ms", "1 s".
func dur(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%d ms", d/time.Millisecond)
	}
	return ms(d)
}

// seqChunk is how many sequential operations of one kind run before the
// next kind's turn. This machine's latency comes in spells (a loopback
// round trip is 0.06 ms for a while, then 0.15 ms), and a kind measured in
// one long block can land in one spell while the kind it is compared with
// lands in another: short turns give every kind the same spells.
const seqChunk = 25

// interleaved runs, rounds times, ops operations of each of steps, in
// turns of at most seqChunk: each step is called with how many to run.
func interleaved(rounds, ops int, steps ...func(n int)) {
	for range rounds {
		for done := 0; done < ops; done += seqChunk {
			n := min(seqChunk, ops-done)
			for _, step := range steps {
				step(n)
			}
		}
	}
}
