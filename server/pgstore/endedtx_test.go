package pgstore_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestHandlerEndsTx: a handler that ends the work's transaction itself,
// with COMMIT or ROLLBACK as SQL text, takes the key's lock with it. The
// Commit that follows finds the connection outside a transaction and
// fails: the record is not inserted in autocommit, outside the work and
// without the lock, and the request is answered with a problem instead of
// the handler's 201.
func TestHandlerEndsTx(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"COMMIT", "ROLLBACK"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			svc := newService(t)
			var commits []server.StoreOpInfo
			obs := &server.Observer{StoreOp: func(_ context.Context, info server.StoreOpInfo) {
				if info.Op == server.OpCommit {
					commits = append(commits, info) // one request at a time
				}
			}}
			svc.serveIdem(t, nil, server.Options{Observer: obs}, func(w http.ResponseWriter, r *http.Request) {
				if err := svc.chargeTx(r, 1000); err != nil {
					http.Error(w, "charge failed", http.StatusInternalServerError)
					return
				}
				tx, _ := pgstore.Tx(r.Context())
				if _, err := tx.Exec(r.Context(), end); err != nil {
					http.Error(w, "end failed", http.StatusInternalServerError)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})
			const key = "pay-ended"
			rep := svc.post(t, key)
			assert.GreaterOrEqual(t, rep.status, 500, rep.body)
			assert.True(t, strings.Contains(rep.body, server.ProblemStoreUnavailable), rep.body)
			exists, _ := svc.stored(t, key)
			assert.False(t, exists, "a record stored outside the work's transaction")
			require.Len(t, commits, 1)
			assert.NotEmpty(t, commits[0].ErrorType, "the failed commit is observed")
			want := 0
			if end == "COMMIT" {
				want = 1 // the handler's own commit made its charge, beyond idem's reach
			}
			assert.Equal(t, want, svc.charged(t, key))
		})
	}
}
