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
