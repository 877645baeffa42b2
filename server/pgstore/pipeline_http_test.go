package pgstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// pipeHTTP is a payment API over one table, behind two middlewares: one
// over a pipelined store (pipeURL), one over the service's own
// transactional store (plainURL), the control. Both share one handler,
// whose behaviour a request picks with X-Mode. A request without X-Mode
// is a first: it charges, holds if its key was registered with hold, and
// answers 201 with headers and a body of its key.
type pipeHTTP struct {
	svc      *service
	pipeURL  string
	plainURL string
	client   *http.Client

	mu    sync.Mutex
	holds map[string]*holder

	ran     atomic.Int64 // handler statements that did not fail with ErrNotClaimed on a repeat
	refused atomic.Int64 // statements that failed with ErrNotClaimed
	big     []byte       // the body of mode "big"
}

type holder struct {
	held chan struct{}
	hold chan struct{}
}

func newPipeHTTP(t *testing.T, repeat func(p *pipeHTTP, w http.ResponseWriter, r *http.Request)) *pipeHTTP {
	t.Helper()
	p := &pipeHTTP{svc: newService(t), holds: map[string]*holder{}}
	p.client = p.svc.client
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if r.Header.Get("X-Mode") != "" {
			repeat(p, w, r)
			return
		}
		if err := p.svc.chargeTx(r, 1000); err != nil {
			http.Error(w, "first charge failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		p.mu.Lock()
		hd := p.holds[key]
		p.mu.Unlock()
		if hd != nil {
			close(hd.held)
			<-hd.hold
		}
		w.Header().Set("X-Id", "ch_"+key)
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		if key == "big" || strings.HasPrefix(key, "big-") {
			w.Write(p.big)
			return
		}
		fmt.Fprintf(w, `{"id":"ch_%s"}`, key)
	})
	// The chain around the middleware sets fields of its own.
	outer := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Outer", "o")
			next.ServeHTTP(w, r)
		})
	}
	pipe := httptest.NewServer(outer(server.Middleware(pipelinedStore(t, p.svc), server.Options{SingleTenant: true})(h)))
	t.Cleanup(pipe.Close)
	plain := httptest.NewServer(outer(server.Middleware(p.svc.store, server.Options{SingleTenant: true})(h)))
	t.Cleanup(plain.Close)
	p.pipeURL, p.plainURL = pipe.URL+"/payments", plain.URL+"/payments"
	// The pipelined store's first claim is not pipelined: make it.
	rep := p.do(t, p.pipeURL, "learn", payBody, "")
	require.NoError(t, rep.err)
	require.Equal(t, http.StatusCreated, rep.status)
	return p
}

// httpAnswer is one HTTP answer, whole.
type httpAnswer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (a httpAnswer) replayed() bool { return a.header.Get(server.ReplayedHeader) == "true" }

func (p *pipeHTTP) do(t *testing.T, url, key, body, mode string) httpAnswer {
	return p.doCtx(context.Background(), url, key, body, mode)
}

func (p *pipeHTTP) doCtx(ctx context.Context, url, key, body, mode string) httpAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return httpAnswer{err: err}
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	if mode != "" {
		req.Header.Set("X-Mode", mode)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return httpAnswer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return httpAnswer{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// holdFirst starts the first request of key on url and returns once its
// handler holds the key (its charge made); release lets it answer and
// returns its answer.
func (p *pipeHTTP) holdFirst(t *testing.T, url, key string) (release func() httpAnswer) {
	t.Helper()
	hd := &holder{held: make(chan struct{}), hold: make(chan struct{})}
	p.mu.Lock()
	p.holds[key] = hd
	p.mu.Unlock()
	done := make(chan httpAnswer, 1)
	go func() { done <- p.do(t, url, key, payBody, "") }()
	select {
	case <-hd.held:
	case a := <-done:
		t.Fatalf("the first request of %s ended without holding its key: %d %s %v", key, a.status, a.body, a.err)
	}
	return func() httpAnswer {
		close(hd.hold)
		return <-done
	}
}

// cmpHeader returns the header of an answer without the fields that
// differ between a first answer and its replay by design.
func cmpHeader(h http.Header) http.Header {
	c := h.Clone()
	c.Del("Date")
	c.Del(server.ReplayedHeader)
	c.Del("Content-Length") // a first answer too large for net/http to buffer is chunked
	return c
}

// requireReplayOf asserts that rep replays first byte for byte.
func requireReplayOf(t *testing.T, first, rep httpAnswer, msg string) {
	t.Helper()
	require.NoError(t, rep.err, msg)
	assert.Equal(t, first.status, rep.status, msg)
	assert.True(t, rep.replayed(), "%s: not marked replayed", msg)
	assert.Equal(t, cmpHeader(first.header), cmpHeader(rep.header), msg)
	assert.True(t, bytes.Equal(first.body, rep.body), "%s: body %q, first answered %q", msg, trunc(rep.body), trunc(first.body))
}

func trunc(b []byte) []byte {
	if len(b) > 120 {
		return b[:120]
	}
	return b
}

// waitIdle waits (bounded) until no connection of the service's pool is
// held: refused works roll back in the background.
func (p *pipeHTTP) waitIdle(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { return p.svc.pool.Stat().AcquiredConns() == 0 },
		10*time.Second, 2*time.Millisecond, "a connection is still held after every answer")
}

// TestPipelineHTTPNoStatementReleasing: a repeat whose handler answers
// without sending any statement, with an outcome the middleware releases
// (500, 503, 429, a panic), on a key that is recorded or held by a first
// still running. Without the pipelined claim (the control) the handler
// never runs and the repeat is answered as its claim: the replay, or 409.
// With it, the handler runs, and the work's Rollback sends the claim the
// handler did not: the repeat is answered as its claim all the same,
// never with the handler's own answer (which it got while Rollback sent
// nothing).
func TestPipelineHTTPNoStatementReleasing(t *testing.T) {
	t.Parallel()
	p := newPipeHTTP(t, func(p *pipeHTTP, w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("X-Mode") {
		case "500":
			http.Error(w, "handler's own 500", http.StatusInternalServerError)
		case "503":
			w.Header().Set("Retry-After", "7")
			http.Error(w, "handler's own 503", http.StatusServiceUnavailable)
		case "429":
			http.Error(w, "handler's own 429", http.StatusTooManyRequests)
		case "panic":
			panic("handler's own panic")
		}
	})
	for _, tc := range []struct {
		name      string
		pipelined bool
	}{
		{"control, claim before the handler", false},
		{"pipelined", true},
	} {
		url := p.plainURL
		if tc.pipelined {
			url = p.pipeURL
		}
		for _, mode := range []string{"500", "503", "429", "panic"} {
			t.Run(tc.name+"/recorded/"+mode, func(t *testing.T) {
				key := fmt.Sprintf("rec-%v-%s", tc.pipelined, mode)
				first := p.do(t, url, key, payBody, "")
				require.NoError(t, first.err)
				require.Equal(t, http.StatusCreated, first.status)
				rep := p.do(t, url, key, payBody, mode)
				requireReplayOf(t, first, rep, "a repeat of a recorded key whose handler sent no statement")
				assert.NotContains(t, string(rep.body), "handler's own")
				assert.Equal(t, 1, p.svc.charged(t, key))
			})
			t.Run(tc.name+"/in flight/"+mode, func(t *testing.T) {
				key := fmt.Sprintf("fly-%v-%s", tc.pipelined, mode)
				release := p.holdFirst(t, url, key)
				rep := p.do(t, url, key, payBody, mode)
				first := release()
				require.NoError(t, rep.err)
				assert.Equal(t, http.StatusConflict, rep.status, "a repeat while the first runs: %s", rep.body)
				assert.NotContains(t, string(rep.body), "handler's own")
				require.Equal(t, http.StatusCreated, first.status)
				assert.Equal(t, 1, p.svc.charged(t, key))
			})
		}
	}
}

// TestPipelineHTTPWritesBeforeRefusal: a repeat's handler writes to its
// ResponseWriter (status, header fields, body, a 1xx, Flush, the
// ResponseController's Flush, deadlines, full duplex, Hijack) before its
// first statement, which fails with ErrNotClaimed; it then answers 201
// "ignored" with header fields of its own. The client gets the claim's
// answer and nothing of the handler's: the replay byte for byte (the
// chain's fields included), 409 while the first runs, 422 for another
// body. One charge per key.
func TestPipelineHTTPWritesBeforeRefusal(t *testing.T) {
	t.Parallel()
	var hijacked, deadlineSet atomic.Int64
	pre := map[string]func(w http.ResponseWriter){
		"status and body": func(w http.ResponseWriter) {
			w.Header().Set("X-Leak", "early")
			w.WriteHeader(http.StatusAccepted)
			w.Write([]byte("early body"))
		},
		"delete the chain's fields": func(w http.ResponseWriter) {
			w.Header().Del("X-Outer")
			w.Header().Set("Content-Type", "text/leak")
		},
		"1xx": func(w http.ResponseWriter) {
			w.Header().Set("Link", "</leak>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
		},
		"Flusher": func(w http.ResponseWriter) {
			w.Write([]byte("early body"))
			w.(http.Flusher).Flush()
		},
		"ResponseController Flush": func(w http.ResponseWriter) {
			w.Header().Set("X-Leak", "early")
			_ = http.NewResponseController(w).Flush()
		},
		"write deadline in the past": func(w http.ResponseWriter) {
			if http.NewResponseController(w).SetWriteDeadline(time.Now().Add(-time.Hour)) == nil {
				deadlineSet.Add(1)
			}
		},
		"read deadline in the past": func(w http.ResponseWriter) {
			if http.NewResponseController(w).SetReadDeadline(time.Now().Add(-time.Hour)) == nil {
				deadlineSet.Add(1)
			}
		},
		"full duplex": func(w http.ResponseWriter) {
			_ = http.NewResponseController(w).EnableFullDuplex()
		},
		"Hijack": func(w http.ResponseWriter) {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			hijacked.Add(1)
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhijack")
			buf.Flush()
			conn.Close()
		},
	}
	repeat := func(p *pipeHTTP, w http.ResponseWriter, r *http.Request) {
		pre[r.Header.Get("X-Mode")](w)
		err := p.svc.chargeTx(r, 1)
		if errors.Is(err, pgstore.ErrNotClaimed) {
			p.refused.Add(1)
		} else {
			p.ran.Add(1)
		}
		w.Header().Set("X-Leak", "late")
		http.SetCookie(w, &http.Cookie{Name: "leak", Value: "1"})
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("ignored"))
	}
	p := newPipeHTTP(t, repeat)

	recorded := p.do(t, p.pipeURL, "recorded", payBody, "")
	require.Equal(t, http.StatusCreated, recorded.status)
	require.Equal(t, "o", recorded.header.Get("X-Outer"))
	release := p.holdFirst(t, p.pipeURL, "held")
	n := 0
	for name := range pre {
		t.Run(name, func(t *testing.T) {
			rep := p.do(t, p.pipeURL, "recorded", payBody, name)
			requireReplayOf(t, recorded, rep, "recorded")
			assert.Empty(t, rep.header.Values("X-Leak"))
			assert.Empty(t, rep.header.Values("Set-Cookie"))

			rep = p.do(t, p.pipeURL, "recorded", `{"amount":1}`, name)
			require.NoError(t, rep.err)
			assert.Equal(t, http.StatusUnprocessableEntity, rep.status, "%s", rep.body)
			assert.Empty(t, rep.header.Values("X-Leak"))
			assert.NotContains(t, string(rep.body), "ignored")

			rep = p.do(t, p.pipeURL, "held", payBody, name)
			require.NoError(t, rep.err)
			assert.Equal(t, http.StatusConflict, rep.status, "%s", rep.body)
			assert.Empty(t, rep.header.Values("X-Leak"))
			assert.Empty(t, rep.header.Values("Set-Cookie"))
			assert.NotContains(t, string(rep.body), "ignored")
			assert.NotContains(t, string(rep.body), "early")
		})
		n += 3
	}
	first := release()
	require.Equal(t, http.StatusCreated, first.status)
	require.Equal(t, `{"id":"ch_held"}`, string(first.body))
	assert.Equal(t, int64(n), p.refused.Load(), "every repeat's statement refused")
	assert.Equal(t, int64(0), p.ran.Load())
	assert.Equal(t, int64(0), hijacked.Load(), "the connection cannot be hijacked")
	assert.Equal(t, int64(0), deadlineSet.Load(), "deadlines are not the connection's")
	assert.Equal(t, 1, p.svc.charged(t, "recorded"))
	assert.Equal(t, 1, p.svc.charged(t, "held"))
	p.waitIdle(t)
}

// TestPipelineHTTPPanicAfterRefusal: a repeat's handler panics after its
// statement failed with ErrNotClaimed (with the error, with a value of
// its own), or ends with runtime.Goexit or http.ErrAbortHandler. A panic
// is answered as the claim; the last two abort the connection (the
// documented exception), never answering with the handler's 500. One
// charge per key, no connection left held.
func TestPipelineHTTPPanicAfterRefusal(t *testing.T) {
	t.Parallel()
	p := newPipeHTTP(t, func(p *pipeHTTP, w http.ResponseWriter, r *http.Request) {
		err := p.svc.chargeTx(r, 1)
		if !errors.Is(err, pgstore.ErrNotClaimed) {
			p.ran.Add(1)
		}
		w.Header().Set("X-Leak", "1")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("ignored"))
		switch r.Header.Get("X-Mode") {
		case "panic error":
			panic(err)
		case "panic value":
			panic("handler's own panic")
		case "abort":
			panic(http.ErrAbortHandler)
		case "goexit":
			runtime.Goexit()
		}
	})
	recorded := p.do(t, p.pipeURL, "recorded", payBody, "")
	require.Equal(t, http.StatusCreated, recorded.status)
	release := p.holdFirst(t, p.pipeURL, "held")
	for _, tc := range []struct {
		mode  string
		abort bool // the connection may be aborted instead
	}{
		{"panic error", false},
		{"panic value", false},
		{"abort", true},
		{"goexit", true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			rep := p.do(t, p.pipeURL, "recorded", payBody, tc.mode)
			if rep.err != nil && tc.abort {
				t.Logf("recorded: connection aborted: %v", rep.err)
			} else {
				requireReplayOf(t, recorded, rep, "recorded")
			}
			rep = p.do(t, p.pipeURL, "held", payBody, tc.mode)
			if rep.err != nil && tc.abort {
				t.Logf("held: connection aborted: %v", rep.err)
			} else {
				require.NoError(t, rep.err)
				assert.Equal(t, http.StatusConflict, rep.status, "%s", rep.body)
				assert.Empty(t, rep.header.Values("X-Leak"))
			}
			rep = p.do(t, p.pipeURL, "recorded", `{"amount":1}`, tc.mode)
			if rep.err == nil || !tc.abort {
				require.NoError(t, rep.err)
				assert.Equal(t, http.StatusUnprocessableEntity, rep.status, "%s", rep.body)
			}
		})
	}
	first := release()
	require.Equal(t, http.StatusCreated, first.status)
	assert.Equal(t, int64(0), p.ran.Load())
	assert.Equal(t, 1, p.svc.charged(t, "recorded"))
	assert.Equal(t, 1, p.svc.charged(t, "held"))
	// The key still replays after every kind of end.
	requireReplayOf(t, first, p.do(t, p.pipeURL, "held", payBody, "panic value"), "after")
	p.waitIdle(t)
}

// TestPipelineHTTPLargeReplay: a first answer of 3 MiB of random bytes is
// replayed byte for byte to refused pipelined repeats, 12 of them at
// once, and to the control's repeats; one charge.
func TestPipelineHTTPLargeReplay(t *testing.T) {
	t.Parallel()
	p := newPipeHTTP(t, func(p *pipeHTTP, w http.ResponseWriter, r *http.Request) {
		if err := p.svc.chargeTx(r, 1); !errors.Is(err, pgstore.ErrNotClaimed) {
			p.ran.Add(1)
		}
		w.WriteHeader(http.StatusOK)
		w.Write(bytes.Repeat([]byte("x"), 1<<20))
	})
	p.big = make([]byte, 3<<20)
	_, err := rand.Read(p.big)
	require.NoError(t, err)
	first := p.do(t, p.pipeURL, "big", payBody, "")
	require.NoError(t, first.err)
	require.Equal(t, http.StatusCreated, first.status)
	require.Equal(t, sha256.Sum256(p.big), sha256.Sum256(first.body))

	const repeats = 12
	var wg sync.WaitGroup
	start := make(chan struct{})
	reps := make([]httpAnswer, repeats)
	for i := range reps {
		wg.Go(func() {
			<-start
			url := p.pipeURL
			if i%4 == 3 {
				url = p.plainURL
			}
			reps[i] = p.do(t, url, "big", payBody, "repeat")
		})
	}
	close(start)
	wg.Wait()
	for i, rep := range reps {
		requireReplayOf(t, first, rep, fmt.Sprintf("repeat %d", i))
	}
	assert.Equal(t, int64(0), p.ran.Load())
	assert.Equal(t, 1, p.svc.charged(t, "big"))
	p.waitIdle(t)
}

// TestPipelineHTTPClientGone: the client of a refused repeat goes away
// after the handler's statement was refused and before it answers; the
// handler then answers nothing (it gave up, watching ClientContext), or
// answers anyway. Nothing hangs, no connection stays held, the key still
// replays the first's answer, one charge.
func TestPipelineHTTPClientGone(t *testing.T) {
	t.Parallel()
	refusedCh := make(chan string, 8)
	p := newPipeHTTP(t, func(p *pipeHTTP, w http.ResponseWriter, r *http.Request) {
		err := p.svc.chargeTx(r, 1)
		if !errors.Is(err, pgstore.ErrNotClaimed) {
			p.ran.Add(1)
		}
		if r.Header.Get("X-Mode") == "after" {
			w.Write([]byte("ignored"))
			return
		}
		refusedCh <- r.Header.Get("X-Mode")
		select {
		case <-server.ClientContext(r.Context()).Done():
		case <-time.After(20 * time.Second): // a failsafe only: the client is cancelled
			p.ran.Add(100)
		}
		if r.Header.Get("X-Mode") == "answer anyway" {
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte("ignored"))
		}
	})
	recorded := p.do(t, p.pipeURL, "recorded", payBody, "")
	require.Equal(t, http.StatusCreated, recorded.status)
	release := p.holdFirst(t, p.pipeURL, "held")
	for _, key := range []string{"recorded", "held"} {
		for _, mode := range []string{"give up", "answer anyway"} {
			t.Run(key+"/"+mode, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan httpAnswer, 1)
				go func() { done <- p.doCtx(ctx, p.pipeURL, key, payBody, mode) }()
				select {
				case got := <-refusedCh:
					require.Equal(t, mode, got)
				case a := <-done:
					t.Fatalf("answered before the handler ran: %d %s %v", a.status, a.body, a.err)
				}
				cancel()
				a := <-done
				require.Error(t, a.err)
			})
		}
	}
	first := release()
	require.Equal(t, http.StatusCreated, first.status)
	requireReplayOf(t, recorded, p.do(t, p.pipeURL, "recorded", payBody, "after"), "recorded, after")
	requireReplayOf(t, first, p.do(t, p.pipeURL, "held", payBody, "after"), "held, after")
	assert.Equal(t, int64(0), p.ran.Load())
	assert.Equal(t, 1, p.svc.charged(t, "recorded"))
	assert.Equal(t, 1, p.svc.charged(t, "held"))
	p.waitIdle(t)
}

// TestPipelineHTTPRunOnce: RunOnce on a pipelined store, on a recorded
// key and on a key another work holds, with work that returns ErrNotClaimed
// (wrapped), nil after it, an error of its own after it, or, without any
// statement, an error of its own. The answer is the claim's every time:
// the recorded result, or ErrInFlight; never the work's result or error.
func TestPipelineHTTPRunOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true, PipelineClaim: true})
	charges := newCharges(t, pool)
	learn(t, s, server.Key{Key: "learn"})
	errOwn := errors.New("the work's own error")
	insert := func(ctx context.Context, key string) error {
		tx, _ := pgstore.Tx(ctx)
		_, err := tx.Exec(ctx, "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1)", key)
		return err
	}
	var ran atomic.Int64
	works := map[string]func(key string) func(context.Context) ([]byte, error){
		"wrapped ErrNotClaimed": func(key string) func(context.Context) ([]byte, error) {
			return func(ctx context.Context) ([]byte, error) {
				if err := insert(ctx, key); err != nil {
					return nil, fmt.Errorf("charge: %w", err)
				}
				ran.Add(1)
				return []byte("ran"), nil
			}
		},
		"nil after ErrNotClaimed": func(key string) func(context.Context) ([]byte, error) {
			return func(ctx context.Context) ([]byte, error) {
				if insert(ctx, key) == nil {
					ran.Add(1)
				}
				return []byte("ignored"), nil
			}
		},
		"own error after ErrNotClaimed": func(key string) func(context.Context) ([]byte, error) {
			return func(ctx context.Context) ([]byte, error) {
				if insert(ctx, key) == nil {
					ran.Add(1)
				}
				return nil, errOwn
			}
		},
		"own error, no statement": func(string) func(context.Context) ([]byte, error) {
			return func(context.Context) ([]byte, error) { return nil, errOwn }
		},
	}
	first := func(key string, held, hold chan struct{}) func(context.Context) ([]byte, error) {
		return func(ctx context.Context) ([]byte, error) {
			if err := insert(ctx, key); err != nil {
				return nil, err
			}
			if held != nil {
				close(held)
				<-hold
			}
			return []byte("result of " + key), nil
		}
	}
	rk := server.Key{Key: "recorded"}
	res, _, err := server.RunOnce(ctx, s, rk, "fp", first(rk.Key, nil, nil), server.RunOptions{})
	require.NoError(t, err)
	require.Equal(t, "result of recorded", string(res))

	hk := server.Key{Key: "held"}
	held, hold := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := server.RunOnce(ctx, s, hk, "fp", first(hk.Key, held, hold), server.RunOptions{})
		done <- err
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the first run ended without holding its key: %v", err)
	}
	for name, work := range works {
		t.Run(name, func(t *testing.T) {
			res, replayed, err := server.RunOnce(ctx, s, rk, "fp", work(rk.Key), server.RunOptions{})
			assert.NoError(t, err)
			assert.True(t, replayed)
			assert.Equal(t, "result of recorded", string(res))

			_, _, err = server.RunOnce(ctx, s, hk, "fp", work(hk.Key), server.RunOptions{})
			assert.ErrorIs(t, err, server.ErrInFlight)
			assert.NotErrorIs(t, err, errOwn)
			assert.NotErrorIs(t, err, pgstore.ErrNotClaimed)
		})
	}
	close(hold)
	require.NoError(t, <-done)
	assert.Equal(t, int64(0), ran.Load())
	assert.Equal(t, 2, countCharges(t, pool, charges))
}
