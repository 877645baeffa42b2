package redisstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemhq/idem/server"
)

// Defaults of [Options].
const (
	DefaultPrefix      = "idem:"
	DefaultMaxResponse = 4 << 20
	DefaultWaitTimeout = time.Second
)

// Options configures a Store. The zero value is valid and means the
// documented defaults.
type Options struct {
	// Prefix starts the name of every Redis key the store writes, so that
	// several stores (or other data) can share one Redis. It must not hold
	// '{' or '}': the rest of the key is a Cluster hash tag. Default
	// "idem:".
	Prefix string

	// Abandon is how long Redis keeps a running record after its lease
	// lapsed, so that a worker that was only paused can still record its
	// outcome, a retry with the same fingerprint can take the key over,
	// and one with another fingerprint is still refused. After it the
	// record is forgotten and the key is free. Default 24 h
	// (server.DefaultAbandon).
	Abandon time.Duration

	// MaxResponse is the largest outcome Complete stores, in bytes: the
	// body plus the encoded header. It bounds the memory of one record.
	// Complete of a larger outcome stores nothing and returns an error
	// wrapping ErrResponseTooLarge; it holds the key instead (see
	// Store.Complete), so no retry runs the work again. Default 4 MiB
	// (DefaultMaxResponse).
	MaxResponse int

	// WaitReplicas, when above zero, makes Claim and Complete wait until
	// that many replicas have acknowledged their writes (Redis's WAIT,
	// sent in the same round trip as the script) before they report
	// success, so that a failover right after a claim or an outcome does
	// not lose it. See the Replication section of the package
	// documentation for what it costs and what it does not promise.
	// It needs a *redis.Client (one node, or Sentinel's failover client)
	// or a *redis.ClusterClient. Default 0: no waiting.
	WaitReplicas int

	// WaitTimeout bounds each wait for replicas. It must be below the
	// client's ReadTimeout (New refuses it otherwise): the wait is read
	// like any reply. Default 1 s (DefaultWaitTimeout); only used with
	// WaitReplicas.
	WaitTimeout time.Duration
}

// config is Options with the defaults applied and durations in whole
// milliseconds, Redis's unit of expiry.
type config struct {
	prefix       string
	abandonMS    int64
	maxResponse  int
	waitReplicas int
	waitTimeout  time.Duration
}

func (o Options) config() (config, error) {
	c := config{
		prefix:       o.Prefix,
		maxResponse:  o.MaxResponse,
		waitReplicas: o.WaitReplicas,
		waitTimeout:  o.WaitTimeout,
	}
	switch {
	case strings.ContainsAny(o.Prefix, "{}"):
		return c, fmt.Errorf("redisstore: Options.Prefix %q holds a brace; the key after it is a Cluster hash tag", o.Prefix)
	case o.Abandon < 0 || o.MaxResponse < 0 || o.WaitReplicas < 0 || o.WaitTimeout < 0:
		return c, fmt.Errorf("redisstore: Options has a negative Abandon, MaxResponse, WaitReplicas or WaitTimeout")
	}
	if c.prefix == "" {
		c.prefix = DefaultPrefix
	}
	abandon := o.Abandon
	if abandon == 0 {
		abandon = server.DefaultAbandon
	}
	c.abandonMS = millis(abandon)
	if c.maxResponse == 0 {
		c.maxResponse = DefaultMaxResponse
	}
	if c.waitTimeout == 0 {
		c.waitTimeout = DefaultWaitTimeout
	}
	return c, nil
}

// millis is d in whole milliseconds, rounded up and at least 1: Redis
// deletes a key given an expiry of 0, and a lease must not end before it
// was asked to. The longest Duration is under 2^44 ms, so a time computed
// from it in a script (a double) stays an exact integer.
func millis(d time.Duration) int64 {
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	return max(int64(ms), 1)
}
