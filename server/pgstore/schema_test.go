package pgstore_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

func TestSchemaNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		table, quoted string
	}{
		{"", `"idem_keys"`},
		{"payments_keys", `"payments_keys"`},
		{"billing.idem_keys", `"billing"."idem_keys"`},
	} {
		ddl, err := pgstore.Schema(tc.table)
		require.NoError(t, err, tc.table)
		require.Contains(t, ddl, "CREATE TABLE IF NOT EXISTS "+tc.quoted+" (")
		require.Contains(t, ddl, " ON "+tc.quoted+" (expires_at);")
		require.NotContains(t, ddl, "{{", "no placeholder is left")
	}
	pool := newPool(t, poolConfig(t, 1))
	for _, bad := range []string{"Keys", "a.b.c", "1keys", "keys;drop table x", `"keys"`, "a..b", strings.Repeat("k", 49), "."} {
		_, err := pgstore.Schema(bad)
		require.ErrorIs(t, err, pgstore.ErrTableName, "%q", bad)
		_, err = pgstore.New(pool, pgstore.Options{Table: bad})
		require.ErrorIs(t, err, pgstore.ErrTableName, "%q", bad)
	}
}

// freshSchema creates a schema of its own in the test database, dropped
// with what it holds when the test ends, and returns its name.
func freshSchema(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	name := "idem_schema_" + tableName()[len("idem_test_"):]
	_, err := pool.Exec(context.Background(), "CREATE SCHEMA "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := pool.Exec(context.Background(), "DROP SCHEMA "+name+" CASCADE")
		require.NoError(t, err)
	})
	return name
}

// psqlFile runs the SQL file through psql on dsn, stopping at the first
// error.
func psqlFile(t *testing.T, dsn, sql string) {
	t.Helper()
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("no psql on PATH")
	}
	file := filepath.Join(t.TempDir(), "schema.sql")
	require.NoError(t, os.WriteFile(file, []byte(sql), 0o600))
	out, err := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", file).CombinedOutput()
	require.NoError(t, err, "psql: %s", out)
}

// TestSchemaRuns: the text Schema returns runs in psql, twice (it is
// idempotent), and through pgx's Exec, on a fresh schema; a Store on the
// table it created migrates (finding it) and works.
func TestSchemaRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t, poolConfig(t, 4))
	for _, via := range []string{"psql", "pgx"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			table := freshSchema(t, pool) + ".idem_keys"
			ddl, err := pgstore.Schema(table)
			require.NoError(t, err)
			for range 2 {
				if via == "psql" {
					psqlFile(t, testDatabase, ddl)
				} else {
					_, err := pool.Exec(ctx, ddl)
					require.NoError(t, err)
				}
			}
			var columns int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_schema || '.' || table_name = $1", table).Scan(&columns))
			require.Equal(t, 10, columns)

			s, err := pgstore.New(pool, pgstore.Options{Table: table, Transactional: true})
			require.NoError(t, err)
			t.Cleanup(s.Close)
			require.NoError(t, s.Migrate(ctx))
			c, _, w, err := s.ClaimWork(ctx, server.Key{Scope: "tenant", Key: "schema"}, "fp")
			require.NoError(t, err)
			require.True(t, c.Acquired)
			require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: 201}, retention))
			n, err := s.Purge(ctx, 10)
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
}

// TestSchemaWithoutCreate, on a cluster of its own (scripts/pgcluster.sh,
// since it creates a role): a database administrator creates the table
// from Schema's text, and the service's role has SELECT, INSERT, UPDATE
// and DELETE on it and no CREATE anywhere. The store migrates (finding
// the table, it runs no DDL), claims, records and purges as that role.
// The naive variant runs the DDL as the role, as Migrate did before it
// looked: refused for want of CREATE.
func TestSchemaWithoutCreate(t *testing.T) {
	admin := ownCluster(t)
	ctx := context.Background()
	dsn := clusterDatabase(t, admin, nil)
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	dba := newPool(t, cfg)
	role := tableName()
	_, err = dba.Exec(ctx, "CREATE ROLE "+role+" LOGIN")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = dba.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = dba.Exec(ctx, "DROP ROLE "+role)
	})
	_, err = dba.Exec(ctx, "REVOKE CREATE ON SCHEMA public FROM PUBLIC")
	require.NoError(t, err)

	const table = "public.idem_keys"
	ddl, err := pgstore.Schema(table)
	require.NoError(t, err)
	psqlFile(t, dsn, ddl)
	_, err = dba.Exec(ctx, "GRANT SELECT, INSERT, UPDATE, DELETE ON "+table+" TO "+role)
	require.NoError(t, err)

	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.User = url.User(role)
	cfg, err = pgxpool.ParseConfig(u.String())
	require.NoError(t, err)
	cfg.MaxConns = 4
	app := newPool(t, cfg)

	_, err = app.Exec(ctx, ddl)
	require.ErrorContains(t, err, "permission denied", "the naive migration: the role runs DDL")

	for _, transactional := range []bool{false, true} {
		s, err := pgstore.New(app, pgstore.Options{Table: table, Transactional: transactional})
		require.NoError(t, err)
		require.NoError(t, s.Migrate(ctx))
		k := server.Key{Scope: "tenant", Key: "no-create"}
		if transactional {
			k.Key += "-tx"
			c, _, w, err := s.ClaimWork(ctx, k, "fp")
			require.NoError(t, err)
			require.True(t, c.Acquired)
			require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: 201}, retention))
		} else {
			c, err := s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
			require.True(t, c.Acquired)
			require.NoError(t, s.Complete(ctx, k, c.Token, server.StoredResponse{Status: 201}, retention))
		}
		c, err := s.Claim(ctx, k, "fp", lease)
		require.NoError(t, err)
		require.True(t, c.Record.Completed)
		_, err = s.Purge(ctx, 10)
		require.NoError(t, err)
		_, err = s.Stats(ctx)
		require.NoError(t, err)
		s.Close()
	}
}
