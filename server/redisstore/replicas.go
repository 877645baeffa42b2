package redisstore

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitAttempts bounds how often a script with WAIT is sent to a cluster
// node that turned out not to own the key (a failover or a resharding
// moved its slot), each after the cluster's layout is reloaded.
const waitAttempts = 3

// eval runs sc on key with args in one round trip: EVALSHA, or EVAL once if
// the server does not have the script cached (the first call on a node, or
// after a failover). go-redis follows Cluster redirections and retries a
// broken connection itself; each script is safe to receive twice.
//
// go-redis's ClusterClient reloads the cluster's layout on a redirection,
// but not when a node stops answering: after a master dies it keeps
// sending that master's slots to it until its periodic reload
// (ClusterOptions.ClusterStateReloadInterval, a minute by default), long
// after the replica took over. So a failure that says the node is gone
// asks for a reload here, and the calls after it find the new master.
//
// With wait, WAIT for Options.WaitReplicas is pipelined behind the script
// on the same connection (WAIT counts the replicas that have the writes of
// its own connection) and acks is its answer. go-redis routes a WAIT sent
// through a ClusterClient to every master, not to the connection that
// wrote, so in a cluster the pair goes to the key's master directly.
func (s *Store) eval(ctx context.Context, sc *redis.Script, key string, wait bool, args ...any) (res any, acks int64, err error) {
	keys := []string{key}
	if !wait {
		res, err = sc.Run(ctx, s.rdb, keys, args...).Result()
		if s.cluster != nil && elsewhere(err) {
			s.cluster.ReloadState(ctx)
		}
		return res, 0, err
	}
	if s.single != nil {
		return s.evalWait(ctx, s.single, sc, keys, args)
	}
	for attempt := range waitAttempts {
		if attempt > 0 {
			// Let the lazy reload of the cluster's layout land.
			select {
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
			}
		}
		var node *redis.Client
		node, err = s.cluster.MasterForKey(ctx, key)
		if err == nil {
			res, acks, err = s.evalWait(ctx, node, sc, keys, args)
			if !elsewhere(err) {
				return res, acks, err
			}
		}
		s.cluster.ReloadState(ctx)
	}
	return nil, 0, err
}

// evalWait sends the script and WAIT to node as one pipeline, and again
// with the script's source if node did not have it cached.
func (s *Store) evalWait(ctx context.Context, node *redis.Client, sc *redis.Script, keys []string, args []any) (any, int64, error) {
	res, acks, err := s.pipeline(ctx, node, func(p redis.Pipeliner) *redis.Cmd { return sc.EvalSha(ctx, p, keys, args...) })
	if isNoScript(err) {
		res, acks, err = s.pipeline(ctx, node, func(p redis.Pipeliner) *redis.Cmd { return sc.Eval(ctx, p, keys, args...) })
	}
	return res, acks, err
}

// pipeline sends the command script queues and WAIT in one round trip.
func (s *Store) pipeline(ctx context.Context, node *redis.Client, script func(redis.Pipeliner) *redis.Cmd) (any, int64, error) {
	pipe := node.Pipeline()
	cmd := script(pipe)
	// Pipeliner has no Wait method; the command is the same.
	wait := redis.NewIntCmd(ctx, "wait", s.cfg.waitReplicas, s.cfg.waitTimeout.Milliseconds())
	_ = pipe.Process(ctx, wait)
	_, _ = pipe.Exec(ctx) // each command carries its own error
	if err := cmd.Err(); err != nil {
		return nil, 0, err
	}
	acks, _ := wait.Result() // a failed WAIT acknowledged nothing
	return cmd.Val(), acks, nil
}

func isNoScript(err error) bool {
	return errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")
}

// untilAnsweredFor bounds untilAnswered when ctx has no deadline.
const untilAnsweredFor = time.Minute

// untilAnswered calls f until it returns an error other than one that says
// the key's node is gone or unreachable (see elsewhere), sleeping between
// calls with capped, jittered exponential backoff (25 ms doubling to 1 s),
// until ctx is done or, if ctx has no deadline, untilAnsweredFor has
// passed. It returns f's last error.
func untilAnswered(ctx context.Context, f func() error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, untilAnsweredFor)
		defer cancel()
	}
	err := f()
	for n := 0; elsewhere(err); n++ {
		ceiling := min(25*time.Millisecond<<min(n, 6), time.Second)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(ceiling/2 + rand.N(ceiling/2)):
		}
		err = f()
	}
	return err
}

// elsewhere reports whether err says the key's master is not the node the
// pipeline went to, or is gone: the cluster's layout is stale.
func elsewhere(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := redis.IsMovedError(err); ok {
		return true
	}
	if _, ok := redis.IsAskError(err); ok {
		return true
	}
	var ne net.Error
	return redis.IsTryAgainError(err) || redis.IsClusterDownError(err) || redis.IsReadOnlyError(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne)
}
