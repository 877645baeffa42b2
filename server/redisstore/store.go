package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/server"
)

var (
	_ server.Store       = (*Store)(nil)
	_ server.SystemNamer = (*Store)(nil)
)

var (
	// ErrResponseTooLarge is wrapped by the error Complete returns for an
	// outcome over Options.MaxResponse. It wraps server.ErrResponseTooLarge:
	// nothing was stored and the key is still held under the token, and the
	// middleware (and RunOnce) then complete it with a small outcome that
	// says the answer was not kept (server.ProblemResponseNotKept).
	ErrResponseTooLarge = fmt.Errorf("idem/redisstore: response over Options.MaxResponse: %w", server.ErrResponseTooLarge)

	// ErrNotReplicated is wrapped by the error Claim and Complete return
	// when Options.WaitReplicas is set and fewer replicas acknowledged the
	// write within Options.WaitTimeout. A claim is then released (nothing
	// runs; a retry may claim again); a completed outcome is stored on the
	// master, but a failover before it reaches a replica can lose it.
	ErrNotReplicated = errors.New("idem/redisstore: write not acknowledged by enough replicas")

	// ErrFull is wrapped by the error Claim returns when Redis is over its
	// maxmemory and, under the noeviction policy, refuses the write of a
	// new record. Replays still work. It wraps [server.ErrStoreFull], so
	// the middleware answers a full Redis as a full store: 503 with
	// [server.ProblemStoreFull] and Retry-After: 30.
	ErrFull = fmt.Errorf("idem/redisstore: Redis is out of memory (maxmemory): %w", server.ErrStoreFull)
)

// Store is a [server.Store] on Redis: one node, Sentinel or Cluster,
// through any go-redis/v9 UniversalClient. It is safe for concurrent use by
// multiple goroutines and by multiple processes sharing the Redis: leases
// and expiry are computed on the Redis server's clock, never the local one.
type Store struct {
	rdb redis.UniversalClient
	cfg config
	// cluster is rdb if it is a cluster client: see eval.
	cluster *redis.ClusterClient
	// single is rdb if it is a one-node client and Options.WaitReplicas is
	// set: its connections run a script and its WAIT together.
	single *redis.Client
}

// StoreSystem returns "redis", OpenTelemetry's db.system.name for Redis,
// which observers give the store's calls (see [server.SystemNamer]).
func (s *Store) StoreSystem() string { return "redis" }

// New returns a Store keeping its records in rdb. It does not touch Redis;
// call [Store.Check] at start-up to have the server's eviction policy
// checked. It fails if rdb is nil or opts is invalid. The caller keeps
// ownership of rdb and closes it after the Store's last use.
func New(rdb redis.UniversalClient, opts Options) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: nil client")
	}
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	s := &Store{rdb: rdb, cfg: cfg}
	s.cluster, _ = rdb.(*redis.ClusterClient)
	if cfg.waitReplicas == 0 {
		return s, nil
	}
	var readTimeout time.Duration
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		readTimeout = c.Options().ReadTimeout
	case *redis.Client:
		s.single, readTimeout = c, c.Options().ReadTimeout
	default:
		return nil, fmt.Errorf("redisstore: Options.WaitReplicas needs a *redis.Client or *redis.ClusterClient, not %T: WAIT must run on the connection that wrote", rdb)
	}
	if readTimeout > 0 && cfg.waitTimeout >= readTimeout {
		return nil, fmt.Errorf("redisstore: Options.WaitTimeout %v is not below the client's ReadTimeout %v: the wait would end in a read timeout", cfg.waitTimeout, readTimeout)
	}
	return s, nil
}

// Claim implements [server.Store] in one round trip, whatever it finds: a
// script reads the record and, for a new key, an expired one, or a lapsed
// lease with the same fingerprint (TakenOver), writes the claim. A replay or
// a repeat while the first request runs writes nothing. A running record
// with another fingerprint is reported, never taken over.
//
// With Options.WaitReplicas, WAIT rides in the same round trip; a claim
// that fewer replicas acknowledged is released (one more round trip) and
// Claim returns an error wrapping [ErrNotReplicated], so the work never
// runs under a claim a failover could lose. A Redis over maxmemory refuses
// new claims with an error wrapping [ErrFull].
//
// When Claim fails without an answer from Redis (the connection broke, the
// node died), the claim may have been recorded all the same, and would keep
// the key from every retry until its lease lapsed. So Claim returns the
// error at once and releases the claim in the background, fenced by its
// token, trying again through a failover for at most the lease.
func (s *Store) Claim(ctx context.Context, k server.Key, fingerprint string, lease time.Duration) (server.Claim, error) {
	key := recordKey(s.cfg.prefix, k)
	token := rand.Text()
	wait := s.cfg.waitReplicas > 0
	res, acks, err := s.eval(ctx, claimScript, key, wait, fingerprint, token, millis(lease), s.cfg.abandonMS)
	if err != nil {
		var rerr redis.Error
		if !errors.As(err, &rerr) {
			// The script may have run and only its answer been lost.
			s.releaseLater(key, token, lease)
		}
		return server.Claim{}, translate(ctx, "claim", err)
	}
	v, _ := res.([]any)
	if len(v) < 2 {
		return server.Claim{}, errMalformed("claim", res)
	}
	if v[0] == int64(1) {
		if wait && acks < int64(s.cfg.waitReplicas) {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.waitTimeout)
			defer cancel()
			if _, _, err := s.eval(rctx, releaseScript, key, false, token); err != nil {
				s.releaseLater(key, token, lease)
			}
			return server.Claim{}, fmt.Errorf("redisstore: claim: %d of %d replicas acknowledged: %w", acks, s.cfg.waitReplicas, ErrNotReplicated)
		}
		return server.Claim{Acquired: true, Token: token, TakenOver: v[1] == int64(1)}, nil
	}
	rec, err := parseRecord(v[1:])
	if err != nil {
		return server.Claim{}, fmt.Errorf("redisstore: claim: %v", err)
	}
	return server.Claim{Record: rec}, nil
}

// releaseLater releases the claim of key under token in a goroutine of its
// own, trying again while the node is unreachable, for at most lease: a
// claim whose answer was lost, or whose release failed, so that retries
// need not wait for its lease to lapse. Releasing a claim that never landed
// changes nothing.
func (s *Store) releaseLater(key, token string, lease time.Duration) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), lease)
		defer cancel()
		_ = untilAnswered(ctx, func() error {
			_, _, err := s.eval(ctx, releaseScript, key, false, token)
			return err
		})
	}()
}

// parseRecord reads the record claimScript reports: state, fingerprint,
// expiry and, when completed, status, header and body.
func parseRecord(v []any) (server.Record, error) {
	state, _ := v[0].(string)
	fp, _ := v[1].(string)
	var expires int64
	if len(v) > 2 {
		expires, _ = strconv.ParseInt(str(v[2]), 10, 64)
	}
	if expires == 0 {
		return server.Record{}, fmt.Errorf("malformed record %q", v)
	}
	at := time.UnixMilli(expires)
	rec := server.Record{Fingerprint: fp, ExpiresAt: at}
	switch {
	case state == "r":
		rec.LeaseExpires = at
		return rec, nil
	case state == "c" && len(v) == 6:
		status, err := strconv.Atoi(str(v[3]))
		if err != nil {
			return server.Record{}, fmt.Errorf("malformed stored status %q", v[3])
		}
		header, err := decodeHeader([]byte(str(v[4])))
		if err != nil {
			return server.Record{}, fmt.Errorf("stored header: %v", err)
		}
		rec.Completed = true
		rec.Response = server.StoredResponse{Status: status, Header: header, Body: []byte(str(v[5]))}
		return rec, nil
	}
	return server.Record{}, fmt.Errorf("malformed record state %q", state)
}

// str is a reply element as a string; a nil element is "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

// Renew implements [server.Store]. One round trip.
func (s *Store) Renew(ctx context.Context, k server.Key, token string, lease time.Duration) error {
	res, _, err := s.eval(ctx, renewScript, recordKey(s.cfg.prefix, k), false, token, millis(lease), s.cfg.abandonMS)
	return fenced(ctx, "renew", res, err)
}

// Release implements [server.Store]. One round trip.
func (s *Store) Release(ctx context.Context, k server.Key, token string) error {
	res, _, err := s.eval(ctx, releaseScript, recordKey(s.cfg.prefix, k), false, token)
	return fenced(ctx, "release", res, err)
}

// Complete implements [server.Store] in one round trip (WAIT included,
// with Options.WaitReplicas).
//
// An outcome over Options.MaxResponse (body and encoded header) is not
// stored, and costs no round trip: Complete returns an error wrapping
// [ErrResponseTooLarge] (and server.ErrResponseTooLarge), the key still
// held under token. The middleware and RunOnce then complete the key with
// a small outcome in its place, with the same status and a
// server.ProblemResponseNotKept body, so every retry is told the work ran
// and its answer was not kept: it never runs the work again, and is never
// told "in flight" for the retention. A caller of Complete of its own
// should do the same, or the key is taken over once its lease lapses.
//
// With Options.WaitReplicas, an outcome fewer replicas acknowledged is
// stored on the master, and Complete returns an error wrapping
// [ErrNotReplicated].
//
// The work has run by the time Complete is called, and an outcome that is
// not recorded lets a retry run it again once the lease lapses. So while
// Redis cannot be reached or the key's master is gone (a failover is under
// way), Complete tries again, with capped backoff, until ctx is done, or
// for at most a minute if ctx has no deadline. (The middleware gives it
// one lease.) The script is safe to receive twice.
func (s *Store) Complete(ctx context.Context, k server.Key, token string, resp server.StoredResponse, retention time.Duration) error {
	header := encodeHeader(resp.Header)
	if size := len(header) + len(resp.Body); size > s.cfg.maxResponse {
		return fmt.Errorf("redisstore: complete: response of %d bytes, Options.MaxResponse is %d: nothing stored: %w", size, s.cfg.maxResponse, ErrResponseTooLarge)
	}
	args := []any{token, rand.Text(), resp.Status, header, resp.Body, millis(retention)}
	wait := s.cfg.waitReplicas > 0
	key := recordKey(s.cfg.prefix, k)
	var (
		res  any
		acks int64
	)
	err := untilAnswered(ctx, func() (err error) {
		res, acks, err = s.eval(ctx, completeScript, key, wait, args...)
		return err
	})
	if err := fenced(ctx, "complete", res, err); err != nil {
		return err
	}
	if wait && acks < int64(s.cfg.waitReplicas) {
		return fmt.Errorf("redisstore: complete: stored, but %d of %d replicas acknowledged: %w", acks, s.cfg.waitReplicas, ErrNotReplicated)
	}
	return nil
}

// fenced maps the answer of a script fenced by a lease token: 0 is
// server.ErrLeaseLost.
func fenced(ctx context.Context, op string, res any, err error) error {
	if err != nil {
		return translate(ctx, op, err)
	}
	switch res {
	case int64(0):
		return server.ErrLeaseLost
	case int64(1):
		return nil
	}
	return errMalformed(op, res)
}

func errMalformed(op string, res any) error {
	return fmt.Errorf("redisstore: %s: unexpected reply %v from Redis", op, res)
}

// translate turns a go-redis error into a redisstore error. Context errors
// keep their identity, so that callers can tell a cancelled or timed-out
// request from a failing Redis, and so does Redis's out-of-memory refusal
// (ErrFull); everything else is reported as text.
func translate(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("redisstore: %s: %w", op, cerr)
	}
	for _, cerr := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, cerr) {
			return fmt.Errorf("redisstore: %s: %w", op, cerr)
		}
	}
	if redis.IsOOMError(err) {
		return fmt.Errorf("redisstore: %s: %w", op, ErrFull)
	}
	return fmt.Errorf("redisstore: %s: %v", op, err)
}
