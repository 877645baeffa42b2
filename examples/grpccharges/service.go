package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemhq/idem/server/pgstore"
)

// chargeMethod is the Charges service's one method.
const chargeMethod = "/charges.v1.Charges/Charge"

// chargesServer is what the service's handler is.
type chargesServer interface {
	Charge(context.Context, *structpb.Struct) (*structpb.Struct, error)
}

// serviceDesc is the Charges service as generated code would describe it.
var serviceDesc = grpc.ServiceDesc{
	ServiceName: "charges.v1.Charges",
	HandlerType: (*chargesServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Charge",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(structpb.Struct)
			if err := dec(in); err != nil {
				return nil, err
			}
			handler := func(ctx context.Context, req any) (any, error) {
				return srv.(chargesServer).Charge(ctx, req.(*structpb.Struct))
			}
			if interceptor == nil {
				return handler(ctx, in)
			}
			return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: chargeMethod}, handler)
		},
	}},
}

// charge calls the service, as a generated client would.
func charge(ctx context.Context, cc grpc.ClientConnInterface, op int, opts ...grpc.CallOption) (*structpb.Struct, error) {
	req, err := structpb.NewStruct(map[string]any{"operation": float64(op), "amount": 4200, "currency": "eur"})
	if err != nil {
		return nil, err
	}
	reply := new(structpb.Struct)
	return reply, cc.Invoke(ctx, chargeMethod, req, reply, opts...)
}

// service takes a payment per execution, and calls kill, if set, before
// and after it.
type service struct {
	ledger ledger
	kill   func(n int64, after bool)
	runs   atomic.Int64
}

func (s *service) Charge(ctx context.Context, req *structpb.Struct) (*structpb.Struct, error) {
	n := s.runs.Add(1)
	op := int(req.GetFields()["operation"].GetNumberValue())
	if s.kill != nil {
		s.kill(n, false)
	}
	if err := s.ledger.add(ctx, op); err != nil {
		return nil, err
	}
	if s.kill != nil {
		s.kill(n, true)
	}
	return structpb.NewStruct(map[string]any{"id": fmt.Sprintf("ch_%d", n), "operation": float64(op), "amount": 4200})
}

// ledger keeps the charges taken.
type ledger interface {
	add(ctx context.Context, op int) error
	counts(ctx context.Context) (map[int]int, error)
}

// memLedger counts charges in memory, as a provider outside any
// transaction takes them.
type memLedger struct {
	mu  sync.Mutex
	per map[int]int
}

func (l *memLedger) add(_ context.Context, op int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.per == nil {
		l.per = map[int]int{}
	}
	l.per[op]++
	return nil
}

func (l *memLedger) counts(context.Context) (map[int]int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int]int, len(l.per))
	for k, v := range l.per {
		out[k] = v
	}
	return out, nil
}

// pgLedger writes a charge as a row in the transaction that records the
// call's outcome (pgstore.Tx): both commit, or neither.
type pgLedger struct {
	pool  *pgxpool.Pool
	table string
}

func (l *pgLedger) add(ctx context.Context, op int) error {
	tx, ok := pgstore.Tx(ctx)
	if !ok {
		return fmt.Errorf("no transaction: the store is not transactional")
	}
	_, err := tx.Exec(ctx, "INSERT INTO "+l.table+" (operation) VALUES ($1)", op)
	return err
}

func (l *pgLedger) counts(ctx context.Context) (map[int]int, error) {
	rows, err := l.pool.Query(ctx, "SELECT operation, count(*) FROM "+l.table+" GROUP BY operation")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var op, n int
		if err := rows.Scan(&op, &n); err != nil {
			return nil, err
		}
		out[op] = n
	}
	return out, rows.Err()
}
