package main

// This file holds the keys commands on a Redis store (server/redisstore):
// opening it, keys ls's report of it, and keys purge's answer that Redis
// purges itself.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/server/redisstore"
)

// redisStore is a Redis store opened for the keys commands: the store,
// its client, and the addresses to name it by (never a password).
type redisStore struct {
	*redisstore.Store
	rdb   redis.UniversalClient
	addrs string
	// cluster reports a Redis Cluster, scanned on every master.
	cluster bool
}

func (s *redisStore) Close() { s.rdb.Close() }

// openRedis connects to the Redis the flags name, or $IDEM_REDIS, and
// returns the store under --redis-prefix. One address is a single node,
// unless that node says it is in a cluster: then it is a seed of that
// cluster. Several are a cluster's seeds. The caller closes the store.
func (a *app) openRedis(ctx context.Context, f *storeFlags) (*redisStore, error) {
	// go-redis logs failed dials to stderr on its own; the command reports
	// the failure once, itself.
	redis.SetLogger(quietLogger{})
	spec := f.redis
	if spec == "" {
		spec = a.getenv(redisEnv)
	}
	single, cluster, err := redisOptions(spec)
	if err != nil {
		return nil, err
	}
	opts := redisstore.Options{Prefix: f.redisPrefix}
	// newStore is the store on rdb; New checks the prefix and does not
	// touch Redis, so a bad prefix is told before any connection.
	newStore := func(rdb redis.UniversalClient, addrs string) (*redisStore, error) {
		s, err := redisstore.New(rdb, opts)
		if err != nil {
			rdb.Close()
			return nil, usagef("--redis-prefix %q: %v", f.redisPrefix, err)
		}
		_, isCluster := rdb.(*redis.ClusterClient)
		return &redisStore{Store: s, rdb: rdb, addrs: addrs, cluster: isCluster}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if single != nil {
		s, err := newStore(redis.NewClient(single), single.Addr)
		if err != nil {
			return nil, err
		}
		info, err := s.rdb.Info(ctx, "cluster").Result()
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("redis %s: %v", s.addrs, redisError(ctx, err))
		}
		if !strings.Contains(info, "cluster_enabled:1") {
			return s, nil
		}
		s.Close()
		cluster = &redis.ClusterOptions{
			Addrs: []string{single.Addr}, Username: single.Username, Password: single.Password,
			TLSConfig: single.TLSConfig, DialTimeout: single.DialTimeout,
		}
	}
	s, err := newStore(redis.NewClusterClient(cluster), strings.Join(cluster.Addrs, ","))
	if err != nil {
		return nil, err
	}
	c := s.rdb.(*redis.ClusterClient)
	if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }); err != nil {
		s.Close()
		return nil, fmt.Errorf("redis %s: %v", s.addrs, redisError(ctx, err))
	}
	return s, nil
}

// quietLogger drops go-redis's log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// redisOptions reads --redis: a redis:// or rediss:// URL (a cluster's if
// it has addr= parameters), or comma-separated addresses. Exactly one of
// the results is non-nil when err is nil.
func redisOptions(spec string) (*redis.Options, *redis.ClusterOptions, error) {
	const dial = 5 * time.Second
	if strings.Contains(spec, "://") {
		if strings.Contains(spec, "addr=") {
			o, err := redis.ParseClusterURL(spec)
			if err != nil {
				return nil, nil, usagef("--redis: %v", redactURL(err, spec))
			}
			o.DialTimeout = dial
			return nil, o, nil
		}
		o, err := redis.ParseURL(spec)
		if err != nil {
			return nil, nil, usagef("--redis: %v", redactURL(err, spec))
		}
		o.DialTimeout = dial
		return o, nil, nil
	}
	addrs := strings.Split(spec, ",")
	for _, addr := range addrs {
		if !strings.Contains(addr, ":") {
			return nil, nil, usagef("--redis %q: want host:port[,host:port...] or a redis:// URL", spec)
		}
	}
	if len(addrs) == 1 {
		return &redis.Options{Addr: addrs[0], DialTimeout: dial}, nil, nil
	}
	return nil, &redis.ClusterOptions{Addrs: addrs, DialTimeout: dial}, nil
}

// redactURL is err's message without the URL's password, should go-redis
// have quoted it.
func redactURL(err error, spec string) string {
	msg := err.Error()
	if i := strings.Index(spec, "://"); i >= 0 {
		if at := strings.LastIndex(spec, "@"); at > i {
			if _, pass, ok := strings.Cut(spec[i+3:at], ":"); ok && pass != "" {
				msg = strings.ReplaceAll(msg, pass, "xxxxx")
			}
		}
	}
	return msg
}

// redisError is err, or the context's error when the connection timed out.
func redisError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s: %v", openTimeout, err)
	}
	return err
}

// lsRedis is keys ls on a Redis store.
func (a *app) lsRedis(ctx context.Context, f *storeFlags, state string, scopes []string, limit int) error {
	s, err := a.openRedis(ctx, f)
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
	running, more, err := runningPage(state, limit, func(n int) ([]redisstore.RunningKey, error) {
		return s.Running(ctx, n, scopes...)
	})
	if err != nil {
		return err
	}
	if a.json {
		return a.writeJSON(redisReportJSON(s.addrs, f.redisPrefix, state, st, running, more))
	}
	name := s.addrs
	if s.cluster {
		name += " (cluster)"
	}
	return a.printRedisKeys(name, f.redisPrefix, state, st, running, more)
}

func redisReportJSON(addrs, prefix, state string, st redisstore.Stats, running []redisstore.RunningKey, more bool) keysJSON {
	r := keysJSON{Redis: addrs, Prefix: prefix, At: st.At, More: more}
	c := &r.Counts
	if state != "completed" {
		c.Running, c.Lapsed = &st.Running, &st.Lapsed
		r.Running = make([]runningKeyJSON, 0, len(running))
		for _, k := range running {
			r.Running = append(r.Running, runningKeyJSON{
				Scope: k.Key.Scope, Key: k.Key.Key, LeaseExpires: k.LeaseExpires, Lapsed: k.Lapsed,
			})
		}
	}
	if state != "running" {
		c.Completed = &st.Completed
	}
	return r
}

func (a *app) printRedisKeys(addrs, prefix, state string, st redisstore.Stats, running []redisstore.RunningKey, more bool) error {
	now := st.At // Redis's clock, as the records' times
	fmt.Fprintf(a.stdout, "redis %s, prefix %q, at %s (Redis's clock)\n\n", addrs, prefix, now.UTC().Format(time.RFC3339))
	t := newTable(a.stdout, "STATE", "RECORDS")
	if state != "completed" {
		t.row("running", fmt.Sprint(st.Running))
		t.row("lapsed", fmt.Sprint(st.Lapsed))
	}
	if state != "running" {
		t.row("completed", fmt.Sprint(st.Completed))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if state == "completed" {
		return nil
	}
	if len(running) == 0 {
		fmt.Fprintln(a.stdout, "\nno running keys")
		return nil
	}
	fmt.Fprintln(a.stdout, "\nrunning keys, lapsing first:")
	g := newGrid("SCOPE", "KEY", "LEASE")
	for _, k := range running {
		lease := "lapses in " + shortDuration(k.LeaseExpires.Sub(now))
		if k.Lapsed {
			lease = "lapsed " + age(now, k.LeaseExpires) + " ago"
		}
		g.add(k.Key.Scope, k.Key.Key, lease)
	}
	if err := g.write(a.stdout); err != nil {
		return err
	}
	if more {
		fmt.Fprintf(a.stdout, "(the first %d to lapse; --limit lists more)\n", len(running))
	}
	return nil
}

// purgeRedis is keys purge on a Redis store: it checks that Redis
// answers, and deletes nothing, since Redis deletes each record itself
// when it expires.
func (a *app) purgeRedis(ctx context.Context, f *storeFlags) error {
	s, err := a.openRedis(ctx, f)
	if err != nil {
		return err
	}
	defer s.Close()
	if a.json {
		return a.writeJSON(struct {
			Purged int `json:"purged"`
		}{0})
	}
	fmt.Fprintf(a.stdout, "nothing to purge in redis %s: Redis deletes each record itself\n"+
		"when it expires (a completed one when its retention ends, a running one\n"+
		"redisstore.Options.Abandon after its lease lapsed)\n", s.addrs)
	return nil
}
