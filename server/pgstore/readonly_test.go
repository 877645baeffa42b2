package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// dbState is what any write leaves behind in the whole cluster: the next
// transaction ID to be assigned once the writer completes, and the WAL
// insert position. Reading them assigns no transaction ID and writes no WAL.
type dbState struct{ xmax, lsn string }

func observe(t *testing.T, pool *pgxpool.Pool) dbState {
	var st dbState
	err := pool.QueryRow(context.Background(),
		"SELECT pg_snapshot_xmax(pg_current_snapshot())::text, pg_current_wal_insert_lsn()::text").Scan(&st.xmax, &st.lsn)
	require.NoError(t, err)
	return st
}

// TestRepeatClaimsDoNotWrite proves that a replay and a repeat while the
// first request runs are pure reads: no transaction ID, no WAL, so no
// commit to flush and no row lock to queue on.
//
// Other sessions may write at any moment (autovacuum, the checkpointer,
// other test binaries), so the proof is existential: a claim that wrote
// would move the counters every time; seeing them unchanged across the
// claim once is enough. The new-key case shows the probe sees a write.
//
// The test is not parallel, so this package's other tests are paused
// while it runs.
func TestRepeatClaimsDoNotWrite(t *testing.T) {
	ctx := context.Background()
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable claims %v", durable), func(t *testing.T) {
			s, pool := newTestStore(t, pgstore.Options{DurableClaims: durable})
			completed := server.Key{Scope: "tenant", Key: "completed"}
			running := server.Key{Scope: "tenant", Key: "running"}
			c, err := s.Claim(ctx, completed, "fp", lease)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, completed, c.Token, server.StoredResponse{Status: 200}, retention))
			_, err = s.Claim(ctx, running, "fp", lease)
			require.NoError(t, err)

			cases := []struct {
				name string
				k    server.Key
			}{
				{"replay", completed},
				{"in flight", running},
			}
			for _, tc := range cases {
				quiet := false
				for attempt := 0; attempt < 50 && !quiet; attempt++ {
					before := observe(t, pool)
					c, err := s.Claim(ctx, tc.k, "fp", lease)
					require.NoError(t, err)
					require.False(t, c.Acquired)
					quiet = observe(t, pool) == before
				}
				require.True(t, quiet, "%s: a repeated claim assigned a transaction ID or wrote WAL every time", tc.name)
			}

			for i := range 3 {
				before := observe(t, pool)
				c, err := s.Claim(ctx, server.Key{Scope: "tenant", Key: fmt.Sprintf("new-%d", i)}, "fp", lease)
				require.NoError(t, err)
				require.True(t, c.Acquired)
				after := observe(t, pool)
				require.NotEqual(t, before.xmax, after.xmax, "a new key's claim assigns a transaction ID")
				require.NotEqual(t, before.lsn, after.lsn, "a new key's claim writes WAL")
			}
		})
	}
}
