package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/webhook"
)

const testSecret = "whsec_dGhlIHJlY2VpdmVyJ3MgdGVzdCBzZWNyZXQsIDMyIGJ5dGVz"

// clock is a fake clock that moves only when told.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time            { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration)   { c.ns.Add(int64(d)) }
func (c *clock) Ago(d time.Duration) int64 { return c.Now().Add(-d).Unix() }

// effects records the handler's effects: how often each message ran, and
// with which body.
type effects struct {
	mu     sync.Mutex
	runs   map[string]int
	bodies map[string]string
}

func newEffects() *effects {
	return &effects{runs: map[string]int{}, bodies: map[string]string{}}
}

func (e *effects) record(m webhook.Message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs[m.ID]++
	e.bodies[m.ID] = string(m.Body)
}

func (e *effects) total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.runs {
		n += r
	}
	return n
}

// sender delivers to a receiver as a Standard Webhooks sender does.
type sender struct {
	url    string
	signer *webhook.Signer
	clock  *clock
}

type answer struct {
	status   int
	problem  string // the problem document's type, if any
	replayed bool
	retry    string
}

// deliver sends body as message id, prepared by edit (which may change
// the header after signing, and the body), and returns the answer.
func (s *sender) deliver(t *testing.T, id string, body []byte, edit func(h http.Header, body []byte) []byte) answer {
	t.Helper()
	h := http.Header{}
	s.signer.Sign(h, id, s.clock.Now(), body)
	if edit != nil {
		body = edit(h, body)
	}
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true", retry: resp.Header.Get("Retry-After")}
	if resp.Header.Get("Content-Type") == server.ProblemContentType {
		var p struct{ Type string }
		require.NoError(t, json.Unmarshal(b, &p))
		a.problem = p.Type
	}
	return a
}

func newReceiver(t *testing.T, store server.Store, c *clock, fn webhook.HandlerFunc, opts webhook.Options) *sender {
	t.Helper()
	v, err := webhook.NewVerifier(testSecret, webhook.VerifyOptions{Now: c.Now})
	require.NoError(t, err)
	srv := httptest.NewServer(webhook.Handler(store, v, fn, opts))
	t.Cleanup(srv.Close)
	s, err := webhook.NewSigner(testSecret)
	require.NoError(t, err)
	return &sender{url: srv.URL, signer: s, clock: c}
}

// Edits of a signed delivery.
func withBody(b string) func(http.Header, []byte) []byte {
	return func(http.Header, []byte) []byte { return []byte(b) }
}

func withHeader(name, value string) func(http.Header, []byte) []byte {
	return func(h http.Header, b []byte) []byte {
		if value == "" {
			h.Del(name)
		} else {
			h.Set(name, value)
		}
		return b
	}
}

func signedBy(secret string, id string, ts time.Time) func(http.Header, []byte) []byte {
	return func(h http.Header, b []byte) []byte {
		s, err := webhook.NewSigner(secret)
		if err != nil {
			panic(err)
		}
		s.Sign(h, id, ts, b)
		return b
	}
}

const otherSecret = "whsec_YW5vdGhlciBzZW5kZXIncyBzZWNyZXQsIDMyIGJ5dGVzIQ=="

// TestHandlerAnswers: each kind of delivery gets its documented answer,
// and only a first good delivery runs the effect.
func TestHandlerAnswers(t *testing.T) {
	t.Parallel()
	c := newClock()
	fx := newEffects()
	s := newReceiver(t, memstore.New(memstore.Options{}), c, func(_ context.Context, m webhook.Message) error {
		fx.record(m)
		return nil
	}, webhook.Options{MaxBody: 64})
	body := []byte(`{"type":"payment.succeeded","amount":100}`)

	first := s.deliver(t, "msg_1", body, nil)
	assert.Equal(t, answer{status: http.StatusNoContent}, first)
	c.Advance(time.Minute) // the sender's retry, signed afresh
	again := s.deliver(t, "msg_1", body, nil)
	assert.Equal(t, answer{status: http.StatusNoContent, replayed: true}, again)

	tests := []struct {
		name    string
		id      string
		body    string
		edit    func(http.Header, []byte) []byte
		status  int
		problem string
	}{
		{"another body under a handled ID", "msg_1", `{"type":"payment.succeeded","amount":999}`, nil, http.StatusUnprocessableEntity, server.ProblemKeyReused},
		{"body changed after signing", "msg_2", string(body), withBody(`{"type":"payment.succeeded","amount":101}`), http.StatusUnauthorized, webhook.ProblemSignature},
		{"signed with another secret", "msg_3", string(body), signedBy(otherSecret, "msg_3", c.Now()), http.StatusUnauthorized, webhook.ProblemSignature},
		{"signature of another ID", "msg_4", string(body), withHeader(webhook.HeaderID, "msg_5"), http.StatusUnauthorized, webhook.ProblemSignature},
		{"stale: signed 6 minutes ago", "msg_6", string(body), signedBy(testSecret, "msg_6", c.Now().Add(-6*time.Minute)), http.StatusUnauthorized, webhook.ProblemTimestamp},
		{"future: signed 6 minutes ahead", "msg_7", string(body), signedBy(testSecret, "msg_7", c.Now().Add(6*time.Minute)), http.StatusUnauthorized, webhook.ProblemTimestamp},
		{"no signature", "msg_8", string(body), withHeader(webhook.HeaderSignature, ""), http.StatusBadRequest, webhook.ProblemHeader},
		{"no timestamp", "msg_9", string(body), withHeader(webhook.HeaderTimestamp, ""), http.StatusBadRequest, webhook.ProblemHeader},
		{"malformed ID", "msg,10", string(body), nil, http.StatusBadRequest, webhook.ProblemHeader},
		{"body over MaxBody", "msg_11", strings.Repeat("x", 65), nil, http.StatusRequestEntityTooLarge, server.ProblemBodyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := s.deliver(t, tt.id, []byte(tt.body), tt.edit)
			assert.Equal(t, tt.status, a.status)
			assert.Equal(t, tt.problem, a.problem)
		})
	}
	resp, err := http.Get(s.url)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, http.MethodPost, resp.Header.Get("Allow"))

	assert.Equal(t, map[string]int{"msg_1": 1}, fx.runs, "only the first good delivery ran")
	assert.Equal(t, string(body), fx.bodies["msg_1"])
}

// TestHandlerFailureAndInFlight: a handler's error releases the ID (500,
// and the retry runs it); a repeat while the first delivery runs is told
// 409 with Retry-After, and its retry replays.
func TestHandlerFailureAndInFlight(t *testing.T) {
	t.Parallel()
	c := newClock()
	fx := newEffects()
	var calls atomic.Int64
	started, finish := make(chan struct{}), make(chan struct{})
	s := newReceiver(t, memstore.New(memstore.Options{}), c, func(_ context.Context, m webhook.Message) error {
		switch calls.Add(1) {
		case 1:
			return errors.New("database down")
		case 2:
			close(started)
			<-finish
		}
		fx.record(m)
		return nil
	}, webhook.Options{})
	body := []byte(`{"n":1}`)

	a := s.deliver(t, "msg_f", body, nil)
	assert.Equal(t, http.StatusInternalServerError, a.status)
	assert.Equal(t, webhook.ProblemFailed, a.problem)

	done := make(chan answer, 1)
	go func() { done <- s.deliver(t, "msg_f", body, nil) }()
	<-started
	a = s.deliver(t, "msg_f", body, nil)
	assert.Equal(t, answer{status: http.StatusConflict, problem: server.ProblemInFlight, retry: "1"}, a)
	close(finish)
	assert.Equal(t, answer{status: http.StatusNoContent}, <-done)
	a = s.deliver(t, "msg_f", body, nil)
	assert.Equal(t, answer{status: http.StatusNoContent, replayed: true}, a)
	assert.Equal(t, map[string]int{"msg_f": 1}, fx.runs)
	assert.Equal(t, int64(2), calls.Load(), "the failed run and the one that recorded")
}

// failingStore fails every claim.
type failingStore struct{ server.Store }

func (failingStore) Claim(context.Context, server.Key, string, time.Duration) (server.Claim, error) {
	return server.Claim{}, errors.New("connection refused")
}

func TestHandlerStoreFails(t *testing.T) {
	t.Parallel()
	ran := false
	s := newReceiver(t, failingStore{}, newClock(), func(context.Context, webhook.Message) error { ran = true; return nil }, webhook.Options{})
	a := s.deliver(t, "msg_s", []byte(`{}`), nil)
	assert.Equal(t, answer{status: http.StatusServiceUnavailable, problem: server.ProblemStoreUnavailable, retry: "1"}, a)
	assert.False(t, ran)
}

// delivery is one planned delivery of the sender simulation.
type delivery struct {
	id, body string
	edit     func(http.Header, []byte) []byte
	status   int    // the answer it must get, once the retries are done
	problem  string // and the problem's type
}

// plan returns a sender's deliveries of n messages, in a shuffled order:
// each message one to three times (duplicates, and retries of answers it
// lost), and, for some, bad deliveries mixed in: a body changed after
// signing, another secret, a delivery signed ten minutes ago (recorded
// and sent again) or ten minutes ahead, a missing header. Deliveries of
// another body under a handled ID come last, in reuse: which body an ID
// holds is whichever was handled first.
func plan(rng *rand.Rand, c *clock, n int) (all, reuse []delivery) {
	var good, bad []delivery
	for i := range n {
		id := fmt.Sprintf("msg_%03d", i)
		body := fmt.Sprintf(`{"type":"invoice.paid","invoice":%d}`, i)
		for range 1 + rng.IntN(3) {
			good = append(good, delivery{id: id, body: body, status: http.StatusNoContent})
		}
		switch i % 6 {
		case 0:
			bad = append(bad, delivery{id: id, body: body, edit: withBody(body + " "), status: http.StatusUnauthorized, problem: webhook.ProblemSignature})
		case 1:
			bad = append(bad, delivery{id: id, body: body, edit: func(h http.Header, b []byte) []byte {
				return signedBy(otherSecret, id, c.Now())(h, b)
			}, status: http.StatusUnauthorized, problem: webhook.ProblemSignature})
		case 2:
			bad = append(bad, delivery{id: id, body: body, edit: func(h http.Header, b []byte) []byte {
				return signedBy(testSecret, id, c.Now().Add(-10*time.Minute))(h, b)
			}, status: http.StatusUnauthorized, problem: webhook.ProblemTimestamp})
		case 3:
			bad = append(bad, delivery{id: id, body: body, edit: func(h http.Header, b []byte) []byte {
				return signedBy(testSecret, id, c.Now().Add(10*time.Minute))(h, b)
			}, status: http.StatusUnauthorized, problem: webhook.ProblemTimestamp})
		case 4:
			bad = append(bad, delivery{id: id, body: body, edit: withHeader(webhook.HeaderTimestamp, ""), status: http.StatusBadRequest, problem: webhook.ProblemHeader})
		case 5:
			reuse = append(reuse, delivery{id: id, body: strings.Replace(body, "paid", "voided", 1), status: http.StatusUnprocessableEntity, problem: server.ProblemKeyReused})
		}
	}
	all = append(good, bad...)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all, reuse
}

// run delivers ds from workers goroutines at once, as a sender does: each
// answer of 409, 500 or 503 is retried (signed afresh), up to a bound, and
// the final answer must be the planned one. The clock moves a second per
// delivery, so retries carry later timestamps.
func run(t *testing.T, s *sender, ds []delivery, workers int) {
	t.Helper()
	ch := make(chan delivery)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for d := range ch {
				var a answer
				for range 20 {
					s.clock.Advance(time.Second)
					a = s.deliver(t, d.id, []byte(d.body), d.edit)
					if a.status != http.StatusConflict && a.status < 500 {
						break
					}
				}
				assert.Equal(t, d.status, a.status, "%s %s", d.id, d.body)
				assert.Equal(t, d.problem, a.problem, "%s %s", d.id, d.body)
			}
		})
	}
	for _, d := range ds {
		ch <- d
	}
	close(ch)
	wg.Wait()
}

// TestHandlerSender plays a sender that retries, duplicates and reorders
// deliveries, with bad ones among them: every message runs its effect
// once, with its own body, and every bad delivery is refused as
// documented. The naive receiver in the same test verifies signatures as
// well but runs the effect for every good delivery: it runs some twice.
func TestHandlerSender(t *testing.T) {
	t.Parallel()
	const messages = 60
	c := newClock()
	rng := rand.New(rand.NewPCG(7, 11))
	ds, reuse := plan(rng, c, messages)

	fx := newEffects()
	var flaky sync.Map // the first run of every seventh message fails
	s := newReceiver(t, memstore.New(memstore.Options{}), c, func(_ context.Context, m webhook.Message) error {
		if _, failed := flaky.LoadOrStore(m.ID, true); !failed && strings.HasSuffix(m.ID, "7") {
			return errors.New("transient")
		}
		fx.record(m)
		return nil
	}, webhook.Options{Run: server.RunOptions{Wait: 2 * time.Second}})
	run(t, s, ds, 4)
	run(t, s, reuse, 4)

	require.Len(t, fx.runs, messages)
	for i := range messages {
		id := fmt.Sprintf("msg_%03d", i)
		assert.Equal(t, 1, fx.runs[id], id)
		assert.Equal(t, fmt.Sprintf(`{"type":"invoice.paid","invoice":%d}`, i), fx.bodies[id], id)
	}

	// The naive receiver: the same verification, no RunOnce.
	naive := newEffects()
	v, err := webhook.NewVerifier(testSecret, webhook.VerifyOptions{Now: c.Now})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := v.Verify(r.Header, body)
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		naive.record(m)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	ns := &sender{url: srv.URL, signer: s.signer, clock: c}
	var good []delivery
	for _, d := range ds {
		if d.status == http.StatusNoContent {
			good = append(good, d)
		}
	}
	run(t, ns, good, 4)
	assert.Greater(t, naive.total(), messages, "the naive receiver runs duplicates again")
	assert.Equal(t, len(good), naive.total())
}
