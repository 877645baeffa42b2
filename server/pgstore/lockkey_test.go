package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestLockKeyIsSHA256: the advisory lock ClaimWork holds for a key is the
// first 8 bytes of the SHA-256 of the table's OID, a colon, the scope's
// length, a colon, the scope and the key: a client cannot choose two keys
// whose locks collide, as it could with a non-cryptographic hash.
func TestLockKeyIsSHA256(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true})
	var oid uint32
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::regclass::oid", s.Table()).Scan(&oid))
	for _, k := range []server.Key{
		{Scope: "tenant", Key: "pay-1"},
		{Scope: "", Key: "ünïcode ✓"},
		{Scope: "a", Key: "bc"},
		{Scope: "ab", Key: "c"},
	} {
		c, _, w := claimWork(t, s, k, "fp")
		require.True(t, c.Acquired)
		sum := sha256.Sum256([]byte(strconv.FormatUint(uint64(oid), 10) + ":" + strconv.Itoa(len(k.Scope)) + ":" + k.Scope + k.Key))
		want := binary.BigEndian.Uint64(sum[:8])
		var held bool
		// pg_locks shows a bigint advisory key as its high and low halves.
		require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND objsubid = 1 AND granted
			  AND classid::bigint = $1 AND objid::bigint = $2)`,
			int64(want>>32), int64(want&0xffffffff)).Scan(&held))
		assert.True(t, held, "%+v: no advisory lock on %x", k, want)
		require.NoError(t, w.Rollback(ctx))
	}
	s.Settle()
}

// TestLockKeyMatchesSQL: ClaimWork computes the lock key in Go, and it is
// the value the SQL expression of earlier versions (and of the claim and
// takeover statements) computes, so that during a rolling deploy a
// process of either kind finds the key held by the other: a transaction
// holding the lock by the SQL expression makes ClaimWork report the key
// running, and the lock ClaimWork holds makes the SQL expression's try
// fail.
func TestLockKeyMatchesSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true})
	for _, k := range []server.Key{
		{Scope: "tenant", Key: "pay-1"},
		{Scope: "ünïcode ✓", Key: "k"},
		{Scope: "", Key: "only-key"},
	} {
		// Held the old way: ClaimWork must not acquire.
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		var took bool
		require.NoError(t, tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock("+s.LockKey()+")", k.Scope, k.Key).Scan(&took))
		require.True(t, took)
		c, _, _ := claimWork(t, s, k, "fp")
		assert.False(t, c.Acquired, "%+v: acquired while the SQL-keyed lock is held", k)
		require.NoError(t, tx.Rollback(ctx))
		s.Settle()

		// Held by ClaimWork: the old way cannot take it.
		c, _, w := claimWork(t, s, k, "fp")
		require.True(t, c.Acquired, "%+v", k)
		require.NoError(t, pool.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock("+s.LockKey()+")", k.Scope, k.Key).Scan(&took))
		assert.False(t, took, "%+v: the SQL-keyed lock was free while ClaimWork held the key", k)
		require.NoError(t, w.Rollback(ctx))
	}
}

// TestLockKeyAfterTableRecreated: the lock key depends on the table's
// OID, which ClaimWork remembers; once the table is dropped and created
// again its locks follow the new OID, as the SQL expression's do.
func TestLockKeyAfterTableRecreated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true})
	k := server.Key{Scope: "tenant", Key: "again"}
	c, _, w := claimWork(t, s, k, "fp")
	require.True(t, c.Acquired)
	require.NoError(t, w.Rollback(ctx))

	_, err := pool.Exec(ctx, "DROP TABLE "+s.Table())
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))

	c, _, w = claimWork(t, s, k, "fp")
	require.True(t, c.Acquired)
	var took bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock("+s.LockKey()+")", k.Scope, k.Key).Scan(&took))
	assert.False(t, took, "the lock does not follow the new table's OID")
	require.NoError(t, w.Rollback(ctx))
}
