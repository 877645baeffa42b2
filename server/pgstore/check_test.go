package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// findingsOf returns the findings of a Store with opts on pool, by kind.
func findingsOf(t *testing.T, pool *pgxpool.Pool, opts pgstore.Options) map[error]pgstore.Finding {
	t.Helper()
	s, err := pgstore.New(pool, opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	fs, err := s.Findings(context.Background())
	require.NoError(t, err)
	byKind := map[error]pgstore.Finding{}
	for _, f := range fs {
		byKind[f.Err] = f
	}
	return byKind
}

// TestFindingsSession reads each setting as a session of the shared test
// server gets it from the connection's startup parameters (how a DSN's
// options, the database's or the role's settings arrive), so that the
// shared server's own settings never change. The test server as it is
// has no finding, and Check passes.
func TestFindingsSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := pgstore.Options{Transactional: true}
	for _, tc := range []struct {
		name     string
		settings map[string]string
		opts     pgstore.Options
		kind     error
		severity pgstore.Severity
	}{
		{"synchronous_commit off", map[string]string{"synchronous_commit": "off"}, tx, pgstore.ErrAsyncCommit, pgstore.Notice},
		{"synchronous_commit off, inherited", map[string]string{"synchronous_commit": "off"},
			pgstore.Options{InheritSynchronousCommit: true}, pgstore.ErrAsyncCommit, pgstore.Warning},
		{"idle timeout, turned off for the work", map[string]string{"idle_in_transaction_session_timeout": "300"}, tx,
			pgstore.ErrIdleTimeout, pgstore.Notice},
		{"idle timeout, left standing", map[string]string{"idle_in_transaction_session_timeout": "300"},
			pgstore.Options{Transactional: true, IdleInTransaction: -1}, pgstore.ErrIdleTimeout, pgstore.Critical},
		{"statement_timeout", map[string]string{"statement_timeout": "2s"}, tx, pgstore.ErrStatementTimeout, pgstore.Warning},
		{"read-only, lease mode", map[string]string{"default_transaction_read_only": "on"}, pgstore.Options{},
			pgstore.ErrReadOnly, pgstore.Critical},
		{"read-only, transactional", map[string]string{"default_transaction_read_only": "on"}, tx,
			pgstore.ErrReadOnly, pgstore.Warning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := sessionPool(t, 2, tc.settings)
			fs := findingsOf(t, pool, tc.opts)
			require.Len(t, fs, 1, "%v", fs)
			f, ok := fs[tc.kind]
			require.True(t, ok, "%v", fs)
			require.Equal(t, tc.severity, f.Severity, "%v", f)
			require.Contains(t, f.Setting, "startup parameters")

			s, err := pgstore.New(pool, tc.opts)
			require.NoError(t, err)
			t.Cleanup(s.Close)
			err = s.Check(ctx)
			if tc.severity == pgstore.Critical {
				require.ErrorIs(t, err, tc.kind)
				var got pgstore.Finding
				require.True(t, errors.As(err, &got))
				require.Equal(t, pgstore.Critical, got.Severity)
			} else {
				require.NoError(t, err)
			}
		})
	}
	t.Run("the test server", func(t *testing.T) {
		t.Parallel()
		pool := newPool(t, poolConfig(t, 2))
		for _, opts := range []pgstore.Options{{}, tx, {InheritSynchronousCommit: true, IdleInTransaction: -1}} {
			require.Empty(t, findingsOf(t, pool, opts))
			s, err := pgstore.New(pool, opts)
			require.NoError(t, err)
			require.NoError(t, s.Check(ctx))
			s.Close()
		}
	})
}

// TestFindingsRead: a read-only session fails the store's claims (the
// finding's risk, shown), and a cancelled context fails Findings with its
// error.
func TestFindingsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sessionPool(t, 2, map[string]string{"default_transaction_read_only": "on"})
	table := tableName()
	newStore(t, newPool(t, poolConfig(t, 2)), pgstore.Options{Table: table})
	ro, err := pgstore.New(pool, pgstore.Options{Table: table})
	require.NoError(t, err)
	t.Cleanup(ro.Close)
	_, err = ro.Claim(ctx, server.Key{Scope: "tenant", Key: "read-only"}, "fp", lease)
	require.ErrorContains(t, err, "read-only transaction", "what ErrReadOnly's Risk says")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = ro.Findings(cancelled)
	require.ErrorIs(t, err, context.Canceled)
}

// TestFindingsCluster reads the settings where a deployment sets them, on
// a cluster of its own (scripts/pgcluster.sh): the database's
// synchronous_commit, the role's idle_in_transaction_session_timeout in
// one database, and a hot standby, which Check refuses until it is
// promoted.
func TestFindingsCluster(t *testing.T) {
	admin := ownCluster(t)
	ctx := context.Background()
	open := func(t *testing.T, dsn string) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(dsn)
		require.NoError(t, err)
		cfg.MaxConns = 2
		return newPool(t, cfg)
	}

	t.Run("the database's synchronous_commit", func(t *testing.T) {
		pool := open(t, clusterDatabase(t, admin, map[string]string{"synchronous_commit": "off"}))
		fs := findingsOf(t, pool, pgstore.Options{InheritSynchronousCommit: true})
		f, ok := fs[pgstore.ErrAsyncCommit]
		require.True(t, ok, "%v", fs)
		require.Equal(t, pgstore.Warning, f.Severity)
		require.Contains(t, f.Setting, "set by the database")
		require.Contains(t, f.Fix, "ALTER DATABASE")
		fs = findingsOf(t, pool, pgstore.Options{})
		require.Equal(t, pgstore.Notice, fs[pgstore.ErrAsyncCommit].Severity, "handled by default")
	})

	t.Run("the role's idle_in_transaction_session_timeout in the database", func(t *testing.T) {
		dsn := clusterDatabase(t, admin, nil)
		pool := open(t, dsn)
		_, err := pool.Exec(ctx, "ALTER ROLE postgres IN DATABASE "+pool.Config().ConnConfig.Database+" SET idle_in_transaction_session_timeout = 250")
		require.NoError(t, err)
		pool = open(t, dsn) // sessions opened after the change
		fs := findingsOf(t, pool, pgstore.Options{Transactional: true, IdleInTransaction: -1})
		f, ok := fs[pgstore.ErrIdleTimeout]
		require.True(t, ok, "%v", fs)
		require.Equal(t, pgstore.Critical, f.Severity)
		require.Contains(t, f.Setting, "the role in this database")
		s, err := pgstore.New(pool, pgstore.Options{Transactional: true, IdleInTransaction: -1})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		require.ErrorIs(t, s.Check(ctx), pgstore.ErrIdleTimeout)
	})

	t.Run("a hot standby", func(t *testing.T) {
		pool := open(t, admin)
		s, err := pgstore.New(pool, pgstore.Options{Transactional: true})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		require.NoError(t, s.Check(ctx))
		runCluster(t, "standby")
		promoted := false
		t.Cleanup(func() {
			if !promoted {
				runCluster(t, "promote")
			}
		})
		pool.Reset() // the restart closed the pool's connections
		err = s.Check(ctx)
		require.ErrorIs(t, err, pgstore.ErrStandby)
		var f pgstore.Finding
		require.True(t, errors.As(err, &f))
		require.Equal(t, pgstore.Critical, f.Severity)
		runCluster(t, "promote")
		promoted = true
		require.NoError(t, s.Check(ctx))
	})
}
