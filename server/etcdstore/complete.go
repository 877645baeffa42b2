// This file holds Complete, which tries again through a failover, and how
// etcd's errors are told apart and translated.

package etcdstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem/server"
)

// completeTimeout bounds Complete's tries when its context has no
// deadline.
const completeTimeout = time.Minute

// Complete implements [server.Store] in one transaction: "if the record
// is still at the token's revision, put the outcome", under the etcd
// lease of its retention's window (two transactions after a renewal, as
// Renew). The outcome holds the claim's fingerprint and nonce and a nonce
// of this call.
//
// An outcome over Options.MaxResponse (body and header) is not stored,
// and costs no round trip: Complete returns an error wrapping
// [ErrResponseTooLarge] (and server.ErrResponseTooLarge), the key still
// held under token. So does an outcome the cluster refuses for its size.
// The middleware and RunOnce then complete the key with a small outcome
// in its place (server.ProblemResponseNotKept), so no retry runs the work
// again.
//
// The work has run by the time Complete is called, and an outcome that is
// not recorded lets a retry run it again once the lease lapses. So while
// the cluster cannot be reached or has no leader (a failover is under
// way), Complete tries again, with capped backoff, until ctx is done, or
// for at most a minute if ctx has no deadline. (The middleware gives it
// one lease.) A try whose answer was lost and that landed all the same is
// recognised by the next one (the record then holds this call's nonce),
// so it counts as stored; a second Complete call finds the record
// completed under another nonce and gets server.ErrLeaseLost, as the
// Store contract requires.
func (s *Store) Complete(ctx context.Context, k server.Key, tokenString string, resp server.StoredResponse, retention time.Duration) error {
	tok, ok := parseToken(tokenString)
	if !ok {
		return server.ErrLeaseLost
	}
	if size := responseSize(resp); size > s.cfg.maxResponse {
		return fmt.Errorf("etcdstore: complete: response of %d bytes, Options.MaxResponse is %d: nothing stored: %w", size, s.cfg.maxResponse, ErrResponseTooLarge)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, completeTimeout)
		defer cancel()
	}
	key := recordKey(s.cfg.prefix, k)
	expires := s.now().Add(retention)
	r := &record{
		state:         stateCompleted,
		fingerprint:   tok.fingerprint,
		claimNonce:    tok.nonce,
		completeNonce: rand.Text(),
		expires:       expires,
		resp:          resp,
	}
	value := string(r.encode())
	rev := tok.rev
	var lastErr error
	for try := 0; ; try++ {
		if try > 0 {
			if err := pause(ctx, try); err != nil {
				return translate(ctx, "complete", errors.Join(lastErr, err))
			}
		}
		id, err := s.leases.forExpiry(ctx, s.now(), expires)
		if err != nil {
			lastErr = err
			continue
		}
		tr, err := s.fencedTxn(ctx, key, rev, clientv3.OpPut(key, value, clientv3.WithLease(id)))
		switch {
		case err == nil && tr.Succeeded:
			return nil
		case err == nil:
			cur := first(tr.Responses[0].GetResponseRange().Kvs)
			if got, err := decodeRecord(valueOf(cur)); err == nil && got.state == stateCompleted &&
				got.claimNonce == tok.nonce && got.completeNonce == r.completeNonce {
				return nil // an earlier try landed
			}
			next, held := heldBy(cur, tok.nonce)
			if !held {
				return server.ErrLeaseLost
			}
			rev, try = next, -1 // renewed since the claim: again at once, at its revision
		case leaseGone(err):
			s.leases.forgetID(id)
			try = -1
		case tooLarge(err):
			return fmt.Errorf("etcdstore: complete: %v: nothing stored: %w", err, ErrResponseTooLarge)
		case ambiguous(err) && ctx.Err() == nil:
			lastErr = err
		default:
			return translate(ctx, "complete", err)
		}
	}
}

// responseSize is what Options.MaxResponse bounds: the body and the
// header's names and values.
func responseSize(resp server.StoredResponse) int {
	n := len(resp.Body)
	for name, values := range resp.Header {
		n += len(name)
		for _, v := range values {
			n += len(v)
		}
	}
	return n
}

// pause waits before try number try (from 1): capped exponential backoff
// with full jitter, 10 ms doubling to 500 ms. It returns ctx's error if ctx
// ends first.
func pause(ctx context.Context, try int) error {
	ceiling := min(10*time.Millisecond<<min(try, 6), 500*time.Millisecond)
	t := time.NewTimer(time.Duration(mrand.Int64N(int64(ceiling))) + time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ambiguous reports whether a write that failed with err may have been
// applied all the same: the member died or was cut off mid-request, the
// leader changed, the proposal timed out (etcd applies it if it commits
// later). Errors that etcd returns having refused the request outright
// (out of space, too large, a lease it does not know, bad input) are not.
func ambiguous(err error) bool {
	code := codes.Unknown
	var ee rpctypes.EtcdError
	if errors.As(rpctypes.Error(err), &ee) {
		code = ee.Code()
	} else if st, ok := status.FromError(err); ok {
		code = st.Code()
	}
	switch code {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.ResourceExhausted, codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented,
		codes.Unauthenticated:
		return false
	}
	return true
}

// leaseGone reports whether etcd refused a write for its lease: revoked
// behind the store's back. Nothing was written.
func leaseGone(err error) bool { return errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound) }

// tooLarge reports whether a write was refused for its size, by the
// cluster (--max-request-bytes) or the client (MaxCallSendMsgSize).
func tooLarge(err error) bool {
	if errors.Is(rpctypes.Error(err), rpctypes.ErrRequestTooLarge) {
		return true
	}
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted && !errors.Is(rpctypes.Error(err), rpctypes.ErrNoSpace) &&
		!errors.Is(rpctypes.Error(err), rpctypes.ErrTooManyRequests)
}

// translate turns an etcd client error into an etcdstore error. Context
// errors keep their identity, so that callers can tell a cancelled or
// timed-out request from a failing cluster, and so does etcd's NOSPACE
// refusal (ErrFull); everything else is reported as text.
func translate(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("etcdstore: %s: %w", op, cerr)
	}
	for _, cerr := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, cerr) {
			return fmt.Errorf("etcdstore: %s: %w", op, cerr)
		}
	}
	if errors.Is(rpctypes.Error(err), rpctypes.ErrNoSpace) {
		return fmt.Errorf("etcdstore: %s: %w", op, ErrFull)
	}
	return fmt.Errorf("etcdstore: %s: %v", op, err)
}
