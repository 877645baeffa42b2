package etcdstore_test

import (
	"net/http"
	"testing"

	"github.com/idemhq/idem/internal/outlive"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
)

// TestWorkOutlivesTheClient: a handler calls a provider with r.Context()
// behind a client whose attempts time out before the provider answers.
// The work is not cancelled with the connection: one provider call per
// key, every operation completes. The naive handler, which calls with the
// connection's context, charges again on retries.
func TestWorkOutlivesTheClient(t *testing.T) {
	cli := connect(t)
	outlive.Test(t, 10, func(t *testing.T, mode outlive.Mode) outlive.Result {
		store := newStore(t, cli, etcdstore.Options{})
		mw := server.Middleware(store, server.Options{SingleTenant: true})
		return outlive.Run(t, 10, mode, mw, func(*http.Request, string) error { return nil })
	})
}
