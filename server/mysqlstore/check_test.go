package mysqlstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/mysqlstore"
)

// TestCheck reads the test server's settings: the machine's MariaDB is
// durable (innodb_flush_log_at_trx_commit 1, no binary log) at
// REPEATABLE READ, so an InnoDB table has no finding; a MyISAM table of
// the store's name is Critical, and Check fails with it.
func TestCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newDB(t, 2)
	var flush, isolation string
	require.NoError(t, db.QueryRow("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit, @@SESSION.tx_isolation").Scan(&flush, &isolation))
	if flush != "1" || isolation != "REPEATABLE-READ" {
		t.Skipf("the test server is not at its defaults (flush %s, isolation %s)", flush, isolation)
	}
	s := newStore(t, db, mysqlstore.Options{Transactional: true})
	findings, err := s.Findings(ctx)
	require.NoError(t, err)
	for _, f := range findings {
		assert.NotEqual(t, mysqlstore.Critical, f.Severity, "%v", f)
	}
	require.NoError(t, s.Check(ctx))

	table := tableName()
	_, err = db.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY) ENGINE = MyISAM")
	require.NoError(t, err)
	dropTable(t, db, table)
	myisam, err := mysqlstore.New(db, mysqlstore.Options{Table: table})
	require.NoError(t, err)
	err = myisam.Check(ctx)
	require.ErrorIs(t, err, mysqlstore.ErrNotInnoDB)
	var f mysqlstore.Finding
	require.True(t, errors.As(err, &f))
	assert.Equal(t, mysqlstore.Critical, f.Severity)
	t.Log(f)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Findings(cctx)
	require.ErrorIs(t, err, context.Canceled)
}
