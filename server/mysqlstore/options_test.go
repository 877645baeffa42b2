package mysqlstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/mysqlstore"
)

func TestSchema(t *testing.T) {
	t.Parallel()
	text, err := mysqlstore.Schema("")
	require.NoError(t, err)
	assert.Contains(t, text, "CREATE TABLE IF NOT EXISTS `idem_keys` (")
	assert.Contains(t, text, "ENGINE = InnoDB")
	assert.Contains(t, text, "KEY expires_at_idx (expires_at)")
	text, err = mysqlstore.Schema("billing.idem_keys")
	require.NoError(t, err)
	assert.Contains(t, text, "CREATE TABLE IF NOT EXISTS `billing`.`idem_keys` (")
	assert.NotContains(t, text, "{{")
}

func TestTableNameRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"Idem", "1keys", "a.b.c", "keys;drop", "`keys`", "a-b", ".keys", "keys.", strings.Repeat("k", 65),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := mysqlstore.Schema(name)
			require.ErrorIs(t, err, mysqlstore.ErrTableName)
			_, err = mysqlstore.New(nil, mysqlstore.Options{Table: name})
			require.Error(t, err)
			_, err = mysqlstore.Open(context.Background(), testDSN, mysqlstore.Options{Table: name})
			require.ErrorIs(t, err, mysqlstore.ErrTableName)
		})
	}
	_, err := mysqlstore.Schema(strings.Repeat("k", 64))
	require.NoError(t, err, "64 bytes is MySQL's limit, and allowed")
}

// TestMigrateTwice: Migrate is idempotent, the table is InnoDB, and a
// qualified name reaches the named database.
func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	var dbName string
	require.NoError(t, db.QueryRow("SELECT DATABASE()").Scan(&dbName))
	table := dbName + "." + tableName()
	s := newStore(t, db, mysqlstore.Options{Table: table})
	require.NoError(t, s.Migrate(context.Background()))
	var engine string
	require.NoError(t, db.QueryRow("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
		dbName, strings.TrimPrefix(table, dbName+".")).Scan(&engine))
	assert.Equal(t, "InnoDB", engine)
}
