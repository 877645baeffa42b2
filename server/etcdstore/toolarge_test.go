package etcdstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/etcdstore/internal/cluster"
)

// TestResponseTooLarge: an outcome over Options.MaxResponse, or over
// what the cluster and the client accept in one request, is not stored,
// Complete says so with ErrResponseTooLarge (and server's), and the key
// is still held under the token, so the middleware can record a small
// outcome in its place.
func TestResponseTooLarge(t *testing.T) {
	cli := connect(t)
	ctx := context.Background()
	cases := map[string]struct {
		opts etcdstore.Options
		body int
	}{
		"over MaxResponse":      {etcdstore.Options{MaxResponse: 1 << 10}, 1<<10 + 1},
		"over the request size": {etcdstore.Options{MaxResponse: 4 * cluster.MaxRequestBytes}, cluster.MaxRequestBytes + 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			store := newStore(t, cli, c.opts)
			k := server.Key{Scope: "large", Key: rand.Text()}
			claim, err := store.Claim(ctx, k, "fp", time.Minute)
			require.NoError(t, err)
			big := server.StoredResponse{Status: http.StatusOK, Body: bytes.Repeat([]byte("x"), c.body)}
			err = store.Complete(ctx, k, claim.Token, big, time.Hour)
			assert.ErrorIs(t, err, etcdstore.ErrResponseTooLarge)
			assert.ErrorIs(t, err, server.ErrResponseTooLarge)
			small := server.StoredResponse{Status: http.StatusOK, Body: []byte("not kept")}
			require.NoError(t, store.Complete(ctx, k, claim.Token, small, time.Hour), "the key is still held under the token")
		})
	}
}
