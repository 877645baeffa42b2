package pgstore_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestLockThenReadInTheNextStatement shows the READ COMMITTED trap
// ClaimWork is built around. A statement reads from a snapshot taken when
// it starts: a lookup in the same statement as the lock misses a record
// that the lock's holder committed while the statement waited for the lock
// (or, with a lock taken without waiting, in the moment between the
// snapshot and the lock), finds the key free, and runs it a second time.
// The lookup in the statement after the lock, pipelined as ClaimWork sends
// it, starts after the lock was granted and sees the record.
//
// The second worker waits for the lock here, so that the first one's
// commit lands inside its statement every time rather than by chance.
func TestLockThenReadInTheNextStatement(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// lockAndLookup takes the key's lock, waiting for it, and counts
		// the key's records, in one round trip on conn's transaction.
		lockAndLookup func(ctx context.Context, conn *pgxpool.Conn, lockKey, table string, k server.Key) (int, error)
		// runs is how many times the key runs in the end.
		runs int
	}{
		{
			name: "naive: lock and read in one statement",
			lockAndLookup: func(ctx context.Context, conn *pgxpool.Conn, lockKey, table string, k server.Key) (int, error) {
				var n int
				err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+table+` WHERE scope = $1 AND key = $2)
					FROM (SELECT pg_advisory_xact_lock(`+lockKey+`)) AS locked`, k.Scope, k.Key).Scan(&n)
				return n, err
			},
			runs: 2,
		},
		{
			name: "read in the statement after the lock, pipelined",
			lockAndLookup: func(ctx context.Context, conn *pgxpool.Conn, lockKey, table string, k server.Key) (int, error) {
				b := &pgx.Batch{}
				b.Queue("SELECT pg_advisory_xact_lock("+lockKey+")", k.Scope, k.Key)
				b.Queue("SELECT count(*) FROM "+table+" WHERE scope = $1 AND key = $2", k.Scope, k.Key)
				br := conn.SendBatch(ctx, b)
				defer br.Close()
				if _, err := br.Exec(); err != nil {
					return 0, err
				}
				var n int
				err := br.QueryRow().Scan(&n)
				return n, err
			},
			runs: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			table := tableName()
			s, pool := newTestStore(t, pgstore.Options{Table: table, Transactional: true})
			charges := newCharges(t, pool)
			k := server.Key{Scope: "tenant", Key: "pay-1"}

			// The first worker holds the key and charges.
			c, wctx, w := claimWork(t, s, k, "fp")
			require.True(t, c.Acquired)
			defer w.Rollback(ctx) // if the test fails before the commit
			charge(t, wctx, charges, k.Key)

			// The second worker asks for the key's lock and record.
			conn, err := pool.Acquire(ctx)
			require.NoError(t, err)
			defer conn.Release() // closed by the pool if the test failed inside the transaction
			_, err = conn.Exec(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED")
			require.NoError(t, err)
			found := make(chan int, 1)
			go func() {
				n, err := tc.lockAndLookup(ctx, conn, s.LockKey(), table, k)
				assert.NoError(t, err)
				found <- n
			}()
			waitForAdvisoryLock(t, pool, conn.Conn().PgConn().PID())

			// The first worker commits its record, which releases the lock.
			require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: http.StatusCreated}, retention))
			if n := <-found; n == 0 {
				// No record: the key looks free, and the second worker
				// runs it again.
				_, err := conn.Exec(ctx, "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1000)", k.Key)
				require.NoError(t, err)
			}
			_, err = conn.Exec(ctx, "COMMIT")
			require.NoError(t, err)
			assert.Equal(t, tc.runs, countCharges(t, pool, charges), "charges")
		})
	}
}

// waitForAdvisoryLock returns once the backend pid waits for an advisory
// lock. It gives up after ten seconds.
func waitForAdvisoryLock(t *testing.T, pool *pgxpool.Pool, pid uint32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var waiting bool
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT EXISTS (
			SELECT 1 FROM pg_stat_activity
			WHERE pid = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory')`, int64(pid)).Scan(&waiting))
		if waiting {
			return
		}
	}
	t.Fatal("no session started waiting for the advisory lock")
}
