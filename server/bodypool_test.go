package server_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// TestBodyKeptPastTheHandlerReadsNothing: the middleware reuses the
// storage of the bodies it reads, so a handler that (against net/http's
// rule) keeps its request body and reads it after returning reads nothing,
// never a later request's body (here each handler reads the first bytes
// of its body and keeps the rest unread); and every handler reads its own
// body, however the bodies before it were sized.
func TestBodyKeptPastTheHandlerReadsNothing(t *testing.T) {
	t.Parallel()
	var kept []io.Reader
	var got []string
	h := server.Middleware(newMemstore(), server.Options{SingleTenant: true})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b := make([]byte, 5)
			_, err := io.ReadFull(r.Body, b)
			require.NoError(t, err)
			got = append(got, string(b))
			kept = append(kept, r.Body)
			w.WriteHeader(http.StatusCreated)
		}))
	bodies := []string{"first, a long one: " + string(make([]byte, 600)), "second", "third, a little longer"}
	for i, body := range bodies {
		kept = append(kept, nil)[:i] // a handler that ran keeps its body only
		require.Equal(t, http.StatusCreated, serveDirect(h, newKey(), body).Code)
		for _, r := range kept {
			n, err := r.Read(make([]byte, 1024))
			assert.Equal(t, 0, n, "a kept body reads nothing of request %d's", i)
			assert.ErrorIs(t, err, io.EOF)
		}
	}
	assert.Equal(t, []string{"first", "secon", "third"}, got)
}
