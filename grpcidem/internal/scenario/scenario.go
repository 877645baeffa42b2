// Package scenario holds the Charges service of grpcidem's tests and the
// two runs they drive on every store: identical calls at once (Race) and
// calls through a proxy that loses connections and answers (Faults). It
// is a package of its own so that a store whose module needs a newer Go
// than grpcidem (redisstore) runs the same runs from a test module of its
// own (grpcidem/internal/redistest).
package scenario

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/h2fault"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server"
)

// Charges is the test service. Each execution of Charge is an effect (a
// payment taken), added to the Ledger, so a test sees double executions
// however the answers went.
type Charges struct {
	testpb.UnimplementedChargesServer
	Ledger Ledger
	// Hold, if set, is called before the effect of the n-th execution
	// (1-based).
	Hold func(ctx context.Context, n int64)
	// Answer, if set, decides the n-th execution's answer after the
	// effect; nil means the reply.
	Answer func(ctx context.Context, n int64, req *testpb.ChargeRequest) error
	runs   atomic.Int64
}

// Charge takes the payment and answers with its execution's number.
func (s *Charges) Charge(ctx context.Context, req *testpb.ChargeRequest) (*testpb.ChargeReply, error) {
	n := s.runs.Add(1)
	if s.Hold != nil {
		s.Hold(ctx, n)
	}
	if err := s.Ledger.Add(ctx, req); err != nil {
		return nil, err
	}
	if s.Answer != nil {
		if err := s.Answer(ctx, n, req); err != nil {
			return nil, err
		}
	}
	return &testpb.ChargeReply{Id: fmt.Sprintf("ch_%d", n), Amount: req.GetAmount(), Run: n}, nil
}

// Watch sends one reply.
func (s *Charges) Watch(req *testpb.ChargeRequest, ss grpc.ServerStreamingServer[testpb.ChargeReply]) error {
	return ss.Send(&testpb.ChargeReply{Id: "watched", Amount: req.GetAmount()})
}

// Ledger records effects: one per Charge execution that took hold.
type Ledger interface {
	Add(ctx context.Context, req *testpb.ChargeRequest) error
	// Count returns how many effects were taken for customer ("" for all).
	Count(t testing.TB, customer string) int
}

// MemLedger keeps effects in memory, taken as they happen: a payment at
// a provider, which no rollback undoes. The zero value is ready.
type MemLedger struct {
	mu  sync.Mutex
	per map[string]int
	all int
}

// Add records an effect for req's customer.
func (l *MemLedger) Add(_ context.Context, req *testpb.ChargeRequest) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.per == nil {
		l.per = map[string]int{}
	}
	l.per[req.GetCustomer()]++
	l.all++
	return nil
}

// Count returns the effects for customer ("" for all).
func (l *MemLedger) Count(_ testing.TB, customer string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if customer == "" {
		return l.all
	}
	return l.per[customer]
}

// Serve starts a gRPC server for svc on a loopback port, with the given
// interceptors in front of it, and returns its address. It stops when
// the test ends.
func Serve(t testing.TB, svc testpb.ChargesServer, unary []grpc.UnaryServerInterceptor, stream ...grpc.StreamServerInterceptor) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	testpb.RegisterChargesServer(srv, svc)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// Dial returns a client of the Charges service at addr, closed when the
// test ends.
func Dial(t testing.TB, addr string, opts ...grpc.DialOption) testpb.ChargesClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testpb.NewChargesClient(cc)
}

// WithKey returns ctx with the key in the outgoing metadata, as a plain
// gRPC client without idem sends it.
func WithKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, grpcidem.DefaultHeader, key)
}

// Call makes one Charge and returns the reply, whether the answer was
// marked replayed, and the error.
func Call(ctx context.Context, c testpb.ChargesClient, req *testpb.ChargeRequest) (*testpb.ChargeReply, bool, error) {
	var md metadata.MD
	reply, err := c.Charge(ctx, req, grpc.Header(&md))
	v := md.Get(grpcidem.ReplayedHeader)
	return reply, len(v) == 1 && v[0] == "true", err
}

// Charge returns a request to charge customer amount, with a map so that
// its plain encoding varies.
func Charge(customer string, amount int64) *testpb.ChargeRequest {
	return &testpb.ChargeRequest{Customer: customer, Amount: amount, Currency: "eur", Labels: map[string]string{"a": "1", "b": "2", "c": "3"}}
}

// RaceResult is what Race counted.
type RaceResult struct {
	Effects int            // charges taken for the race's customer
	Answers map[string]int // the answers' charge IDs, by how many calls got each
	Replays int            // answers marked replayed
	Errors  []error
}

// Race sends calls identical calls with one key at once, each with a
// plain gRPC client, to a server protected by the interceptor on store
// (with ServerOptions.Wait, so repeats wait for the first's outcome), or,
// with a nil store, to a naive server with no idempotency. Each handler
// that runs holds until all the calls have reached the server, so they
// overlap by construction.
func Race(t *testing.T, store server.Store, ledger Ledger, calls int) RaceResult {
	t.Helper()
	var seen atomic.Int64
	all := make(chan struct{})
	arrive := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if seen.Add(1) == int64(calls) {
			close(all)
		}
		return h(ctx, req)
	}
	hold := func(context.Context, int64) {
		select {
		case <-all:
		case <-time.After(time.Minute): // only keeps a broken run from hanging
			t.Errorf("only %d of %d calls arrived", seen.Load(), calls)
		}
	}
	chain := []grpc.UnaryServerInterceptor{arrive}
	if store != nil {
		chain = append(chain, grpcidem.UnaryServerInterceptor(store, grpcidem.ServerOptions{SingleTenant: true, Wait: time.Minute}))
	}
	c := Dial(t, Serve(t, &Charges{Ledger: ledger, Hold: hold}, chain))
	res := RaceResult{Answers: map[string]int{}}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for range calls {
		wg.Go(func() {
			reply, replayed, err := Call(WithKey(t.Context(), "k-race"), c, Charge("racer", 4200))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Errors = append(res.Errors, err)
				return
			}
			res.Answers[reply.GetId()]++
			if replayed {
				res.Replays++
			}
		})
	}
	wg.Wait()
	res.Effects = ledger.Count(t, "racer")
	return res
}

// FaultCalls is how many calls Faults makes.
const FaultCalls = 40

// FaultResult is what Faults counted.
type FaultResult struct {
	Effects int           // charges taken
	Proxy   h2fault.Stats // what the proxy did
	Errors  []error       // calls that ended without an answer
}

// Faults makes FaultCalls calls, two at a time, each to charge its own
// customer, through an h2fault proxy that resets every 7th call's
// connection before the server sees it and every 4th answer's after the
// server acted, with the client interceptor retrying. The server is
// protected by the interceptor on store, or, with a nil store, naive.
func Faults(t *testing.T, store server.Store, ledger Ledger) FaultResult {
	t.Helper()
	var chain []grpc.UnaryServerInterceptor
	if store != nil {
		chain = append(chain, grpcidem.UnaryServerInterceptor(store, grpcidem.ServerOptions{SingleTenant: true}))
	}
	proxy, err := h2fault.Start(h2fault.Config{Upstream: Serve(t, &Charges{Ledger: ledger}, chain), ResetEvery: 7, DropEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	ic, err := grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{
		MaxAttempts: 100, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		MaxRetryDelay: 5 * time.Millisecond, Budget: idem.BudgetOptions{Capacity: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := Dial(t, proxy.Addr(), grpc.WithUnaryInterceptor(ic))
	work := make(chan int)
	var (
		res FaultResult
		mu  sync.Mutex
		wg  sync.WaitGroup
	)
	for range 2 {
		wg.Go(func() {
			for i := range work {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				_, err := c.Charge(ctx, Charge(fmt.Sprint("customer-", i), 100))
				cancel()
				if err != nil {
					mu.Lock()
					res.Errors = append(res.Errors, fmt.Errorf("call %d: %w", i, err))
					mu.Unlock()
				}
			}
		})
	}
	for i := range FaultCalls {
		work <- i
	}
	close(work)
	wg.Wait()
	res.Effects, res.Proxy = ledger.Count(t, ""), proxy.Stats()
	return res
}
