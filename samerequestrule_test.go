// This file tests Options.SameRequest against the server package's
// Options.Fingerprint: one rule on both ends.

package idem

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// The rule a payments service publishes: a payment is its amount and
// currency; its customer must not change; a client timestamp may.
var (
	paySelect = []string{"/amount", "/currency"}
	payCheck  = []string{"/customer"}
)

// ruledServer is a payments service behind the middleware with the rule;
// it records the bodies it ran.
type ruledServer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newRuledServer(t *testing.T) *ruledServer {
	t.Helper()
	s := &ruledServer{}
	mw := server.Middleware(memstore.New(memstore.Options{}), server.Options{
		SingleTenant: true,
		Fingerprint:  server.FingerprintRule{Select: paySelect, Check: payCheck},
	})
	s.srv = httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		n := len(s.bodies)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"payment":%d}`, n)
	})))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *ruledServer) runs() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.bodies) }

func TestSameRequestRuleAgreesWithTheServer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		journal bool
		rule    bool
	}{
		{"journal and rule", true, true},
		// The naive client: a journal without the rule refuses, locally, a
		// retry the service would have replayed.
		{"journal without the rule", true, false},
		{"no journal", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := newRuledServer(t)
			o := quickOptions(Options{})
			if c.journal {
				o.Journal = openJournal(t, "")
			}
			if c.rule {
				o.SameRequest = FingerprintRule{Select: paySelect, Check: payCheck}
			}
			client := newClient(t, o)
			key := NewKey()
			send := func(body string) (*Response, error) {
				req := post(t, srv.srv.URL, body)
				req.Header.Set("Idempotency-Key", key)
				return client.Do(req)
			}
			first, err := send(`{"amount":100,"currency":"eur","customer":"c1","sent_at":"10:00:00"}`)
			require.NoError(t, err)

			again, err := send(`{"sent_at":"10:00:07","currency":"eur","amount":100,"customer":"c1"}`)
			switch {
			case c.journal && !c.rule:
				require.ErrorIs(t, err, ErrKeyReused, "refused without asking the service")
			case c.journal:
				require.NoError(t, err)
				assert.True(t, again.FromJournal, "answered by the journal")
				assert.Equal(t, string(first.Body), string(again.Body))
			default:
				require.NoError(t, err)
				assert.True(t, again.Replayed, "replayed by the service")
				assert.Equal(t, string(first.Body), string(again.Body))
			}

			for _, other := range []string{
				`{"amount":200,"currency":"eur","customer":"c1"}`, // a keyed field
				`{"amount":100,"currency":"eur","customer":"c2"}`, // a checked one
				`{"amount":100,"currency":"eur"}`,                 // a checked one, absent
			} {
				_, err := send(other)
				assert.ErrorIs(t, err, ErrKeyReused, other)
			}
			assert.Equal(t, 1, srv.runs(), "the payment ran once")
		})
	}
}

// TestSameRequestRuleContinuesWithTheJournaledBytes: a pending operation
// continued by a call that differs in an ignored field sends the bytes it
// was journaled with, never the new ones.
func TestSameRequestRuleContinuesWithTheJournaledBytes(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	c := newClient(t, quickOptions(Options{
		Journal:     openJournal(t, ""),
		MaxAttempts: 2,
		SameRequest: FingerprintRule{Select: paySelect},
	}))
	key := NewKey()
	send := func(body string) (*Response, error) {
		req := post(t, s.srv.URL, body)
		req.Header.Set("Idempotency-Key", key)
		return c.Do(req)
	}
	const journaled = `{"amount":100,"currency":"eur","sent_at":"10:00:00"}`
	_, err := send(journaled)
	require.ErrorIs(t, err, ErrRetriesExhausted)
	resp, err := send(`{"amount":100,"currency":"eur","sent_at":"10:00:09"}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	seen := s.seen()
	require.Len(t, seen, 3)
	for _, r := range seen {
		assert.Equal(t, journaled, string(r.Body), "every attempt sends the journaled bytes")
	}
}

func TestSameRequestRuleRefusesWhatItCannotSelectFrom(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(http.StatusCreated))
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, ""), SameRequest: FingerprintRule{Select: paySelect}}))
	for name, bodies := range map[string][2]string{
		"a repeated member": {`{"amount":1,"currency":"eur","amount":5}`, `{"amount":1,"currency":"eur","amount":9}`},
		"another case":      {`{"amount":1,"currency":"eur","Amount":5}`, `{"amount":1,"currency":"eur","Amount":9}`},
		"not JSON":          {`{"amount":1,"currency":"eur",`, `{"amount":1,"currency":"eur", `},
	} {
		key := NewKey()
		send := func(body string) error {
			req := post(t, s.srv.URL, body)
			req.Header.Set("Idempotency-Key", key)
			_, err := c.Do(req)
			return err
		}
		require.NoError(t, send(bodies[0]), name)
		assert.ErrorIs(t, send(bodies[1]), ErrKeyReused, name)
		assert.NoError(t, send(bodies[0]), "%s: the same bytes are the same request", name)
	}
}

func TestSameRequestRuleOptions(t *testing.T) {
	t.Parallel()
	for _, r := range []FingerprintRule{
		{Check: []string{"/a"}},
		{Select: []string{"amount"}},
		{Select: []string{"/items/-"}},
	} {
		_, err := New(Options{SameRequest: r})
		assert.Error(t, err, "%+v", r)
		assert.Contains(t, err.Error(), "SameRequest")
	}
	_, err := New(Options{SameRequest: FingerprintRule{Select: []string{"/a"}, Check: []string{"/b"}}})
	assert.NoError(t, err)
}
