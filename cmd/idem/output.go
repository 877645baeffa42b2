package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// writeJSON prints v as one indented JSON document.
func (a *app) writeJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table prints rows aligned in columns under a header. Cells must not
// contain tabs or newlines; cell escapes them.
type table struct {
	w *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(t.w, "\t")
		}
		io.WriteString(t.w, cell(c))
	}
	io.WriteString(t.w, "\n")
}

func (t *table) flush() error { return t.w.Flush() }

// grid collects a table's rows before printing them, so that optional
// columns that are empty in every row can be left out.
type grid struct {
	header   []string
	optional map[string]bool
	rows     [][]string
}

func newGrid(header ...string) *grid { return &grid{header: header, optional: map[string]bool{}} }

// omitEmpty marks columns to leave out when no row has a value in them.
func (g *grid) omitEmpty(names ...string) *grid {
	for _, n := range names {
		g.optional[n] = true
	}
	return g
}

func (g *grid) add(cells ...string) { g.rows = append(g.rows, cells) }

func (g *grid) write(w io.Writer) error {
	var keep []int
	for i, h := range g.header {
		used := !g.optional[h]
		for _, r := range g.rows {
			used = used || r[i] != ""
		}
		if used {
			keep = append(keep, i)
		}
	}
	pick := func(cells []string) []string {
		out := make([]string, len(keep))
		for j, i := range keep {
			out[j] = cells[i]
		}
		return out
	}
	t := newTable(w, pick(g.header)...)
	for _, r := range g.rows {
		t.row(pick(r)...)
	}
	return t.flush()
}

// cell makes s safe for one table cell: control characters are escaped and
// an empty value shows as "-".
func cell(s string) string {
	if s == "" {
		return "-"
	}
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) < 0 {
		return s
	}
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

// age formats how long ago t was, in the largest whole unit: 42s, 5m, 3h,
// 2d.
func age(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return shortDuration(now.Sub(t))
}

func shortDuration(d time.Duration) string {
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%s%ds", neg, int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%s%dm", neg, int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%s%dh", neg, int(d/time.Hour))
	}
	return fmt.Sprintf("%s%dd", neg, int(d/(24*time.Hour)))
}

// yesNo renders a boolean for a table.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
