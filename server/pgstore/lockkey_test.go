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
