package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// latencies records one duration per operation and reports the median and
// the 99th percentile next to ns/op.
type latencies []time.Duration

func (l *latencies) time(f func()) {
	start := time.Now()
	f()
	*l = append(*l, time.Since(start))
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkStore measures the store's operations one at a time, as a
// request sees them. Run with
//
//	IDEM_TEST_DATABASE=postgres://... go test -run '^$' -bench Store ./server/pgstore/
func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	var pool *pgxpool.Pool // the current case's
	resp := server.StoredResponse{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(`{"id":"ch_1","amount":1000}`),
	}
	newKey := func(i int) server.Key { return server.Key{Scope: "tenant", Key: fmt.Sprintf("bench-%d", i)} }
	claimed := func(b *testing.B, s *pgstore.Store, i int) (server.Key, string) {
		k := newKey(i)
		c, err := s.Claim(ctx, k, "fp", lease)
		require.NoError(b, err)
		require.True(b, c.Acquired)
		return k, c.Token
	}

	cases := []struct {
		name string
		opts pgstore.Options
		// prepare runs once; setup prepares operation i; op runs it and
		// is timed.
		prepare func(b *testing.B, s *pgstore.Store)
		setup   func(b *testing.B, s *pgstore.Store, i int) (server.Key, string)
		op      func(b *testing.B, s *pgstore.Store, k server.Key, token string)
	}{
		{
			// The floor: one round trip that does nothing.
			name:  "baseline SELECT 1",
			setup: func(*testing.B, *pgstore.Store, int) (server.Key, string) { return server.Key{}, "" },
			op: func(b *testing.B, _ *pgstore.Store, _ server.Key, _ string) {
				var one int
				require.NoError(b, pool.QueryRow(ctx, "SELECT 1").Scan(&one))
			},
		},
		{
			name:  "claim new key",
			setup: func(_ *testing.B, _ *pgstore.Store, i int) (server.Key, string) { return newKey(i), "" },
			op: func(b *testing.B, s *pgstore.Store, k server.Key, _ string) {
				c, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(b, err)
				require.True(b, c.Acquired)
			},
		},
		{
			name:  "claim new key durable",
			opts:  pgstore.Options{DurableClaims: true},
			setup: func(_ *testing.B, _ *pgstore.Store, i int) (server.Key, string) { return newKey(i), "" },
			op: func(b *testing.B, s *pgstore.Store, k server.Key, _ string) {
				c, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(b, err)
				require.True(b, c.Acquired)
			},
		},
		{
			name: "claim replay",
			prepare: func(b *testing.B, s *pgstore.Store) {
				k, token := claimed(b, s, 0)
				require.NoError(b, s.Complete(ctx, k, token, resp, retention))
			},
			setup: func(*testing.B, *pgstore.Store, int) (server.Key, string) { return newKey(0), "" },
			op: func(b *testing.B, s *pgstore.Store, k server.Key, _ string) {
				c, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(b, err)
				require.True(b, c.Record.Completed)
			},
		},
		{
			name:    "claim in flight",
			prepare: func(b *testing.B, s *pgstore.Store) { claimed(b, s, 0) },
			setup:   func(*testing.B, *pgstore.Store, int) (server.Key, string) { return newKey(0), "" },
			op: func(b *testing.B, s *pgstore.Store, k server.Key, _ string) {
				c, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(b, err)
				require.False(b, c.Acquired)
			},
		},
		{
			name:  "complete",
			setup: claimed,
			op: func(b *testing.B, s *pgstore.Store, k server.Key, token string) {
				require.NoError(b, s.Complete(ctx, k, token, resp, retention))
			},
		},
		{
			name:  "renew",
			setup: claimed,
			op: func(b *testing.B, s *pgstore.Store, k server.Key, token string) {
				require.NoError(b, s.Renew(ctx, k, token, lease))
			},
		},
		{
			name:  "release",
			setup: claimed,
			op: func(b *testing.B, s *pgstore.Store, k server.Key, token string) {
				require.NoError(b, s.Release(ctx, k, token))
			},
		},
		{
			name:  "transactional begin and commit",
			opts:  pgstore.Options{Transactional: true},
			setup: claimed,
			op: func(b *testing.B, s *pgstore.Store, k server.Key, token string) {
				_, w, err := s.BeginWork(ctx, k, token)
				require.NoError(b, err)
				require.NoError(b, w.Commit(ctx, resp, retention))
			},
		},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			var s *pgstore.Store
			s, pool = newTestStore(b, bc.opts)
			if bc.prepare != nil {
				bc.prepare(b, s)
			}
			// Prepare the statements on the pool's connections.
			for i := range 8 {
				k, token := bc.setup(b, s, 1_000_000+i)
				bc.op(b, s, k, token)
			}
			b.ReportAllocs()
			var lat latencies
			i := 0
			for b.Loop() {
				b.StopTimer()
				k, token := bc.setup(b, s, i)
				b.StartTimer()
				lat.time(func() { bc.op(b, s, k, token) })
				i++
			}
			lat.report(b)
		})
	}
}
