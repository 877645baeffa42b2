package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem/server/pgstore"
)

// storeStates are the names keys ls --state takes.
var storeStates = []string{"running", "completed"}

func newKeysLsCmd(a *app, f *storeFlags) *cobra.Command {
	var (
		state  string
		scopes []string
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "ls [--state running|completed] [--scope SCOPE...]",
		Short: "Count a store's records by state and list its running keys",
		Long: `ls counts the store's records by state and lists its running keys,
oldest first, with when they were claimed and when their lease lapses or
lapsed: the place to look when keys seem stuck.

  running    a claim under a live lease: the work is running
  lapsed     a claim whose lease lapsed with no outcome stored: its worker
             crashed or hangs; a retry of the same request takes it over
  completed  a stored outcome: repeats are answered from it
  expired    an outcome past its retention: any request may claim the key
  purgeable  what idem keys purge would delete now: the expired records,
             and the lapsed ones older than --abandon

--state running shows the running and lapsed counts and the keys;
--state completed shows the completed and expired counts (the store lists
no completed keys). --scope limits both to some scopes (repeatable; the
scope of a single-tenant service is ""). Counts and times come from the
database's clock.

A key that a transactional store's ClaimWork holds has no record until its
work commits, so it is neither counted nor listed; if its worker dies, the
database frees it with the worker's connection.

On a Redis store (--redis) ls counts running, lapsed and completed
records (Redis deletes expired ones itself, so there is nothing
purgeable) and lists the running keys whose lease lapsed or lapses first:
the store records no claim times. Redis keeps no index of the records,
so ls scans: SCAN over --redis-prefix on the node or on every master of a
cluster, reading each record's state and lease, O(keys in Redis) in many
short commands, writing nothing. Times come from the Redis servers'
clocks.`,
		Example: `  idem keys ls --database postgres://idem@db:5432/app
  IDEM_DATABASE=postgres://idem@db:5432/app idem keys ls --state running --scope acme --json
  idem keys ls --redis 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 --state running`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if state != "" && !slices.Contains(storeStates, state) {
				return usagef("--state %q: want one of %s", state, strings.Join(storeStates, ", "))
			}
			if limit < 1 {
				return usagef("--limit must be at least 1")
			}
			ctx := cmd.Context()
			redis, err := a.useRedis(cmd, f)
			if err != nil {
				return err
			}
			if redis {
				return a.lsRedis(ctx, f, state, scopes, limit)
			}
			s, err := a.openStore(ctx, f)
			if err != nil {
				return err
			}
			defer s.Close()
			st, err := s.Stats(ctx, scopes...)
			if err != nil {
				return err
			}
			findings, _ := s.Findings(ctx)
			for _, f := range findings {
				a.warn(f.Severity.String(), f)
			}
			running, more, err := runningPage(state, limit, func(n int) ([]pgstore.RunningKey, error) {
				return s.Running(ctx, n, scopes...)
			})
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(keysReportJSON(f.table, state, st, running, more))
			}
			return a.printKeys(f, state, st, running, more)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&state, "state", "", "show only running (and lapsed) or completed (and expired) records: `STATE` ("+strings.Join(storeStates, "|")+")")
	fl.StringArrayVar(&scopes, "scope", nil, "only records of this `SCOPE` (repeatable)")
	fl.IntVar(&limit, "limit", pgstore.DefaultRunningLimit, "list at most this many running keys, the oldest")
	cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(storeStates, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// keysJSON is keys ls's --json document.
type keysJSON struct {
	// Table names a PostgreSQL store; Redis and Prefix a Redis one.
	Table  string     `json:"table,omitempty"`
	Redis  string     `json:"redis,omitempty"`
	Prefix string     `json:"prefix,omitempty"`
	At     time.Time  `json:"at"`
	Counts countsJSON `json:"counts"`
	// Running is nil with --state completed.
	Running []runningKeyJSON `json:"running,omitempty"`
	// More reports running keys beyond --limit.
	More bool `json:"more,omitempty"`
}

// countsJSON are the counts keys ls shows; those --state leaves out are
// absent, and so are those a Redis store has no use for (expired,
// purgeable: Redis deletes them) or does not know (claim times).
type countsJSON struct {
	Running       *int       `json:"running,omitempty"`
	Lapsed        *int       `json:"lapsed,omitempty"`
	Completed     *int       `json:"completed,omitempty"`
	Expired       *int       `json:"expired,omitempty"`
	Purgeable     *int       `json:"purgeable,omitempty"`
	Oldest        *time.Time `json:"oldest,omitempty"`
	Newest        *time.Time `json:"newest,omitempty"`
	OldestRunning *time.Time `json:"oldest_running,omitempty"`
}

// runningKeyJSON is a running key; a Redis store records neither when it
// was claimed nor whether it was taken over, so those are absent.
type runningKeyJSON struct {
	Scope        string     `json:"scope"`
	Key          string     `json:"key"`
	Since        *time.Time `json:"since,omitempty"`
	LeaseExpires time.Time  `json:"lease_expires"`
	Lapsed       bool       `json:"lapsed"`
	TakenOver    *bool      `json:"taken_over,omitempty"`
}

func keysReportJSON(table, state string, st pgstore.Stats, running []pgstore.RunningKey, more bool) keysJSON {
	r := keysJSON{Table: table, At: st.At, More: more}
	c := &r.Counts
	timeOf := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	if state != "completed" {
		c.Running, c.Lapsed, c.OldestRunning = &st.Running, &st.Lapsed, timeOf(st.OldestRunning)
		r.Running = make([]runningKeyJSON, 0, len(running))
		for _, k := range running {
			r.Running = append(r.Running, runningKeyJSON{
				Scope: k.Key.Scope, Key: k.Key.Key, Since: &k.Since, LeaseExpires: k.LeaseExpires,
				Lapsed: k.Lapsed, TakenOver: &k.HeldByLock,
			})
		}
	}
	if state != "running" {
		c.Completed, c.Expired = &st.Completed, &st.Expired
	}
	if state == "" {
		c.Purgeable, c.Oldest, c.Newest = &st.Purgeable, timeOf(st.Oldest), timeOf(st.Newest)
	}
	return r
}

func (a *app) printKeys(f *storeFlags, state string, st pgstore.Stats, running []pgstore.RunningKey, more bool) error {
	now := st.At // the database's clock, as the records' times
	fmt.Fprintf(a.stdout, "table %s, at %s (the database's clock)\n\n", f.table, now.UTC().Format(time.RFC3339))
	t := newTable(a.stdout, "STATE", "RECORDS")
	if state != "completed" {
		t.row("running", fmt.Sprint(st.Running))
		t.row("lapsed", fmt.Sprint(st.Lapsed))
	}
	if state != "running" {
		t.row("completed", fmt.Sprint(st.Completed))
		t.row("expired", fmt.Sprint(st.Expired))
	}
	if state == "" {
		t.row("purgeable", fmt.Sprintf("%d (expired, and lapsed over %s ago)", st.Purgeable, shortDuration(f.abandon)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if state == "" && !st.Oldest.IsZero() {
		fmt.Fprintf(a.stdout, "\noldest record claimed %s ago, newest %s ago\n", age(now, st.Oldest), age(now, st.Newest))
	}
	if state == "completed" {
		return nil
	}
	if len(running) == 0 {
		fmt.Fprintln(a.stdout, "\nno running keys")
		return nil
	}
	fmt.Fprintf(a.stdout, "\nrunning keys, oldest first (oldest claimed %s ago):\n", age(now, st.OldestRunning))
	g := newGrid("SCOPE", "KEY", "CLAIMED", "LEASE", "TAKEN OVER")
	for _, k := range running {
		lease := "lapses in " + shortDuration(k.LeaseExpires.Sub(now))
		if k.Lapsed {
			lease = "lapsed " + age(now, k.LeaseExpires) + " ago"
		}
		g.add(k.Key.Scope, k.Key.Key, age(now, k.Since)+" ago", lease, yesNo(k.HeldByLock))
	}
	if err := g.write(a.stdout); err != nil {
		return err
	}
	if more {
		fmt.Fprintf(a.stdout, "(the oldest %d; --limit lists more)\n", len(running))
	}
	return nil
}

// runningPage reads up to limit running keys through fetch, none when state
// asks for completed records only, and reports whether there are more:
// it asks fetch for one more than limit.
func runningPage[K any](state string, limit int, fetch func(n int) ([]K, error)) ([]K, bool, error) {
	if state == "completed" {
		return nil, false, nil
	}
	running, err := fetch(limit + 1)
	if err != nil {
		return nil, false, err
	}
	return running[:min(len(running), limit)], len(running) > limit, nil
}
