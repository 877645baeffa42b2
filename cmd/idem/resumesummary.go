package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/idemhq/idem"
)

// resumeSummary is resume's result.
type resumeSummary struct {
	Total       int               `json:"total"`
	Completed   int               `json:"completed"`
	Failed      int               `json:"failed"`
	Expired     int               `json:"expired"`
	Pending     int               `json:"pending"`
	Unreadable  int               `json:"unreadable,omitempty"`
	Replayed    int               `json:"replayed"`
	Interrupted bool              `json:"interrupted"`
	Operations  []resumedResultJS `json:"operations"`
}

type resumedResultJS struct {
	Key      string `json:"key"`
	Name     string `json:"name,omitempty"`
	Method   string `json:"method"`
	URL      string `json:"url"`
	Outcome  string `json:"outcome"`
	Status   int    `json:"status,omitempty"`
	Attempts int    `json:"attempts"`
	Replayed bool   `json:"replayed"`
	Error    string `json:"error,omitempty"`
}

func summarise(rs []idem.Resumed) *resumeSummary {
	s := &resumeSummary{Total: len(rs), Operations: make([]resumedResultJS, 0, len(rs))}
	for _, r := range rs {
		op := r.Operation
		o := resumedResultJS{Key: op.Key, Name: op.Name, Method: op.Method, URL: op.URL}
		var e *idem.Error
		switch {
		case r.Err == nil:
			resp := r.Response
			o.Status, o.Attempts, o.Replayed = resp.StatusCode, resp.Attempts, resp.Replayed
			o.Outcome = "completed"
			if resp.StatusCode >= 400 {
				o.Outcome = "failed"
			}
		case errors.Is(r.Err, idem.ErrExpired):
			o.Outcome = "expired"
		case errors.Is(r.Err, idem.ErrKeyReused):
			o.Outcome = "failed"
		case errors.Is(r.Err, idem.ErrJournalCorrupt):
			o.Outcome = "unreadable" // never sent
		default:
			o.Outcome = "pending"
		}
		if r.Err != nil {
			o.Error = errorText(r.Err)
			if errors.As(r.Err, &e) {
				o.Status, o.Attempts = e.StatusCode, e.Attempts
			}
		}
		switch o.Outcome {
		case "completed":
			s.Completed++
		case "failed":
			s.Failed++
		case "expired":
			s.Expired++
		case "unreadable":
			s.Unreadable++
		default:
			s.Pending++
		}
		if o.Replayed {
			s.Replayed++
		}
		s.Operations = append(s.Operations, o)
	}
	return s
}

// printResume prints the counts by outcome and the operations that need a
// person: those that failed, are still pending or expired. With all, it
// lists every operation.
func (a *app) printResume(s *resumeSummary, all bool) error {
	if s.Total == 0 {
		fmt.Fprintln(a.stdout, "nothing pending")
		return nil
	}
	t := newTable(a.stdout, "OUTCOME", "OPERATIONS")
	t.row("completed", fmt.Sprintf("%d (%d replayed by the server)", s.Completed, s.Replayed))
	t.row("failed", fmt.Sprint(s.Failed))
	t.row("expired", fmt.Sprint(s.Expired))
	t.row("pending", fmt.Sprint(s.Pending))
	if s.Unreadable > 0 {
		t.row("unreadable", fmt.Sprint(s.Unreadable))
	}
	if err := t.flush(); err != nil {
		return err
	}
	sections := []struct {
		title string
		want  func(o resumedResultJS) bool
	}{
		{"every operation:", func(resumedResultJS) bool { return all }},
		{"failed: a final answer of 400 or more", func(o resumedResultJS) bool { return !all && o.Outcome == "failed" }},
		{"still pending: no final answer; run idem resume again", func(o resumedResultJS) bool {
			return !all && o.Outcome == "pending" && !s.Interrupted // interrupted, they are the rest
		}},
		{"expired: older than the server's key retention, so not sent; reconcile them", func(o resumedResultJS) bool { return !all && o.Outcome == "expired" }},
		{"unreadable: the journal's record is damaged, so not sent; reconcile them", func(o resumedResultJS) bool { return !all && o.Outcome == "unreadable" }},
	}
	for _, sec := range sections {
		g := newGrid("KEY", "NAME", "METHOD", "URL", "OUTCOME", "STATUS", "ATTEMPTS", "REPLAYED", "ERROR").omitEmpty("NAME", "ERROR")
		for _, o := range s.Operations {
			if !sec.want(o) {
				continue
			}
			status := ""
			if o.Status != 0 {
				status = fmt.Sprint(o.Status)
			}
			g.add(o.Key, o.Name, o.Method, o.URL, o.Outcome, status, fmt.Sprint(o.Attempts), yesNo(o.Replayed), errorCell(o.Error))
		}
		if len(g.rows) == 0 {
			continue
		}
		fmt.Fprintf(a.stdout, "\n%s\n", sec.title)
		if err := g.write(a.stdout); err != nil {
			return err
		}
	}
	return nil
}

// errorCell shortens an operation's error for a table: the reason, not the
// request line the other columns show.
func errorCell(s string) string {
	if _, reason, ok := strings.Cut(s, "): "); ok {
		s = reason
	}
	s = strings.TrimPrefix(s, "idem: ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
