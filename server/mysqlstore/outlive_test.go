package mysqlstore_test

import (
	"net/http"
	"testing"

	"github.com/idemhq/idem/internal/outlive"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/mysqlstore"
)

// TestWorkOutlivesTheClient: a handler calls a provider with r.Context()
// and then writes its charge, behind a client whose attempts time out
// before the provider answers, in both of mysqlstore's modes. The work
// (and, in transactional mode, its transaction) is not cancelled with the
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
				db := newDB(t, 2*keys+4)
				store := newStore(t, db, mysqlstore.Options{Transactional: transactional})
				charges := newCharges(t, db)
				mw := server.Middleware(store, server.Options{SingleTenant: true})
				res := outlive.Run(t, keys, mode, mw, func(r *http.Request, order string) error {
					insert := "INSERT INTO " + charges + " (idem_key, amount) VALUES (?, 1000)"
					if tx, ok := mysqlstore.Tx(r.Context()); ok {
						_, err := tx.ExecContext(r.Context(), insert, order)
						return err
					}
					_, err := db.ExecContext(r.Context(), insert, order)
					return err
				})
				if mode == outlive.Detached {
					if n := countCharges(t, db, charges, ""); n != keys {
						t.Errorf("%d rows for %d keys", n, keys)
					}
				}
				return res
			})
		})
	}
}
