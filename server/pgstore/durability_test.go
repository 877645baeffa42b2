package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestCommitDurability checks which statements turn synchronous_commit
// off for their transaction, and that Complete's turns it on. Each operation runs once through the store,
// which records the statement it sent; the statement is then run again,
// on fresh rows so that it writes, inside an explicit transaction that
// reports the setting the commit would use.
func TestCommitDurability(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testDatabase)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })

	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable claims %v", durable), func(t *testing.T) {
			pool, w := countingPool(t)
			s := newStore(t, pool, pgstore.Options{DurableClaims: durable, Abandon: time.Microsecond})
			n := 0
			fresh := func() server.Key { n++; return server.Key{Scope: "tenant", Key: fmt.Sprintf("k%d", n)} }
			claim := func(k server.Key, d time.Duration) string {
				c, err := s.Claim(ctx, k, "fp", d)
				require.NoError(t, err)
				require.True(t, c.Acquired)
				return c.Token
			}
			// sent runs op through the store and returns the statement it
			// sent last.
			sent := func(op func()) query { op(); return w.lastQuery() }

			async := "off"
			if durable {
				async = "on"
			}
			cases := []struct {
				name string
				// run returns the store's statement with its arguments
				// changed to fresh rows on which it writes.
				run  func() query
				want string
			}{
				{"claim", func() query {
					q := sent(func() { claim(fresh(), lease) })
					q.args[1] = fresh().Key
					return q
				}, async},
				{"takeover", func() query {
					k := fresh()
					claim(k, lapsed)
					q := sent(func() { claim(k, lease) })
					k2 := fresh()
					q.args[1], q.args[5] = k2.Key, claim(k2, lapsed)
					return q
				}, async},
				{"renew", func() query {
					k := fresh()
					token := claim(k, lease)
					q := sent(func() { require.NoError(t, s.Renew(ctx, k, token, lease)) })
					k2 := fresh()
					q.args[1], q.args[2] = k2.Key, claim(k2, lease)
					return q
				}, async},
				{"release", func() query {
					k := fresh()
					token := claim(k, lease)
					q := sent(func() { require.NoError(t, s.Release(ctx, k, token)) })
					k2 := fresh()
					q.args[1], q.args[2] = k2.Key, claim(k2, lease)
					return q
				}, async},
				{"purge", func() query {
					q := sent(func() { _, err := s.Purge(ctx, 10); require.NoError(t, err) })
					claim(fresh(), lapsed)
					return q
				}, async},
				{"complete", func() query {
					k := fresh()
					token := claim(k, lease)
					q := sent(func() { require.NoError(t, s.Complete(ctx, k, token, server.StoredResponse{Status: 200}, retention)) })
					k2 := fresh()
					q.args[1], q.args[2] = k2.Key, claim(k2, lease)
					return q
				}, "on"},
			}
			for _, tc := range cases {
				q := tc.run()
				tx, err := conn.Begin(ctx)
				require.NoError(t, err)
				tag, err := tx.Exec(ctx, q.sql, slices.Clone(q.args)...)
				require.NoError(t, err, tc.name)
				require.NotZero(t, tag.RowsAffected(), "%s: the replayed statement must write", tc.name)
				var setting string
				require.NoError(t, tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting))
				require.NoError(t, tx.Rollback(ctx))
				require.Equal(t, tc.want, setting, tc.name)
			}
		})
	}
}
