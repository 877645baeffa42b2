package grpcidem_test

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

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
