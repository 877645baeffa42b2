package pgstore_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// assertOneLock checks that ClaimWork and the SQL expression of the lock
// key (the claim and takeover statements', and earlier versions') take
// one lock for k: held the SQL way, ClaimWork does not acquire k; held by
// ClaimWork, the SQL way cannot take it.
func assertOneLock(t *testing.T, s *pgstore.Store, pool interface {
	Begin(context.Context) (pgx.Tx, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}, k server.Key) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	var took bool
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock("+s.LockKey()+")", k.Scope, k.Key).Scan(&took))
	require.True(t, took)
	c, _, _ := claimWork(t, s, k, "fp")
	assert.False(t, c.Acquired, "%q: acquired while the SQL-keyed lock is held", k)
	require.NoError(t, tx.Rollback(ctx))
	s.Settle()

	c, _, w := claimWork(t, s, k, "fp")
	require.True(t, c.Acquired, "%q", k)
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock("+s.LockKey()+")", k.Scope, k.Key).Scan(&took))
	assert.False(t, took, "%q: the SQL-keyed lock was free while ClaimWork held the key", k)
	require.NoError(t, w.Rollback(ctx))
}

// TestLockKeyMatchesSQLForAnyText: the lock key ClaimWork computes in Go
// is the SQL expression's for scopes and keys of every shape the
// database takes: multibyte UTF-8 of every length (up to 4-byte runes),
// ASCII control characters, and keys of tens of kilobytes.
func TestLockKeyMatchesSQLForAnyText(t *testing.T) {
	t.Parallel()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true})
	for _, k := range []server.Key{
		{Scope: "é", Key: "ß"},
		{Scope: "日本語", Key: "キー"},
		{Scope: "🦀🦀", Key: "𝄞"},
		{Scope: "\x01\x02\x1f\x7f", Key: "\x7f\x01"},
		{Scope: "tab\tnew\nline", Key: "\r"},
		{Scope: strings.Repeat("ü", 20000), Key: strings.Repeat("k", 30000)},
		{Scope: "", Key: strings.Repeat("✓", 5000)},
	} {
		assertOneLock(t, s, pool, k)
	}
	s.Settle()
}

// TestLockKeyInLatin1Database: in a database whose encoding is not UTF-8
// (LATIN1), ClaimWork and the SQL expression still take one lock for a
// key, ASCII (the key computed in Go) or not (computed in SQL, which
// counts the scope's bytes in the server's encoding), a scope with no
// LATIN1 character included.
func TestLockKeyInLatin1Database(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, testDatabase)
	require.NoError(t, err)
	defer admin.Close(context.Background())
	name := "idem_latin1_" + strings.ToLower(rand.Text()[:10])
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name+" ENCODING 'LATIN1' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, testDatabase)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		require.NoError(t, err)
	})
	cfg := poolConfig(t, 8)
	cfg.ConnConfig.Database = name
	pool := newPool(t, cfg) // closed before the database is dropped: cleanups run last first
	var enc string
	require.NoError(t, pool.QueryRow(ctx, "SHOW server_encoding").Scan(&enc))
	require.Equal(t, "LATIN1", enc)
	s := newStore(t, pool, pgstore.Options{Transactional: true})
	for _, k := range []server.Key{
		{Scope: "tenant", Key: "pay-1"},
		{Scope: "", Key: "only-key"},
		{Scope: "ünïcödé", Key: "k"},
		{Scope: "tenant", Key: "clé"},
		{Scope: "\x01\x7f", Key: "ÿ"},
		{Scope: "✓ 🦀", Key: "k"}, // no LATIN1 character: the server keeps the bytes as Latin-1 text
	} {
		assertOneLock(t, s, pool, k)
	}
	s.Settle()

	// With the pipelined claim, a key that is not ASCII is claimed before
	// the handler runs, its lock's key computed in SQL; an ASCII key's
	// claim goes with the first statement, and is refused as well.
	piped, err := pgstore.New(pool, pgstore.Options{Table: strings.Trim(s.Table(), `"`), Transactional: true, PipelineClaim: true})
	require.NoError(t, err)
	t.Cleanup(piped.Close)
	learn(t, piped, server.Key{Key: "learn"})
	for _, k := range []server.Key{{Scope: "tenant", Key: "clé"}, {Scope: "tenant", Key: "pay-2"}} {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		var took bool
		require.NoError(t, tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock("+s.LockKey()+")", k.Scope, k.Key).Scan(&took))
		require.True(t, took)
		if k.Key == "clé" {
			c, _, w := claimWork(t, piped, k, "fp")
			if !assert.False(t, c.Acquired, "%q: not claimed before the handler ran", k) {
				require.NoError(t, w.Rollback(ctx))
			}
		} else {
			w, err := claimInsert(t, piped, k, "SELECT $1::text")
			assert.ErrorIs(t, err, pgstore.ErrNotClaimed, "%q", k)
			requireRefused(t, w)
		}
		require.NoError(t, tx.Rollback(ctx))
	}
	piped.Settle()
}
