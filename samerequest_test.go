// This file tests that a reordered JSON body is the same request with a
// journal and without one, against the server package.

package idem

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// One meaning of "the same request" on both ends: a JSON body whose
// members are reordered under one key is the same request for the
// journal, as it is for the server's fingerprint, so a client with a
// journal and one without give the same answer.
func TestReorderedJSONIsTheSameRequestWithAndWithoutAJournal(t *testing.T) {
	t.Parallel()
	var executed atomic.Int32
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := executed.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%d}`, n)
	})
	mw := server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true})
	srv := httptest.NewServer(mw(work))
	t.Cleanup(srv.Close)

	for _, withJournal := range []bool{true, false} {
		t.Run(fmt.Sprintf("journal=%v", withJournal), func(t *testing.T) {
			o := quickOptions(Options{})
			if withJournal {
				o.Journal = openJournal(t, "")
			}
			c := newClient(t, o)
			key := NewKey()
			send := func(body string) (*Response, error) {
				req := post(t, srv.URL, body)
				req.Header.Set("Idempotency-Key", key)
				return c.Do(req)
			}
			first, err := send(`{"amount":1000,"currency":"usd"}`)
			require.NoError(t, err)
			before := executed.Load()
			again, err := send("{ \"currency\": \"usd\",\n  \"amount\": 1000 }")
			require.NoError(t, err, "a reordered JSON body is the same request")
			assert.Equal(t, first.StatusCode, again.StatusCode)
			assert.Equal(t, string(first.Body), string(again.Body))
			assert.Equal(t, before, executed.Load(), "not executed again")
			assert.Equal(t, withJournal, again.FromJournal, "answered by the journal when there is one")
			assert.Equal(t, !withJournal, again.Replayed, "replayed by the server otherwise")

			_, err = send(`{"amount":2000,"currency":"usd"}`)
			require.ErrorIs(t, err, ErrKeyReused, "another value is another request")
		})
	}
}

// Without a JSON content type the body counts byte for byte, on both ends.
func TestReorderedBytesWithoutJSONTypeAreAnotherRequest(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, "")}))
	send := func(body string) error {
		req, err := http.NewRequest(http.MethodPost, s.srv.URL, stringsReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := c.Do(req)
		if resp != nil {
			_, _ = io.Discard.Write(resp.Body)
		}
		return err
	}
	require.NoError(t, send(`{"a":1,"b":2}`))
	require.ErrorIs(t, send(`{"b":2,"a":1}`), ErrKeyReused)
	assert.Len(t, s.seen(), 1)
}
