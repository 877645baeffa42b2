package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/pgstore"
)

// TestKeysSchema: idem keys schema prints pgstore.Schema's text, and that
// text, applied by an administrator, is a table the store uses: Migrate
// finds it, and idem keys ls reads it.
func TestKeysSchema(t *testing.T) {
	t.Parallel()
	table := "idem_cmd_schema_" + strings.ToLower(rand.Text()[:10])
	r := runIdem(t, "", nil, "keys", "schema", "--table", table)
	require.Equal(t, exitOK, r.code, r.stderr)
	want, err := pgstore.Schema(table)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(want, "\n")+"\n", r.stdout)

	dsn := testDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() {
		conn.Exec(context.Background(), fmt.Sprintf("DROP TABLE IF EXISTS %q", table))
		conn.Close(context.Background())
	})
	_, err = conn.Exec(ctx, r.stdout)
	require.NoError(t, err, "the text runs as psql would run it")
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{Table: table})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Migrate(ctx))
	r = runIdem(t, "", nil, "keys", "ls", "--database", dsn, "--table", table)
	assert.Equal(t, exitOK, r.code, r.stderr)
}
