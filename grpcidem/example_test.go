package grpcidem_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server/memstore"
)

// chargeOnce is a Charges service that takes a payment per call.
type chargeOnce struct {
	testpb.UnimplementedChargesServer
	n int
}

func (s *chargeOnce) Charge(_ context.Context, req *testpb.ChargeRequest) (*testpb.ChargeReply, error) {
	s.n++
	return &testpb.ChargeReply{Id: fmt.Sprint("ch_", s.n), Amount: req.GetAmount()}, nil
}

// A gRPC service runs each call with an idempotency key once; a client
// retries a call with the same key and gets the first answer again,
// marked as a replay.
func Example() {
	// The server: every unary call needs a key, scoped to the caller.
	store := memstore.New(memstore.Options{})
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(
		grpcidem.UnaryServerInterceptor(store, grpcidem.ServerOptions{
			Scope: func(ctx context.Context) (string, error) {
				return "acct_42", nil // whoever authentication says the caller is
			},
		}),
	))
	testpb.RegisterChargesServer(srv, &chargeOnce{})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Stop()

	// The client: one key per call, the same key and bytes on every retry.
	retry, err := grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{})
	if err != nil {
		panic(err)
	}
	conn, _ := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(retry))
	defer conn.Close()
	charges := testpb.NewChargesClient(conn)

	req := &testpb.ChargeRequest{Customer: "cus_7", Amount: 4200, Currency: "eur"}
	for range 2 { // the same operation twice, as a caller retrying after a lost answer would
		var replayed bool
		reply, err := charges.Charge(context.Background(), req,
			grpcidem.Key("order-1001-charge"), grpcidem.Replayed(&replayed))
		if err != nil {
			panic(err)
		}
		fmt.Println(reply.GetId(), reply.GetAmount(), "replayed:", replayed)
	}
	// Output:
	// ch_1 4200 replayed: false
	// ch_1 4200 replayed: true
}

// A client that survives its own crash: one idem.Client, with a journal,
// sends both its HTTP requests and, through Transport, its gRPC calls.
// Each call is journaled before its first attempt; after a restart,
// Client.Resume sends the calls left pending on the connection
// registered for their target, with their keys and bytes.
func ExampleTransport() {
	srv, addr := chargesServer()
	defer srv.Stop()
	dir, _ := os.MkdirTemp("", "grpcidem-example")
	defer os.RemoveAll(dir)

	journal, err := idem.OpenJournal(filepath.Join(dir, "client.journal"), idem.JournalOptions{})
	if err != nil {
		panic(err)
	}
	defer journal.Close()
	transport := grpcidem.NewTransport(nil) // other requests: http.DefaultTransport
	client, err := idem.New(idem.Options{Journal: journal, Transport: transport})
	if err != nil {
		panic(err)
	}
	retry, err := grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{Client: client})
	if err != nil {
		panic(err)
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(retry))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	transport.Register(conn.Target(), conn)

	// At start: finish what a crashed process left pending.
	resumed, err := client.Resume(context.Background())
	if err != nil {
		panic(err)
	}
	for _, r := range resumed {
		var reply testpb.ChargeReply
		if r.Err == nil {
			r.Err = grpcidem.Answer(r.Response, &reply)
		}
		fmt.Println("resumed", r.Operation.Key, reply.GetId(), r.Err)
	}

	// Then call as usual.
	reply, err := testpb.NewChargesClient(conn).Charge(context.Background(),
		&testpb.ChargeRequest{Customer: "cus_7", Amount: 4200, Currency: "eur"})
	if err != nil {
		panic(err)
	}
	fmt.Println(reply.GetId(), reply.GetAmount())
	// Output:
	// ch_1 4200
}

// chargesServer serves chargeOnce behind the server interceptor on a
// loopback port.
func chargesServer() (*grpc.Server, string) {
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(
		grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), grpcidem.ServerOptions{SingleTenant: true}),
	))
	testpb.RegisterChargesServer(srv, &chargeOnce{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	return srv, ln.Addr().String()
}
