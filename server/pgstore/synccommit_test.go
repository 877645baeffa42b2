package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// recorder keeps every statement pgx sends through a pool, batched ones
// included, with its arguments.
type recorder struct {
	mu sync.Mutex
	qs []query
}

func (r *recorder) add(sql string, args []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.qs = append(r.qs, query{sql: sql, args: slices.Clone(args)})
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(d.SQL, d.Args)
	return ctx
}
func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (r *recorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.add(d.SQL, d.Args)
}
func (r *recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// since returns the statements sent while f ran whose SQL starts with
// prefix; the test requires exactly one.
func (r *recorder) since(t *testing.T, prefix string, f func()) query {
	t.Helper()
	r.mu.Lock()
	n := len(r.qs)
	r.mu.Unlock()
	f()
	r.mu.Lock()
	defer r.mu.Unlock()
	var found []query
	for _, q := range r.qs[n:] {
		if strings.HasPrefix(q.sql, prefix) {
			found = append(found, q)
		}
	}
	require.Len(t, found, 1, "statements starting %q", prefix)
	return found[0]
}

// TestOutcomeCommitsSynchronous: where the session's synchronous_commit
// is off (here from the connection's startup parameters, as it would be
// from the server, the database or the role), the commits that record an
// outcome run with it on: Complete, the work's Commit under a lease, and
// the work's Commit after ClaimWork, inserting or replacing a record, and
// with DurableClaims the claims' too. remote_apply, which waits for more,
// is kept. With Options.InheritSynchronousCommit, the naive variant, they
// run with the session's off, and a crash of the database server forgets
// answered outcomes (TestCrashForgetsNoAnsweredOutcome shows it).
//
// Each statement runs through the store once, recorded by a tracer, and
// is then run again on fresh rows, so that it writes, inside an explicit
// transaction that reports the setting its commit would use.
func TestOutcomeCommitsSynchronous(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		session string
		inherit bool
		want    string
	}{
		{"off", false, "on"},
		{"off", true, "off"},
		{"remote_apply", false, "remote_apply"},
		{"local", false, "on"},
	} {
		t.Run(fmt.Sprintf("session %s, inherit %v", tc.session, tc.inherit), func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			cfg := poolConfig(t, 4)
			cfg.ConnConfig.RuntimeParams["synchronous_commit"] = tc.session
			cfg.ConnConfig.Tracer = rec
			pool := newPool(t, cfg)
			opts := pgstore.Options{Transactional: true, InheritSynchronousCommit: tc.inherit, DurableClaims: true, Abandon: 1}
			s := newStore(t, pool, opts)

			n := 0
			fresh := func() server.Key { n++; return server.Key{Scope: "tenant", Key: fmt.Sprintf("k%d", n)} }
			claim := func(k server.Key, d time.Duration) string {
				c, err := s.Claim(ctx, k, "fp", d)
				require.NoError(t, err)
				require.True(t, c.Acquired)
				return c.Token
			}
			resp := server.StoredResponse{Status: 201}

			// replay runs q, changed by change, in a transaction of the
			// pool and returns the synchronous_commit its commit would use.
			replay := func(name string, q query, change func(args []any)) string {
				args := slices.Clone(q.args)
				change(args)
				tx, err := pool.Begin(ctx)
				require.NoError(t, err)
				defer func() { require.NoError(t, tx.Rollback(ctx)) }()
				tag, err := tx.Exec(ctx, q.sql, args...)
				require.NoError(t, err, name)
				require.NotZero(t, tag.RowsAffected(), "%s: the replayed statement must write", name)
				var got string
				require.NoError(t, tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got))
				return got
			}

			t.Run("complete", func(t *testing.T) {
				k := fresh()
				token := claim(k, lease)
				q := rec.since(t, "UPDATE", func() { require.NoError(t, s.Complete(ctx, k, token, resp, retention)) })
				k2 := fresh()
				token2 := claim(k2, lease)
				require.Equal(t, tc.want, replay("complete", q, func(a []any) { a[1], a[2] = k2.Key, token2 }))
			})
			t.Run("commit under a lease", func(t *testing.T) {
				k := fresh()
				token := claim(k, lease)
				_, w, err := s.BeginWork(ctx, k, token)
				require.NoError(t, err)
				q := rec.since(t, "WITH done AS", func() { require.NoError(t, w.Commit(ctx, resp, retention)) })
				k2 := fresh()
				token2 := claim(k2, lease)
				require.Equal(t, tc.want, replay("commit", q, func(a []any) { a[1], a[2] = k2.Key, token2 }))
			})
			t.Run("commit after ClaimWork, new key", func(t *testing.T) {
				k := fresh()
				c, _, w, err := s.ClaimWork(ctx, k, "fp")
				require.NoError(t, err)
				require.True(t, c.Acquired)
				q := rec.since(t, "INSERT", func() { require.NoError(t, w.Commit(ctx, resp, retention)) })
				require.Equal(t, tc.want, replay("insert", q, func(a []any) { a[1] = fresh().Key }))
			})
			t.Run("commit after ClaimWork, record replaced", func(t *testing.T) {
				k := fresh()
				claim(k, lapsed) // a lapsed lease for this request: ClaimWork takes it over
				c, _, w, err := s.ClaimWork(ctx, k, "fp")
				require.NoError(t, err)
				require.True(t, c.Acquired)
				require.True(t, c.TakenOver)
				q := rec.since(t, "WITH done AS", func() { require.NoError(t, w.Commit(ctx, resp, retention)) })
				// On a fresh key the statement inserts, with the same
				// RETURNING list as when it replaces.
				require.Equal(t, tc.want, replay("record", q, func(a []any) { a[1] = fresh().Key }))
			})
			t.Run("durable claim", func(t *testing.T) {
				q := rec.since(t, "WITH lock AS", func() { claim(fresh(), lease) })
				require.Equal(t, tc.want, replay("claim", q, func(a []any) { a[1] = fresh().Key }))
			})
		})
	}
}

// sessionPool opens a pool of the test database whose sessions start with
// the given settings (startup parameters, as a DSN's options would set
// them), closed when the test ends.
func sessionPool(t *testing.T, maxConns int32, settings map[string]string) *pgxpool.Pool {
	t.Helper()
	cfg := poolConfig(t, maxConns)
	for k, v := range settings {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	return newPool(t, cfg)
}
