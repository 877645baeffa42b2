package pgstore_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// wire counts what crosses the connections of a pool: writes on the socket
// (each flush of pipelined messages is one round trip) and the queries,
// batches and prepares pgx reports to its tracer.
type wire struct {
	writes atomic.Int64
	calls  atomic.Int64
	// last is the last query (a query).
	last atomic.Value
}

type countingConn struct {
	net.Conn
	w *wire
}

func (c countingConn) Write(b []byte) (int, error) {
	c.w.writes.Add(1)
	return c.Conn.Write(b)
}

func (w *wire) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	w.calls.Add(1)
	w.last.Store(query{sql: data.SQL, args: data.Args})
	return ctx
}
func (w *wire) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (w *wire) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	w.calls.Add(1)
	return ctx
}
func (w *wire) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (w *wire) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (w *wire) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	w.calls.Add(1)
	return ctx
}
func (w *wire) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// query is a statement as pgx sent it.
type query struct {
	sql  string
	args []any
}

// lastQuery returns the last query sent.
func (w *wire) lastQuery() query {
	q, _ := w.last.Load().(query)
	return q
}

// measure returns the round trips and pgx calls f costs.
func (w *wire) measure(f func()) (roundTrips, calls int64) {
	r, s := w.writes.Load(), w.calls.Load()
	f()
	return w.writes.Load() - r, w.calls.Load() - s
}

// countingPool is a one-connection pool whose traffic w counts. It never
// pings on acquire, so what is counted is the store's own traffic.
func countingPool(t *testing.T) (*pgxpool.Pool, *wire) {
	w := &wire{}
	cfg := poolConfig(t, 1)
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, w: w}, nil
	}
	cfg.ConnConfig.Tracer = w
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	return newPool(t, cfg), w
}

// TestRoundTrips counts the round trips of every store operation once the
// connection has prepared its statements.
func TestRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	resp := server.StoredResponse{Status: http.StatusCreated, Header: http.Header{"A": {"b"}}, Body: []byte("ok")}
	for _, transactional := range []bool{false, true} {
		pool, w := countingPool(t)
		s := newStore(t, pool, pgstore.Options{Transactional: transactional})
		n := 0
		key := func() server.Key { n++; return server.Key{Scope: "tenant", Key: fmt.Sprintf("key-%d", n)} }

		// One full cycle of every path prepares the statements.
		cycle := func() (newKey, replay, inFlight, renew, release, begin, commit [2]int64) {
			k := key()
			var c server.Claim
			newKey[0], newKey[1] = w.measure(func() { c, _ = s.Claim(ctx, k, "fp", lease) })
			require.True(t, c.Acquired)
			inFlight[0], inFlight[1] = w.measure(func() {
				c2, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(t, err)
				require.False(t, c2.Acquired)
			})
			renew[0], renew[1] = w.measure(func() { require.NoError(t, s.Renew(ctx, k, c.Token, lease)) })
			var work server.Work
			begin[0], begin[1] = w.measure(func() {
				var err error
				_, work, err = s.BeginWork(ctx, k, c.Token)
				require.NoError(t, err)
			})
			commit[0], commit[1] = w.measure(func() {
				if work == nil { // without transactions the outcome is stored with Complete
					require.NoError(t, s.Complete(ctx, k, c.Token, resp, retention))
					return
				}
				require.NoError(t, work.Commit(ctx, resp, retention))
			})
			replay[0], replay[1] = w.measure(func() {
				c2, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(t, err)
				require.True(t, c2.Record.Completed)
			})

			k2 := key()
			c, err := s.Claim(ctx, k2, "fp", lease)
			require.NoError(t, err)
			release[0], release[1] = w.measure(func() { require.NoError(t, s.Release(ctx, k2, c.Token)) })
			return
		}
		first, _, _, _, _, _, _ := cycle()
		require.Equal(t, [2]int64{2, 2}, first, "the first claim on a connection prepares its statement: the counter sees it")
		newKey, replay, inFlight, renew, release, begin, commit := cycle()

		one := [2]int64{1, 1}
		require.Equal(t, one, newKey, "claim of a new key: [round trips, pgx calls]")
		require.Equal(t, one, replay, "replay")
		require.Equal(t, one, inFlight, "repeat while in flight")
		require.Equal(t, one, renew, "renew")
		require.Equal(t, one, release, "release")
		require.Equal(t, one, commit, "complete or transactional commit (UPDATE and COMMIT pipelined)")
		if transactional {
			require.Equal(t, one, begin, "begin work")
		} else {
			require.Equal(t, [2]int64{0, 0}, begin, "begin work without transactions")
		}
	}
}
