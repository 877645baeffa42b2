package grpcidem_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server/memstore"
)

// BenchmarkUnary is what each half costs a unary call on loopback, beside
// its floor from the same run: the bare call, a plain grpc-go client to a
// plain server (the Charges service, its effect in memory).
//
//   - bare: the floor;
//   - server/new-key: a plain client sending a fresh key in the metadata
//     to the server interceptor on memstore (a first execution, recorded);
//   - server/replay: the same key every time (a replay);
//   - client: the client interceptor (minting a key, encoding once, an
//     idem.Client without a journal) to a plain server;
//   - both: the client interceptor to the server interceptor;
//   - both/journal: the same, the idem.Client journaling each call in
//     bbolt (one durable commit before the first attempt).
//
// Divide each ns/op by bare's from the same run:
//
//	go test -run '^$' -bench Unary -benchmem -count 6 ./grpcidem
func BenchmarkUnary(b *testing.B) {
	plain := serve(b, &scenario.Charges{Ledger: &scenario.MemLedger{}}, nil)
	protected := serve(b, &scenario.Charges{Ledger: &scenario.MemLedger{}},
		[]grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), singleTenant)})
	req := charge("ann", 4200)
	run := func(b *testing.B, c testpb.ChargesClient, ctxFor func(i int64) context.Context) {
		b.ReportAllocs()
		var n atomic.Int64
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.Charge(ctxFor(n.Add(1)), req); err != nil {
				b.Fatal(err)
			}
		}
	}
	bg := func(int64) context.Context { return context.Background() }
	keyed := func(i int64) context.Context {
		return withKey(context.Background(), fmt.Sprintf("bench-%d-%d", b.N, i))
	}
	b.Run("bare", func(b *testing.B) { run(b, dial(b, plain), bg) })
	b.Run("server/new-key", func(b *testing.B) { run(b, dial(b, protected), keyed) })
	b.Run("server/replay", func(b *testing.B) {
		run(b, dial(b, protected), func(int64) context.Context { return withKey(context.Background(), "bench-replay") })
	})
	ic := func(b *testing.B, o grpcidem.ClientOptions) grpc.DialOption {
		i, err := grpcidem.UnaryClientInterceptor(o)
		if err != nil {
			b.Fatal(err)
		}
		return grpc.WithUnaryInterceptor(i)
	}
	b.Run("client", func(b *testing.B) { run(b, dial(b, plain, ic(b, grpcidem.ClientOptions{})), bg) })
	b.Run("both", func(b *testing.B) { run(b, dial(b, protected, ic(b, grpcidem.ClientOptions{})), bg) })
	b.Run("both/journal", func(b *testing.B) {
		j, err := idem.OpenJournal(filepath.Join(b.TempDir(), "j"), idem.JournalOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close()
		client, err := idem.New(idem.Options{Journal: j, Transport: grpcidem.NewTransport(nil)})
		if err != nil {
			b.Fatal(err)
		}
		run(b, dial(b, protected, ic(b, grpcidem.ClientOptions{Client: client})), bg)
	})
}
