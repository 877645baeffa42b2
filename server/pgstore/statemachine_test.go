package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
	"github.com/idemhq/idem/server/storetest"
)

// TestStateMachine drives pgstore, in lease mode and in transactional
// mode, through random sequences of claims, renewals, completions,
// releases, lookups, units of work (ClaimWork, and BeginWork under a
// lease) committed or rolled back, leases lapsing, a work's connection
// killed with pg_terminate_backend, and the service restarting on the
// same table. Each answer, and every key's row after each step, is
// checked against storetest's reference model; rapid shrinks a failing
// sequence to a minimal one. Leases lapse on the database's clock only
// when the machine says so: the row's expires_at is set just past, so no
// step depends on how long another takes.
func TestStateMachine(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts pgstore.Options
	}{
		{"lease", pgstore.Options{}},
		{"transactional", pgstore.Options{Transactional: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			table := tableName()
			opts := mode.opts
			opts.Table = table
			admin := newPool(t, poolConfig(t, 2))
			migrate, err := pgstore.New(admin, opts)
			require.NoError(t, err)
			require.NoError(t, migrate.Migrate(context.Background()))
			migrate.Close()
			dropTable(t, admin, table)
			storetest.RunStateMachine(t, drive, func(rt storetest.T) storetest.Target {
				return pgTarget(t, rt, admin, opts)
			})
		})
	}
}

// pgTarget is one run's store on a pool of its own, and the hooks the
// state machine reaches the table and the work's connections with.
func pgTarget(t *testing.T, rt storetest.T, admin *pgxpool.Pool, opts pgstore.Options) storetest.Target {
	var (
		pool  *pgxpool.Pool
		store *pgstore.Store
	)
	open := func() (server.Store, error) {
		if store != nil {
			store.Close()
			pool.Close()
		}
		var err error
		if pool, err = pgxpool.NewWithConfig(context.Background(), poolConfig(t, 6)); err != nil {
			return nil, err
		}
		if store, err = pgstore.New(pool, opts); err != nil {
			return nil, err
		}
		return store, nil
	}
	if _, err := open(); err != nil {
		rt.Fatalf("open the store: %v", err)
	}
	table := store.Table()
	return storetest.Target{
		Store:   store,
		Restart: func(storetest.T) (server.Store, error) { return open() },
		Settle:  func() { store.Settle() },
		Close: func() {
			store.Close()
			pool.Close()
		},
		Lapse: func(ctx context.Context, k server.Key) error {
			_, err := admin.Exec(ctx, `UPDATE `+table+` SET expires_at = statement_timestamp() - interval '1 millisecond'
WHERE scope = $1 AND key = $2`, k.Scope, k.Key)
			return err
		},
		Peek: func(ctx context.Context, k server.Key) (server.Record, bool, error) {
			var (
				rec    server.Record
				state  string
				status *int32
				at     time.Time
			)
			err := admin.QueryRow(ctx, `SELECT fingerprint, state, status, body, expires_at FROM `+table+`
WHERE scope = $1 AND key = $2`, k.Scope, k.Key).Scan(&rec.Fingerprint, &state, &status, &rec.Response.Body, &at)
			if errors.Is(err, pgx.ErrNoRows) {
				return server.Record{}, false, nil
			}
			if err != nil {
				return server.Record{}, false, err
			}
			rec.Completed, rec.ExpiresAt = state == "completed", at
			if rec.Completed {
				rec.Response.Status = int(*status)
			} else {
				rec.LeaseExpires = at
			}
			return rec, true, nil
		},
		Kill: func(ctx context.Context, work context.Context) error {
			tx, ok := pgstore.Tx(work)
			if !ok {
				return errors.New("the work's context carries no transaction")
			}
			var pid int32
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return fmt.Errorf("the work's backend: %w", err)
			}
			return terminate(ctx, admin, pid)
		},
	}
}

// terminate ends backend pid and returns once it is gone, with its
// transaction and its locks.
func terminate(ctx context.Context, admin *pgxpool.Pool, pid int32) error {
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		return err
	}
	for range 1000 {
		var gone bool
		err := admin.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)
   AND NOT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1)`, pid).Scan(&gone)
		if err != nil || gone {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("backend %d still there after pg_terminate_backend", pid)
}

// drive runs storetest's state machine on rapid.
func drive(t *testing.T, run func(storetest.T, storetest.Steps)) {
	rapid.Check(t, func(rt *rapid.T) {
		run(rt, func(actions map[string]func(storetest.Draw)) {
			m := make(map[string]func(*rapid.T), len(actions))
			for name, act := range actions {
				m[name] = func(rt *rapid.T) {
					act(func(label string, n int) int { return rapid.IntRange(0, n-1).Draw(rt, label) })
				}
			}
			rt.Repeat(m)
		})
	})
}
