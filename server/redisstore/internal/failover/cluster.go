package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// script runs the cluster script with args, bounded by ctx.
func script(ctx context.Context, path string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", path, strings.Join(args, " "), err, out)
	}
	return nil
}

// node is a line of CLUSTER NODES.
type node struct {
	id, addr string
	master   bool // a master not flagged as failing
	failed   bool // flagged fail (the cluster agreed), not just fail?
	slots    bool
	of       string // a replica's master's id
}

// nodes reads CLUSTER NODES from the first seed that answers.
func nodes(ctx context.Context, seeds []string) ([]node, error) {
	var lastErr error
	for _, addr := range seeds {
		c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
		text, err := c.ClusterNodes(ctx).Result()
		c.Close()
		if err != nil {
			lastErr = err
			continue
		}
		var out []node
		for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			flags := strings.Split(f[2], ",")
			out = append(out, node{
				id:     f[0],
				addr:   addr,
				master: slices.Contains(flags, "master") && !slices.Contains(flags, "fail") && !slices.Contains(flags, "fail?"),
				failed: slices.Contains(flags, "fail"),
				slots:  len(f) > 8,
				of:     strings.Trim(f[3], "-"),
			})
		}
		return out, nil
	}
	return nil, fmt.Errorf("no seed answered CLUSTER NODES: %v", lastErr)
}

// pickMaster chooses, by rng, one master that serves slots.
func pickMaster(ctx context.Context, seeds []string, rng *rand.Rand) (node, error) {
	all, err := nodes(ctx, seeds)
	if err != nil {
		return node{}, err
	}
	var masters []node
	for _, n := range all {
		if n.master && n.slots {
			masters = append(masters, n)
		}
	}
	if len(masters) == 0 {
		return node{}, fmt.Errorf("no master with slots in CLUSTER NODES")
	}
	slices.SortFunc(masters, func(a, b node) int { return strings.Compare(a.addr, b.addr) })
	return masters[rng.IntN(len(masters))], nil
}

// replicaOf returns the address of a replica of m.
func replicaOf(ctx context.Context, seeds []string, m node) (string, error) {
	all, err := nodes(ctx, seeds)
	if err != nil {
		return "", err
	}
	for _, n := range all {
		if n.of == m.id {
			return n.addr, nil
		}
	}
	return "", fmt.Errorf("%s has no replica in CLUSTER NODES", m.addr)
}

// holdBack makes m's replica fall behind for o.lag, as over a slow link,
// and returns the function that lets it go on. Pausing the replica alone
// loses nothing on loopback: what the master sent waits in the kernel's
// socket buffers and is read on resume. So, with the replica paused, the
// master first writes a burst of expiring filler (junkBytes) that fills
// those buffers; what the master acknowledges after it waits in the
// master's own memory for the link, and dies with it.
func holdBack(ctx context.Context, o options, m node) (func() error, error) {
	replica, err := replicaOf(ctx, o.addrs, m)
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(replica, ":")
	if err := script(ctx, o.script, "pause", port); err != nil {
		return nil, err
	}
	resume := func() error { return script(context.WithoutCancel(ctx), o.script, "resume", port) }
	c := redis.NewClient(&redis.Options{Addr: m.addr, MaxRetries: -1})
	defer c.Close()
	filler := strings.Repeat("x", junkChunk)
	for i, written := 0, 0; written < junkBytes && i < 10_000; i++ {
		err := c.Set(ctx, fmt.Sprintf("idemfailover-junk-%d", i), filler, time.Minute).Err()
		if _, moved := redis.IsMovedError(err); moved {
			continue // a slot of another master
		}
		if err != nil {
			resume()
			return nil, fmt.Errorf("writing filler to %s: %v", m.addr, err)
		}
		written += junkChunk
	}
	time.Sleep(o.lag)
	return resume, nil
}

// The filler holdBack writes: more than loopback's socket buffers hold
// (a few MiB each way), far below the replica output buffer limit that
// would disconnect the replica (256 MiB).
const (
	junkChunk = 1 << 20
	junkBytes = 32 << 20
)

// promoted polls the surviving nodes until the cluster agreed killed
// failed and another node serves its slots, and every survivor reports
// cluster_state:ok, and returns how long that took from since.
func promoted(ctx context.Context, seeds []string, killed node, since time.Time) (time.Duration, error) {
	var survivors []string
	for _, s := range seeds {
		if s != killed.addr {
			survivors = append(survivors, s)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if ok, _ := healthy(ctx, survivors, killed); ok {
			return time.Since(since), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("no replica of %s was promoted within a minute", killed.addr)
}

func healthy(ctx context.Context, survivors []string, killed node) (bool, error) {
	all, err := nodes(ctx, survivors)
	if err != nil {
		return false, err
	}
	for _, n := range all {
		if n.id == killed.id && (!n.failed || n.slots) {
			// Not yet agreed failed, or its slots not yet taken over: a
			// node is flagged fail? long before its replica is elected,
			// and cluster_state stays ok meanwhile.
			return false, nil
		}
	}
	for _, addr := range survivors {
		c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
		info, err := c.ClusterInfo(ctx).Result()
		c.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false, err
		}
	}
	return true, nil
}
