package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The kinds of [Finding]: each Finding wraps one, so callers branch with
// errors.Is on a Finding or on the error [Store.Check] returns.
var (
	// ErrEvictionPolicy: the server's maxmemory-policy is not noeviction,
	// so Redis deletes records to make room. An evicted record is
	// forgotten: the next retry of its key runs the work again.
	ErrEvictionPolicy = errors.New("idem/redisstore: maxmemory-policy can evict idempotency records")

	// ErrNoPersistence: the server has neither AOF nor RDB snapshots, so a
	// restart forgets every record and every key re-sent after it runs
	// again.
	ErrNoPersistence = errors.New("idem/redisstore: Redis persists nothing: a restart forgets every idempotency record")

	// ErrWeakPersistence: the server persists, but a crash loses the
	// latest acknowledged records: up to about a second of them with
	// appendfsync everysec, all those since the last snapshot with RDB
	// alone.
	ErrWeakPersistence = errors.New("idem/redisstore: persistence can lose the latest idempotency records in a crash")

	// ErrAsyncReplicas: the server has replicas and Options.WaitReplicas
	// is 0, so a failover loses the records the master acknowledged
	// before its replica had them.
	ErrAsyncReplicas = errors.New("idem/redisstore: replicas not waited for: a failover can lose idempotency records")

	// ErrTooFewReplicas: the server has fewer connected replicas than
	// Options.WaitReplicas, so every Claim waits Options.WaitTimeout and
	// is refused with [ErrNotReplicated].
	ErrTooFewReplicas = errors.New("idem/redisstore: fewer replicas than Options.WaitReplicas: claims are refused")

	// ErrUnverified: a setting the other kinds depend on could not be
	// read, because the server refused INFO, CONFIG GET or both (renamed,
	// disabled, or not allowed by an ACL).
	ErrUnverified = errors.New("idem/redisstore: Redis settings cannot be verified")
)

// Severity orders findings by what it takes for Redis to lose records.
type Severity int

const (
	// Notice: a crash of the machine can lose a bounded, small window of
	// acknowledged records (AOF with appendfsync everysec), or such a
	// setting could not be read.
	Notice Severity = iota + 1
	// Warning: a restart, a crash or a failover can lose many acknowledged
	// records (no persistence, RDB only, replicas not waited for), or
	// claims are refused for want of replicas.
	Warning
	// Critical: Redis deletes records while it runs normally (an evicting
	// policy), or nothing says whether it does. [Store.Check] returns
	// these.
	Critical
)

// String returns "notice", "warning" or "critical".
func (s Severity) String() string {
	switch s {
	case Notice:
		return "notice"
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	}
	return "Severity(" + strconv.Itoa(int(s)) + ")"
}

// Finding is one server setting that lets Redis lose idempotency records,
// or one that could not be read. It is an error wrapping its kind, Err,
// so errors.Is(f, ErrNoPersistence) tells one kind from another.
//
// Setting, Risk and Fix are text for people (logs, a command's output),
// not for matching; Err and Severity are what callers branch on.
type Finding struct {
	// Err is the kind: ErrEvictionPolicy, ErrNoPersistence,
	// ErrWeakPersistence, ErrAsyncReplicas, ErrTooFewReplicas or
	// ErrUnverified.
	Err error
	// Severity is how bad the kind is in this setting.
	Severity Severity
	// Addr is the master the finding is about, as the cluster client
	// dials it; empty for a client that is not a cluster client.
	Addr string
	// Setting is what the server reported, such as
	// "maxmemory-policy volatile-lru (maxmemory 4194304)".
	Setting string
	// Risk is what the setting costs in records and duplicate executions.
	Risk string
	// Fix names the change that removes the finding.
	Fix string
}

// Error returns "redisstore: [Addr: ]Setting: Risk; fix: Fix".
func (f Finding) Error() string {
	var b strings.Builder
	b.WriteString("redisstore: ")
	if f.Addr != "" {
		b.WriteString(f.Addr)
		b.WriteString(": ")
	}
	b.WriteString(f.Setting)
	b.WriteString(": ")
	b.WriteString(f.Risk)
	b.WriteString("; fix: ")
	b.WriteString(f.Fix)
	return b.String()
}

// Unwrap returns f.Err.
func (f Finding) Unwrap() error { return f.Err }

// Check reports whether Redis can delete idempotency records while it runs
// normally: it returns nil only when the maxmemory-policy of the server,
// or of every master of a cluster, was read and is noeviction. Otherwise
// it returns an error joining the [Critical] findings of [Store.Findings]:
// a [Finding] wrapping [ErrEvictionPolicy] for each server with another
// policy (the volatile ones included: every record has an expiry), and
// one wrapping [ErrUnverified] for each server whose policy could not be
// read (INFO and CONFIG GET both refused), where nothing says what Redis
// does. Run it at start-up and log what it returns; errors.Is and
// errors.As tell the kinds apart.
//
// The policy is read from INFO memory, so a server that refuses CONFIG
// (renamed or disabled, as on many managed services) is checked all the
// same. Findings about persistence and replication do not make Check
// fail: read them with Store.Findings. A server that cannot be reached is
// an error too, joined with the findings of the others; a cancelled ctx
// returns its error.
func (s *Store) Check(ctx context.Context) error {
	findings, err := s.Findings(ctx)
	var errs []error
	for _, f := range findings {
		if f.Severity == Critical {
			errs = append(errs, f)
		}
	}
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// Findings reads how the Redis server, or every master of a cluster,
// keeps the records, and returns every [Finding], most severe first, then
// by Addr: an evicting maxmemory-policy ([Critical]), no persistence or
// RDB snapshots alone ([Warning]), AOF with appendfsync other than always
// (Notice with everysec, Warning with no), replicas while
// Options.WaitReplicas is 0, fewer replicas than Options.WaitReplicas
// (Warning), and any of these settings it could not read
// ([ErrUnverified]). None means the policy is noeviction, AOF is on with
// appendfsync always, and the replicas, if any, are waited for.
//
// Each server is asked in one round trip: INFO memory, persistence and
// replication (maxmemory_policy, maxmemory, aof_enabled,
// rdb_changes_since_last_save, role, connected_slaves) and CONFIG GET of
// maxmemory-policy, maxmemory, save, appendonly and appendfsync. A refused
// command (renamed, disabled or not allowed by an ACL) is not an error:
// what INFO reports is read from INFO, and what only CONFIG reports (save,
// appendfsync: INFO does not show them, Redis 7.0 included) becomes, where
// it matters, a Finding wrapping ErrUnverified. A server refusing both
// yields one Critical ErrUnverified finding. Findings writes nothing; what
// it returns holds for the settings at the time of the call.
//
// The error is for servers that could not be asked (unreachable, a
// cluster whose layout cannot be loaded): Findings then returns those of
// the others with an error naming each server it could not read. A
// cancelled ctx returns its error.
func (s *Store) Findings(ctx context.Context) ([]Finding, error) {
	if s.cluster == nil {
		r, err := read(ctx, s.rdb)
		if err != nil {
			return nil, translate(ctx, "check", err)
		}
		return bySeverity(r.assess("", s.cfg.waitReplicas)), nil
	}
	var (
		mu       sync.Mutex
		findings []Finding
		errs     []error
	)
	err := s.cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		addr := node.Options().Addr
		r, err := read(ctx, node)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, translate(ctx, "check "+addr, err))
			return nil
		}
		findings = append(findings, r.assess(addr, s.cfg.waitReplicas)...)
		return nil
	})
	if err != nil {
		return nil, translate(ctx, "check", err)
	}
	return bySeverity(findings), errors.Join(errs...)
}

// bySeverity sorts fs most severe first, then by Addr (the masters of a
// cluster answer in any order), keeping the order of the kinds otherwise.
func bySeverity(fs []Finding) []Finding {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(b.Severity, a.Severity), strings.Compare(a.Addr, b.Addr))
	})
	return fs
}

// The INFO sections and CONFIG parameters Findings reads. One parameter
// per CONFIG GET and one section per INFO: Redis before 7.0 takes no more.
var (
	infoSections = []string{"memory", "persistence", "replication"}
	configParams = []string{"maxmemory-policy", "maxmemory", "save", "appendonly", "appendfsync"}
)

// reading is what one server said about its settings.
type reading struct {
	// info holds the fields of the INFO sections, config the CONFIG GET
	// parameters; nil if the server refused the command, with the refusal
	// in infoRefused or configRefused.
	info, config               map[string]string
	infoRefused, configRefused string
}

// read asks c for infoSections and configParams in one pipeline. A
// command the server refuses leaves its map nil; any other failure (the
// server unreachable, ctx done) is returned.
func read(ctx context.Context, c redis.UniversalClient) (reading, error) {
	pipe := c.Pipeline()
	infos := make([]*redis.StringCmd, len(infoSections))
	for i, section := range infoSections {
		infos[i] = pipe.Info(ctx, section)
	}
	configs := make([]*redis.MapStringStringCmd, len(configParams))
	for i, param := range configParams {
		configs[i] = pipe.ConfigGet(ctx, param)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error

	r := reading{info: map[string]string{}, config: map[string]string{}}
	var rerr redis.Error
	for _, cmd := range infos {
		text, err := cmd.Result()
		switch {
		case errors.As(err, &rerr):
			if r.info != nil {
				r.info, r.infoRefused = nil, strings.TrimSpace(err.Error())
			}
		case err != nil:
			return reading{}, err
		case r.info != nil:
			infoFields(text, r.info)
		}
	}
	for _, cmd := range configs {
		got, err := cmd.Result()
		switch {
		case errors.As(err, &rerr):
			if r.config != nil {
				r.config, r.configRefused = nil, strings.TrimSpace(err.Error())
			}
		case err != nil:
			return reading{}, err
		case r.config != nil:
			for k, v := range got {
				r.config[k] = v
			}
		}
	}
	return r, nil
}

// infoFields adds the fields of INFO's text to into: each "name:value"
// line, with section headers ("# Memory"), blank lines and lines without
// a colon passed over. A name seen twice keeps its last value.
func infoFields(text string, into map[string]string) {
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		if name, value, ok := strings.Cut(line, ":"); ok && name != "" {
			into[name] = value
		}
	}
}

// setting returns the value INFO reports under field or, failing that,
// CONFIG GET under param ("" for none), and whether either had it.
func (r reading) setting(field, param string) (string, bool) {
	if v, ok := r.info[field]; ok && field != "" {
		return v, true
	}
	v, ok := r.config[param]
	return v, ok && param != ""
}

// assess turns what one server said into its findings, in the order of
// the kinds; addr names the server in each. It is the whole decision, so
// that it can be tested on readings no real server need be set up for.
func (r reading) assess(addr string, waitReplicas int) []Finding {
	var fs []Finding
	if r.info == nil && r.config == nil {
		fs = []Finding{{
			Err:      ErrUnverified,
			Severity: Critical,
			Setting:  fmt.Sprintf("INFO and CONFIG GET refused (%s; %s)", r.infoRefused, r.configRefused),
			Risk:     "nothing says whether Redis evicts or persists idempotency records, and an evicted or forgotten record's key runs its work again",
			Fix:      "allow INFO (or CONFIG GET) to the store's user, or confirm maxmemory-policy noeviction, appendonly yes and appendfsync always with the provider",
		}}
	} else {
		for _, f := range []*Finding{r.memory(), r.persistence(), r.replication(waitReplicas)} {
			if f != nil {
				fs = append(fs, *f)
			}
		}
	}
	for i := range fs {
		fs[i].Addr = addr
	}
	return fs
}

// memory judges maxmemory-policy.
func (r reading) memory() *Finding {
	policy, ok := r.setting("maxmemory_policy", "maxmemory-policy")
	if !ok {
		return &Finding{
			Err:      ErrUnverified,
			Severity: Critical,
			Setting:  "maxmemory-policy not reported" + r.refusals(),
			Risk:     "under any policy but noeviction Redis deletes records to make room, and an evicted record's key runs its work again",
			Fix:      "confirm maxmemory-policy noeviction, or allow INFO to the store's user",
		}
	}
	if policy == "noeviction" {
		return nil
	}
	limit, _ := r.setting("maxmemory", "maxmemory")
	setting := fmt.Sprintf("maxmemory-policy %s (maxmemory %s)", policy, limit)
	if limit == "0" {
		setting = fmt.Sprintf("maxmemory-policy %s (maxmemory 0: no eviction until a limit is set)", policy)
	}
	var who string
	switch {
	case strings.HasPrefix(policy, "volatile-"):
		who = "Redis deletes keys that have an expiry to make room, and every idempotency record has one"
	case strings.HasPrefix(policy, "allkeys-"):
		who = "Redis deletes any key to make room, idempotency records included"
	default:
		who = "Redis may delete idempotency records to make room"
	}
	return &Finding{
		Err:      ErrEvictionPolicy,
		Severity: Critical,
		Setting:  setting,
		Risk: who + ": an evicted record is forgotten, so its key's next retry runs the work again " +
			"(a duplicate execution), and an evicted running record lets a second run start beside the first",
		Fix: "set maxmemory-policy noeviction and size maxmemory for the retention's records " +
			"(a full Redis then refuses new keys with ErrFull instead)",
	}
}

// persistence judges appendonly, appendfsync and save.
func (r reading) persistence() *Finding {
	const fix = "set appendonly yes and appendfsync always"
	aof, ok := r.setting("aof_enabled", "appendonly")
	if !ok {
		return &Finding{
			Err:      ErrUnverified,
			Severity: Warning,
			Setting:  "appendonly not reported" + r.refusals(),
			Risk:     "without persistence a restart forgets every record, and each key re-sent after it runs again",
			Fix:      fix + ", or confirm them with the provider",
		}
	}
	if aof == "1" || aof == "yes" {
		fsync, ok := r.config["appendfsync"]
		switch {
		case !ok:
			return &Finding{
				Err:      ErrUnverified,
				Severity: Notice,
				Setting:  "appendonly yes, appendfsync not reported" + r.refusals(),
				Risk:     "with Redis's default appendfsync everysec a crash of the machine loses up to about 1 s of acknowledged records, whose keys run again when re-sent",
				Fix:      "confirm appendfsync always with the provider, or allow CONFIG GET to the store's user",
			}
		case fsync == "always":
			return nil
		case fsync == "everysec":
			return &Finding{
				Err:      ErrWeakPersistence,
				Severity: Notice,
				Setting:  "appendonly yes, appendfsync everysec",
				Risk:     "a crash of the machine loses up to about 1 s of acknowledged records, whose keys run again when re-sent",
				Fix:      "set appendfsync always (each write then waits for its fsync)",
			}
		default:
			return &Finding{
				Err:      ErrWeakPersistence,
				Severity: Warning,
				Setting:  "appendonly yes, appendfsync " + fsync,
				Risk:     "the operating system writes the AOF out when it chooses (on Linux within about 30 s): a crash of the machine loses the records it had not, whose keys run again when re-sent",
				Fix:      "set appendfsync always",
			}
		}
	}
	save, ok := r.config["save"]
	switch {
	case !ok:
		return &Finding{
			Err:      ErrUnverified,
			Severity: Warning,
			Setting:  "appendonly no, save not reported" + r.refusals(),
			Risk:     "without RDB snapshots a restart forgets every record, and with them a crash loses those since the last snapshot: their keys run again when re-sent",
			Fix:      fix + ", or confirm persistence with the provider",
		}
	case save == "":
		return &Finding{
			Err:      ErrNoPersistence,
			Severity: Warning,
			Setting:  `appendonly no, save ""`,
			Risk:     "a restart forgets every record: each key re-sent after it runs again",
			Fix:      fix,
		}
	}
	setting := fmt.Sprintf("appendonly no, save %q (RDB snapshots only)", save)
	if n, ok := r.info["rdb_changes_since_last_save"]; ok {
		setting = fmt.Sprintf("appendonly no, save %q (RDB snapshots only; %s changes since the last)", save, n)
	}
	return &Finding{
		Err:      ErrWeakPersistence,
		Severity: Warning,
		Setting:  setting,
		Risk:     "a crash loses every record written since the last snapshot: their keys run again when re-sent",
		Fix:      fix,
	}
}

// replication judges the connected replicas against waitReplicas.
func (r reading) replication(waitReplicas int) *Finding {
	if r.info == nil {
		if waitReplicas > 0 {
			return nil // too few replicas shows at once: claims are refused
		}
		return &Finding{
			Err:      ErrUnverified,
			Severity: Notice,
			Setting:  "connected replicas not reported" + r.refusals(),
			Risk:     "with replicas and Options.WaitReplicas 0, a failover loses the records the master acknowledged before its replica had them, and their keys run again",
			Fix:      "confirm whether Redis has replicas and, if so, set Options.WaitReplicas; or allow INFO to the store's user",
		}
	}
	if r.info["role"] != "master" {
		return nil
	}
	n, err := strconv.Atoi(r.info["connected_slaves"])
	if err != nil {
		return nil
	}
	setting := fmt.Sprintf("connected_slaves %d, Options.WaitReplicas %d", n, waitReplicas)
	switch {
	case waitReplicas == 0 && n > 0:
		return &Finding{
			Err:      ErrAsyncReplicas,
			Severity: Warning,
			Setting:  setting,
			Risk: "Redis replicates asynchronously: a failover loses the records the master acknowledged before its replica had them, " +
				"and their keys run again (measured: 668 to 844 duplicates per 8,000 operations with a replica 300 ms behind)",
			Fix: "set Options.WaitReplicas to 1 (or more, up to the replicas of each master)",
		}
	case waitReplicas > n:
		return &Finding{
			Err:      ErrTooFewReplicas,
			Severity: Warning,
			Setting:  setting,
			Risk:     "every Claim waits Options.WaitTimeout and is refused with ErrNotReplicated (the middleware answers 503): no new key runs",
			Fix:      fmt.Sprintf("attach replicas, or lower Options.WaitReplicas to %d", n),
		}
	}
	return nil
}

// refusals is " (INFO refused: ...; CONFIG GET refused: ...)" for the
// commands the server refused, or "".
func (r reading) refusals() string {
	var parts []string
	if r.info == nil {
		parts = append(parts, "INFO refused: "+r.infoRefused)
	}
	if r.config == nil {
		parts = append(parts, "CONFIG GET refused: "+r.configRefused)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
