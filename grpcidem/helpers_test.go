package grpcidem_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/pgstore"
)

// charges is the test service. Each execution of Charge is an effect (a
// payment taken), counted in runs and, per request, in the ledger, so a
// test sees double executions however the answers went.
type charges struct {
	testpb.UnimplementedChargesServer
	ledger ledger
	// answer, if set, decides the handler's answer for its n-th execution
	// (1-based) after the effect; nil means the reply.
	answer func(ctx context.Context, n int64, req *testpb.ChargeRequest) error
	// hold, if set, is waited on before the effect.
	hold func(ctx context.Context, n int64)
	runs atomic.Int64
}

func (s *charges) Charge(ctx context.Context, req *testpb.ChargeRequest) (*testpb.ChargeReply, error) {
	n := s.runs.Add(1)
	if s.hold != nil {
		s.hold(ctx, n)
	}
	if err := s.ledger.add(ctx, req); err != nil {
		return nil, err
	}
	if s.answer != nil {
		if err := s.answer(ctx, n, req); err != nil {
			return nil, err
		}
	}
	return &testpb.ChargeReply{Id: fmt.Sprintf("ch_%d", n), Amount: req.GetAmount(), Run: n}, nil
}

func (s *charges) Watch(req *testpb.ChargeRequest, ss grpc.ServerStreamingServer[testpb.ChargeReply]) error {
	return ss.Send(&testpb.ChargeReply{Id: "watched", Amount: req.GetAmount()})
}

// ledger records effects: one per Charge execution that took hold.
type ledger interface {
	add(ctx context.Context, req *testpb.ChargeRequest) error
	// count returns how many effects were taken for customer ("" for all).
	count(t *testing.T, customer string) int
}

// memLedger keeps effects in memory, taken as they happen: a payment at
// a provider, which no rollback undoes.
type memLedger struct {
	mu  sync.Mutex
	per map[string]int
	all int
}

func (l *memLedger) add(_ context.Context, req *testpb.ChargeRequest) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.per == nil {
		l.per = map[string]int{}
	}
	l.per[req.GetCustomer()]++
	l.all++
	return nil
}

func (l *memLedger) count(_ *testing.T, customer string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if customer == "" {
		return l.all
	}
	return l.per[customer]
}

// pgLedger writes each effect as a row in the store's transaction
// (pgstore.Tx): it commits together with the recorded outcome, or not at
// all.
type pgLedger struct {
	pool  *pgxpool.Pool
	table string
}

func (l *pgLedger) add(ctx context.Context, req *testpb.ChargeRequest) error {
	tx, ok := pgstore.Tx(ctx)
	if !ok {
		return status.Error(13, "no transaction")
	}
	_, err := tx.Exec(ctx, "INSERT INTO "+l.table+" (customer) VALUES ($1)", req.GetCustomer())
	return err
}

func (l *pgLedger) count(t *testing.T, customer string) int {
	var n int
	err := l.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+l.table+" WHERE $1 = '' OR customer = $1", customer).Scan(&n)
	require.NoError(t, err)
	return n
}

// backend is a store with the ledger that goes with it.
type backend struct {
	name   string
	store  server.Store
	ledger ledger
}

// backends returns the stores the store-wide tests run on: memstore
// always; pgstore in lease and transactional mode with IDEM_TEST_DATABASE
// (required when CI=true).
func backends(t *testing.T) []func(t *testing.T) backend {
	out := []func(t *testing.T) backend{func(*testing.T) backend {
		return backend{"memstore", memstore.New(memstore.Options{}), &memLedger{}}
	}}
	if dsn := os.Getenv("IDEM_TEST_DATABASE"); dsn != "" {
		out = append(out,
			func(t *testing.T) backend {
				return backend{"pgstore", newPgStore(t, dsn, false), &memLedger{}}
			},
			func(t *testing.T) backend {
				st := newPgStore(t, dsn, true)
				pool := pgPool(t, dsn)
				table := tableName()
				_, err := pool.Exec(context.Background(), "CREATE TABLE "+table+" (customer text NOT NULL)")
				require.NoError(t, err)
				dropTable(t, pool, table)
				return backend{"pgstore-tx", st, &pgLedger{pool, table}}
			})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("IDEM_TEST_DATABASE is not set and CI=true: the PostgreSQL tests must run")
	}
	return out
}

func pgPool(t *testing.T, dsn string) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func newPgStore(t *testing.T, dsn string, transactional bool) *pgstore.Store {
	pool := pgPool(t, dsn)
	table := tableName()
	s, err := pgstore.New(pool, pgstore.Options{Table: table, Transactional: transactional})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.NoError(t, s.Migrate(context.Background()))
	dropTable(t, pool, table)
	return s
}

func tableName() string { return "grpcidem_test_" + strings.ToLower(rand.Text()[:12]) }

func dropTable(t *testing.T, pool *pgxpool.Pool, table string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pool.Exec(ctx, "DROP TABLE IF EXISTS "+table)
		require.NoError(t, err)
	})
}

// serve starts a gRPC server for svc on a loopback port, with the given
// interceptors in front of it, and returns its address.
func serve(t *testing.T, svc testpb.ChargesServer, unary []grpc.UnaryServerInterceptor, stream ...grpc.StreamServerInterceptor) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	testpb.RegisterChargesServer(srv, svc)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// dial returns a client of the Charges service at addr.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) testpb.ChargesClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	return testpb.NewChargesClient(cc)
}

// withKey returns ctx with the key in the outgoing metadata, as a plain
// gRPC client without idem sends it.
func withKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, grpcidem.DefaultHeader, key)
}

// singleTenant is the server options of most tests.
var singleTenant = grpcidem.ServerOptions{SingleTenant: true}
