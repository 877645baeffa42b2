package grpcidem_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server/memstore"
)

// TestManyCallersOneJournal: goroutines share one connection and one
// journaled Client, some calls sharing keys, with every third attempt
// refused Unavailable, while other goroutines Resume the journal and
// Register and remove connections: every call gets its answer, each
// operation is charged once, and nothing is left pending.
func TestManyCallersOneJournal(t *testing.T) {
	t.Parallel()
	var arrivals atomic.Int64
	flaky := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if arrivals.Add(1)%3 == 0 {
			return nil, status.Error(codes.Unavailable, "flaky")
		}
		return h(ctx, req)
	}
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{flaky, grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), singleTenant)})
	j := openJournal(t)
	tr := grpcidem.NewTransport(nil)
	client, err := idem.New(idem.Options{Journal: j, Transport: tr, MaxAttempts: 20, BaseDelay: 1, MaxDelay: 1,
		ResumeJitter: -1, Budget: idem.BudgetOptions{Capacity: -1}})
	require.NoError(t, err)
	cc := conn(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: client})))
	tr.Register(cc.Target(), cc)
	c := testpb.NewChargesClient(cc)

	const callers, calls, ops = 16, 10, 40
	var wg sync.WaitGroup
	errs := make(chan error, 10000)
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				op := (g*calls + i) % ops // every operation made by four calls
				reply, err := c.Charge(t.Context(), charge(fmt.Sprint("c-", op), int64(op)), grpcidem.Key(fmt.Sprint("k-", op)))
				if err == nil && reply.GetAmount() != int64(op) {
					err = fmt.Errorf("op %d: amount %d", op, reply.GetAmount())
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 10 {
				res, err := client.Resume(t.Context())
				if err != nil {
					errs <- err
				}
				for _, r := range res {
					if r.Err != nil {
						errs <- fmt.Errorf("resumed %s: %w", r.Operation.Key, r.Err)
					}
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			other := fmt.Sprint("other-", i%3)
			tr.Register(other, cc)
			tr.Register(other, nil)
			tr.Register(cc.Target(), cc)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for op := range ops {
		assert.Equal(t, 1, svc.Ledger.Count(t, fmt.Sprint("c-", op)), "op %d charged once", op)
	}
	pending, err := j.Pending()
	require.NoError(t, err)
	assert.Empty(t, pending)
}
