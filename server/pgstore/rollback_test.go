package pgstore_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// TestFailedHandlerRollsBack: a handler that charges and then fails (a 5xx
// answer or a panic) leaves no charge and no record; the retry runs the
// handler again, charges once, and is replayed from then on.
func TestFailedHandlerRollsBack(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fail   func(w http.ResponseWriter)
		status int
	}{
		{"500", func(w http.ResponseWriter) { http.Error(w, "ledger unavailable", http.StatusInternalServerError) }, http.StatusInternalServerError},
		{"503", func(w http.ResponseWriter) { http.Error(w, "try later", http.StatusServiceUnavailable) }, http.StatusServiceUnavailable},
		{"panic", func(http.ResponseWriter) { panic("ledger exploded") }, http.StatusInternalServerError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(t)
			var calls atomic.Int32
			svc.serveIdem(t, nil, server.Options{}, func(w http.ResponseWriter, r *http.Request) {
				attempt := calls.Add(1)
				if err := svc.chargeTx(r, int(attempt)); err != nil {
					http.Error(w, "charge failed", http.StatusInternalServerError)
					return
				}
				if attempt == 1 {
					tc.fail(w)
					return
				}
				w.WriteHeader(http.StatusCreated)
				fmt.Fprintf(w, `{"attempt":%d}`, attempt)
			})
			const key = "pay-fail"

			failed := svc.post(t, key)
			require.Equal(t, tc.status, failed.status)
			assert.False(t, failed.replayed)
			assert.Zero(t, svc.charged(t, key), "the failed attempt's charge rolled back")
			exists, _ := svc.stored(t, key)
			assert.False(t, exists, "the key was released")

			ok := svc.post(t, key)
			require.Equal(t, http.StatusCreated, ok.status, ok.body)
			assert.False(t, ok.replayed)
			assert.Equal(t, `{"attempt":2}`, ok.body)
			assert.Equal(t, 1, svc.charged(t, key))
			_, completed := svc.stored(t, key)
			assert.True(t, completed)

			again := svc.post(t, key)
			assert.Equal(t, http.StatusCreated, again.status)
			assert.True(t, again.replayed)
			assert.Equal(t, ok.body, again.body)
			assert.Equal(t, int32(2), calls.Load())
			assert.Equal(t, 1, svc.charged(t, key))
		})
	}
}
