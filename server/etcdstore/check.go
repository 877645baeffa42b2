// This file holds Findings and Check: what the cluster says about itself
// that would void the store's promise.

package etcdstore

import (
	"context"
	"errors"
	"fmt"
)

// The kinds of [Finding], for errors.Is.
var (
	// ErrFewMembers: fewer than three voting members. One member keeps
	// every acknowledged record on its disk but stops the store when it
	// stops; two stop it when either does. Three survive one failure.
	ErrFewMembers = errors.New("idem/etcdstore: fewer than three voting members")
	// ErrMemberDown: a member did not answer its status. The cluster runs
	// with one failure less to spare.
	ErrMemberDown = errors.New("idem/etcdstore: a member does not answer")
	// ErrAlarm: an alarm is raised. NOSPACE makes etcd refuse every write
	// (new keys are refused, outcomes of running work cannot be
	// recorded); CORRUPT means a member's data diverged.
	ErrAlarm = errors.New("idem/etcdstore: an alarm is raised")
	// ErrNearQuota: a member's database is at 80% of its
	// --quota-backend-bytes or more; at the quota etcd raises NOSPACE.
	ErrNearQuota = errors.New("idem/etcdstore: database near its quota")
)

// Finding is one thing Findings read that can make the store refuse work
// or lose records. It is an error wrapping its kind (ErrFewMembers,
// ErrMemberDown, ErrAlarm, ErrNearQuota); its message names what was read
// and the fix.
type Finding struct {
	Kind   error
	Detail string
}

func (f *Finding) Error() string { return f.Kind.Error() + ": " + f.Detail }
func (f *Finding) Unwrap() error { return f.Kind }

// nearQuota is the share of --quota-backend-bytes past which Findings
// reports ErrNearQuota.
const nearQuota = 0.8

// Findings asks the cluster about itself, writing nothing: its member
// list, each member's status (on that member's endpoint, one round trip
// each) and the alarms. It returns a Finding for each voting member
// short of three, each member that does not answer, each alarm, and each
// member whose database is near its quota; none when all is well. The
// error is for a cluster it could not ask at all. What it cannot read
// from a client: whether members fsync (--unsafe-no-fsync), and whether
// auto-compaction is on (watch the database's size instead: ErrNearQuota
// comes first). Run it at start and log what it returns.
func (s *Store) Findings(ctx context.Context) ([]*Finding, error) {
	members, err := s.cli.MemberList(ctx)
	if err != nil {
		return nil, translate(ctx, "findings: member list", err)
	}
	var found []*Finding
	voting := 0
	for _, m := range members.Members {
		if !m.IsLearner {
			voting++
		}
	}
	if voting < 3 {
		found = append(found, &Finding{ErrFewMembers, fmt.Sprintf(
			"%d voting member(s): a failure stops the store; run three or five members", voting)})
	}
	for _, m := range members.Members {
		if len(m.ClientURLs) == 0 {
			found = append(found, &Finding{ErrMemberDown, fmt.Sprintf("member %q has not started (no client URL)", m.Name)})
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, s.cfg.tryTimeout)
		st, err := s.cli.Status(tctx, m.ClientURLs[0])
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, translate(ctx, "findings: status", err)
			}
			found = append(found, &Finding{ErrMemberDown, fmt.Sprintf("member %q at %s: %v", m.Name, m.ClientURLs[0], err)})
			continue
		}
		if st.DbSizeQuota > 0 && float64(st.DbSize) >= nearQuota*float64(st.DbSizeQuota) {
			found = append(found, &Finding{ErrNearQuota, fmt.Sprintf(
				"member %q: database of %d bytes, quota %d: compact and defragment (--auto-compaction-retention), or raise --quota-backend-bytes",
				m.Name, st.DbSize, st.DbSizeQuota)})
		}
	}
	alarms, err := s.cli.AlarmList(ctx)
	if err != nil {
		return nil, translate(ctx, "findings: alarms", err)
	}
	for _, a := range alarms.Alarms {
		found = append(found, &Finding{ErrAlarm, fmt.Sprintf(
			"%v on member %x: for NOSPACE, compact, defragment and disarm (etcdctl alarm disarm)", a.Alarm, a.MemberID)})
	}
	return found, nil
}

// Check returns the findings that stop the store from working or keeping
// its promise, joined: a raised alarm, fewer than three voting members,
// or a member down. nil means the cluster is whole. A database near its
// quota is only reported by Findings.
func (s *Store) Check(ctx context.Context) error {
	found, err := s.Findings(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range found {
		if !errors.Is(f, ErrNearQuota) {
			errs = append(errs, f)
		}
	}
	return errors.Join(errs...)
}
