package memstore_test

import (
	"net/http"
	"testing"

	"github.com/idemhq/idem/internal/outlive"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// TestWorkOutlivesTheClient: a handler calls a provider with r.Context()
// behind a client whose attempts time out before the provider answers.
// The work is not cancelled with the connection, so every key charges
// once and completes. The naive handler, which calls with the
// connection's context, charges again on every retry of a timed-out
// attempt: the repetition the middleware used to cause.
func TestWorkOutlivesTheClient(t *testing.T) {
	t.Parallel()
	outlive.Test(t, 10, func(t *testing.T, mode outlive.Mode) outlive.Result {
		mw := server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true})
		return outlive.Run(t, 10, mode, mw, func(*http.Request, string) error { return nil })
	})
}
