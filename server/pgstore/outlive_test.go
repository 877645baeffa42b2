package pgstore_test

import (
	"net/http"
	"testing"

	"github.com/idemhq/idem/internal/outlive"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestWorkOutlivesTheClient: a handler calls a provider with r.Context()
// and then writes its charge, behind a client whose attempts time out
// before the provider answers, in both of pgstore's modes. The work (and,
// in transactional mode, its transaction) is not cancelled with the
// connection: one provider call and one row per key. The naive handler,
// which calls with the connection's context, charges again on retries.
func TestWorkOutlivesTheClient(t *testing.T) {
	t.Parallel()
	const keys = 10
	for _, transactional := range []bool{true, false} {
		name := map[bool]string{true: "transactional", false: "lease"}[transactional]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			outlive.Test(t, keys, func(t *testing.T, mode outlive.Mode) outlive.Result {
				pool := newPool(t, poolConfig(t, 2*keys+4))
				store := newStore(t, pool, pgstore.Options{Table: tableName(), Transactional: transactional})
				charges := newCharges(t, pool)
				mw := server.Middleware(store, server.Options{SingleTenant: true})
				res := outlive.Run(t, keys, mode, mw, func(r *http.Request, order string) error {
					if tx, ok := pgstore.Tx(r.Context()); ok {
						_, err := tx.Exec(r.Context(), "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1000)", order)
						return err
					}
					_, err := pool.Exec(r.Context(), "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1000)", order)
					return err
				})
				if mode == outlive.Detached {
					if n := countCharges(t, pool, charges); n != keys {
						t.Errorf("%d rows for %d keys", n, keys)
					}
				}
				return res
			})
		})
	}
}
