// Package outlive is the scenario every store's tests run to show that a
// first request's work outlives its client: a handler that calls a
// provider with its request's context, behind an idem client whose
// attempt timeout is shorter than the provider's answer. Before the work
// was detached from the connection, each timed-out attempt aborted the
// provider call after the provider had acted, the key was released, and
// the retry charged again.
package outlive

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/server"
)

// Mode is how the handler calls the provider.
type Mode int

const (
	// Detached: the handler calls with r.Context(), the idiomatic way,
	// which the middleware no longer cancels when the client leaves.
	Detached Mode = iota
	// Naive: the handler calls with the connection's context
	// (server.ClientContext), as r.Context() was before: the client's
	// timeout aborts the provider call after the provider acted.
	Naive
)

// Result is what a run counted.
type Result struct {
	Keys          int
	ProviderCalls int64 // charges the provider made
	Commits       int64 // handlers that committed their write (Commit said nil)
	Completed     int   // operations the client got a final 201 for
	Errors        []error
}

// Run runs keys operations, each with its own key, against a service
// made by serve from a handler, and returns what it counted. commit is
// the store's business write of one charge, made by the handler once the
// provider answered (in the store's transaction, for a transactional
// store); it returns an error if the write failed. The client's attempt
// timeout is shorter than the provider's answer: the provider answers the
// first call of each operation only after the client's first attempt for
// it has timed out and the service has seen the client's connection go
// (ordered by events, not by the clock), so every operation meets a
// client that gave up while its work was running.
func Run(t *testing.T, keys int, mode Mode, serve func(http.Handler) http.Handler, commit func(r *http.Request, order string) error) Result {
	t.Helper()
	var (
		mu       sync.Mutex
		timedOut = map[string]chan struct{}{} // by the operation's order
		res      = Result{Keys: keys}
	)
	gate := func(order string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch, ok := timedOut[order]
		if !ok {
			ch = make(chan struct{})
			timedOut[order] = ch
		}
		return ch
	}
	var calls atomic.Int64
	perOrder := map[string]int{}
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		order := r.URL.Query().Get("order")
		calls.Add(1) // the provider acts at once, and answers later
		mu.Lock()
		perOrder[order]++
		first := perOrder[order] == 1
		mu.Unlock()
		if first {
			// The first call of an operation is answered only once the
			// service has seen its client leave; a naive caller, whose
			// call that cancels, has hung up by then. Bounded, so that a
			// signal that never comes shows as a wrong count, not a hang.
			bound := time.After(20 * time.Second)
			select {
			case <-gate(order):
			case <-bound:
			}
			if mode == Naive {
				select {
				case <-r.Context().Done():
				case <-bound:
				}
			}
		}
		w.WriteHeader(http.StatusCreated)
	}))
	pc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: keys}}
	defer pc.CloseIdleConnections()

	var commits atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		order := string(body)
		ctx := r.Context()
		if mode == Naive {
			ctx = server.ClientContext(ctx)
		}
		stop := context.AfterFunc(server.ClientContext(r.Context()), func() {
			ch := gate(order)
			mu.Lock()
			defer mu.Unlock()
			select {
			case <-ch:
			default:
				close(ch)
			}
		})
		defer stop()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, provider.URL+"/charge?order="+order, nil)
		resp, err := pc.Do(req)
		if err != nil {
			http.Error(w, "provider unreachable", http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		if err := commit(r, order); err != nil {
			http.Error(w, "write failed", http.StatusServiceUnavailable)
			return
		}
		commits.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	svc := httptest.NewServer(serve(handler))
	defer svc.Close()

	client, err := idem.New(idem.Options{
		AttemptTimeout: 150 * time.Millisecond,
		MaxAttempts:    40,
		BaseDelay:      10 * time.Millisecond,
		MaxDelay:       50 * time.Millisecond,
		MaxRetryAfter:  50 * time.Millisecond,
		Budget:         idem.BudgetOptions{Capacity: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, keys)
	codes := make([]int, keys)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := fmt.Sprintf("order-%d", i)
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, svc.URL+"/orders", bytes.NewReader([]byte(order)))
			req.Header.Set("Idempotency-Key", "key-"+order)
			resp, err := client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			res.Errors = append(res.Errors, errs[i])
		} else if codes[i] == http.StatusCreated {
			res.Completed++
		}
	}
	res.ProviderCalls, res.Commits = calls.Load(), commits.Load()
	return res
}

// Test runs the scenario with keys operations in both modes through run,
// which serves a fresh store each time, and asserts: detached, one charge,
// one write and one completed operation per key; naive, more charges than
// keys (which shows the scenario can fail).
func Test(t *testing.T, keys int, run func(t *testing.T, mode Mode) Result) {
	t.Run("detached", func(t *testing.T) {
		res := run(t, Detached)
		if len(res.Errors) > 0 {
			t.Errorf("%d operations failed; the first: %v", len(res.Errors), res.Errors[0])
		}
		if res.ProviderCalls != int64(keys) || res.Commits != int64(keys) || res.Completed != keys {
			t.Errorf("keys=%d provider calls=%d commits=%d completed=%d; want one of each per key",
				keys, res.ProviderCalls, res.Commits, res.Completed)
		}
	})
	t.Run("naive", func(t *testing.T) {
		res := run(t, Naive)
		t.Logf("naive: %+v", res)
		if res.ProviderCalls <= int64(keys) {
			t.Errorf("naive handler: provider calls=%d for %d keys; the connection's context should have repeated charges", res.ProviderCalls, keys)
		}
	})
}
