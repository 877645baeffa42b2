package etcdstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/idemhq/idem/server"
)

// Defaults of [Options].
const (
	DefaultPrefix = "idem/"
	// DefaultMaxResponse is below etcd's default --max-request-bytes
	// (1.5 MiB), with room for the rest of the record and the request.
	DefaultMaxResponse = 1 << 20
	DefaultTryTimeout  = 5 * time.Second
)

// ErrInvalidOptions is wrapped by the error [New] returns for Options it
// cannot use; the message names the field.
var ErrInvalidOptions = errors.New("idem/etcdstore: invalid options")

// Options configures a Store. The zero value is valid and means the
// documented defaults.
type Options struct {
	// Prefix starts the name of every etcd key the store writes, so that
	// several stores (or other data) can share one cluster. Any bytes may
	// follow it. Default "idem/" (DefaultPrefix).
	Prefix string

	// Abandon is how long a running record is kept after its lease
	// lapsed, so that a worker that was only paused can still record its
	// outcome, a retry with the same fingerprint can take the key over,
	// and one with another fingerprint is still refused. After it the
	// record is forgotten (its etcd lease expires) and the key is free.
	// Default 24 h (server.DefaultAbandon).
	Abandon time.Duration

	// MaxResponse is the largest outcome Complete stores, in bytes: the
	// body plus the encoded header. It must fit, with the rest of the
	// record, in the cluster's --max-request-bytes and in the client's
	// MaxCallSendMsgSize (go.etcd.io/etcd/client/v3's default is 2 MiB).
	// Complete of a larger outcome stores nothing and returns an error
	// wrapping ErrResponseTooLarge. Default 1 MiB (DefaultMaxResponse).
	MaxResponse int

	// TryTimeout bounds each request the store sends to etcd, inside the
	// caller's context. A proposal that reaches a member while the
	// cluster has no leader is dropped by raft and would otherwise wait
	// out the whole context (etcd's own limit is 5 s plus two election
	// timeouts): bounded, Complete sends it again, to the next member,
	// and Claim answers at once that it could not claim. A try that timed
	// out and landed all the same is recognised by the next one. Keep it
	// well above the cluster's commit latency under load. Default 5 s
	// (DefaultTryTimeout).
	TryTimeout time.Duration
}

// config is Options with the defaults applied.
type config struct {
	prefix      string
	abandon     time.Duration
	maxResponse int
	tryTimeout  time.Duration
}

func (o Options) config() (config, error) {
	if o.Abandon < 0 || o.MaxResponse < 0 || o.TryTimeout < 0 {
		return config{}, fmt.Errorf("%w: a negative Abandon, MaxResponse or TryTimeout", ErrInvalidOptions)
	}
	c := config{prefix: o.Prefix, abandon: o.Abandon, maxResponse: o.MaxResponse, tryTimeout: o.TryTimeout}
	if c.prefix == "" {
		c.prefix = DefaultPrefix
	}
	if c.abandon == 0 {
		c.abandon = server.DefaultAbandon
	}
	if c.maxResponse == 0 {
		c.maxResponse = DefaultMaxResponse
	}
	if c.tryTimeout == 0 {
		c.tryTimeout = DefaultTryTimeout
	}
	return c, nil
}
