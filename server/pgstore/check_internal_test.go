package pgstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAssess holds the decision of Findings on readings no real server
// need be set up for: each kind, at each severity, and the settings that
// are no finding.
func TestAssess(t *testing.T) {
	t.Parallel()
	clean := func() reading {
		return reading{
			addr: "db:5432",
			settings: map[string]setting{
				"synchronous_commit":                  {"on", "default"},
				"idle_in_transaction_session_timeout": {"0", "default"},
				"statement_timeout":                   {"0", "default"},
				"default_transaction_read_only":       {"off", "default"},
			},
			announced: 42, backend: 42,
			database: "app",
			mode:     pgx.QueryExecModeCacheStatement,
		}
	}
	with := func(name, value, source string) reading {
		r := clean()
		r.settings[name] = setting{value, source}
		return r
	}
	tx := Options{Transactional: true}
	type want struct {
		kind     error
		severity Severity
		text     string // in the finding's Error
	}
	for _, tc := range []struct {
		name string
		r    reading
		opts Options
		want []want
	}{
		{"clean", clean(), Options{}, nil},
		{"clean, transactional", clean(), tx, nil},
		{"standby", func() reading { r := clean(); r.recovery = true; return r }(), tx,
			[]want{{ErrStandby, Critical, "hot standby"}}},
		{"read-only, lease mode", with("default_transaction_read_only", "on", "user"), Options{},
			[]want{{ErrReadOnly, Critical, "ALTER ROLE"}}},
		{"read-only, transactional", with("default_transaction_read_only", "on", "database"), tx,
			[]want{{ErrReadOnly, Warning, `ALTER DATABASE "app" SET default_transaction_read_only = off`}}},
		{"a pooler, prepared statements", func() reading { r := clean(); r.backend = 7; return r }(), tx,
			[]want{{ErrPooler, Warning, "default_query_exec_mode=cache_describe"}}},
		{"a pooler, describe_exec", func() reading {
			r := clean()
			r.backend, r.mode = 7, pgx.QueryExecModeDescribeExec
			return r
		}(), tx, []want{{ErrPooler, Warning, "describe_exec"}}},
		{"a pooler, cache_describe", func() reading {
			r := clean()
			r.backend, r.mode = 7, pgx.QueryExecModeCacheDescribe
			return r
		}(), tx, nil},
		{"a pooler, exec", func() reading {
			r := clean()
			r.backend, r.mode = 7, pgx.QueryExecModeExec
			return r
		}(), tx, nil},
		{"idle timeout, overridden", with("idle_in_transaction_session_timeout", "300", "configuration file"), tx,
			[]want{{ErrIdleTimeout, Notice, "handled"}}},
		{"idle timeout, overridden above it", with("idle_in_transaction_session_timeout", "300", "configuration file"),
			Options{Transactional: true, IdleInTransaction: time.Hour}, []want{{ErrIdleTimeout, Notice, "sets it to 1h0m0s"}}},
		{"idle timeout, left standing", with("idle_in_transaction_session_timeout", "300", "database user"),
			Options{Transactional: true, IdleInTransaction: -1}, []want{{ErrIdleTimeout, Critical, "300ms"}}},
		{"idle timeout, set too short", clean(), Options{Transactional: true, IdleInTransaction: time.Second},
			[]want{{ErrIdleTimeout, Critical, "Options.IdleInTransaction"}}},
		{"idle timeout, left standing, above the work limit", with("idle_in_transaction_session_timeout", "600000", "configuration file"),
			Options{Transactional: true, IdleInTransaction: -1}, nil},
		{"idle timeout, lease mode", with("idle_in_transaction_session_timeout", "300", "configuration file"), Options{}, nil},
		{"synchronous_commit off, raised", with("synchronous_commit", "off", "database"), tx,
			[]want{{ErrAsyncCommit, Notice, "handled"}}},
		{"synchronous_commit off, inherited", with("synchronous_commit", "off", "database"),
			Options{InheritSynchronousCommit: true}, []want{{ErrAsyncCommit, Warning, `ALTER DATABASE "app" SET synchronous_commit = on`}}},
		{"synchronous_commit local", with("synchronous_commit", "local", "configuration file"),
			Options{InheritSynchronousCommit: true}, nil},
		{"statement_timeout under the lease", with("statement_timeout", "5000", "client"), Options{},
			[]want{{ErrStatementTimeout, Warning, "DSN"}}},
		{"statement_timeout over the lease", with("statement_timeout", "60000", "client"), Options{}, nil},
		{"several, most severe first", func() reading {
			r := with("synchronous_commit", "off", "configuration file")
			r.recovery = true
			r.settings["statement_timeout"] = setting{"1000", "user"}
			return r
		}(), Options{}, []want{
			{ErrStandby, Critical, ""}, {ErrStatementTimeout, Warning, ""}, {ErrAsyncCommit, Notice, "handled"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.r.assess(tc.opts)
			require.Len(t, got, len(tc.want), "%v", got)
			for i, w := range tc.want {
				f := got[i]
				assert.ErrorIs(t, f, w.kind)
				assert.Equal(t, w.severity, f.Severity, "%v", f)
				assert.Equal(t, "db:5432", f.Addr)
				assert.NotEmpty(t, f.Setting)
				assert.NotEmpty(t, f.Risk)
				assert.NotEmpty(t, f.Fix)
				assert.Contains(t, f.Error(), w.text)
				assert.True(t, strings.HasPrefix(f.Error(), "pgstore: db:5432: "), f.Error())
				var asFinding Finding
				assert.True(t, errors.As(error(f), &asFinding))
			}
		})
	}
}

func TestSeverityString(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "notice", Notice.String())
	assert.Equal(t, "warning", Warning.String())
	assert.Equal(t, "critical", Critical.String())
	assert.Equal(t, "Severity(9)", Severity(9).String())
}

// TestSessionStateIsTransactionLocal: behind a pooler in transaction
// mode, session state does not survive a transaction, and a setting or
// lock of the session would meet the next client of the server
// connection. Every set_config the store sends is transaction-local
// (is_local true), and every advisory lock transaction-scoped.
func TestSessionStateIsTransactionLocal(t *testing.T) {
	t.Parallel()
	name, err := parseTable("")
	require.NoError(t, err)
	for _, opts := range []Options{{}, {DurableClaims: true, IdleInTransaction: time.Minute}, {Takeover: -1, IdleInTransaction: -1}} {
		q := buildQueries(name, opts)
		all := []string{q.schema, q.claim, q.takeover, q.renew, q.complete, q.commit, q.release, q.purge,
			q.stats, q.running, q.begin, q.lock, q.lookup, q.insert, q.record, q.workSettings, migrateLock, schemaPresent}
		sets, locks := 0, 0
		for _, sql := range all {
			for rest := sql; ; {
				i := strings.Index(rest, "set_config(")
				if i < 0 {
					break
				}
				call := rest[i:]
				end := strings.Index(call, "true)")
				require.Positive(t, end, "set_config without is_local true: %s", call)
				require.NotContains(t, call[:end], "false", "set_config with is_local false: %s", call)
				sets++
				rest = call[len("set_config("):]
			}
			for rest := sql; ; {
				i := strings.Index(rest, "_advisory_")
				if i < 0 {
					break
				}
				call := rest[i:]
				require.True(t, strings.HasPrefix(call, "_advisory_xact_lock"), "a session-level advisory lock: %s", call)
				locks++
				rest = call[len("_advisory_"):]
			}
		}
		require.Positive(t, sets)
		require.Positive(t, locks)
	}
}
