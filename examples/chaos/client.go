package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/internal/history"
)

// runClient is the child process: resume what the last process left
// pending, then work through the batch. Even operations take their key from
// business IDs, odd ones from a name bound in the journal.
func runClient(url, journal, client, historyFile string, ops, conc int) error {
	var j *idem.Journal
	var err error
	for range 100 { // a killed predecessor's lock goes with it; be patient anyway
		if j, err = idem.OpenJournal(journal, idem.JournalOptions{LockTimeout: 100 * time.Millisecond}); err == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	defer j.Close()
	var rec *history.Recorder // nil records nothing
	if historyFile != "" {
		if rec, err = history.Create(historyFile, os.Getpid()); err != nil {
			return err
		}
		defer rec.Close()
	}
	c, err := idem.New(idem.Options{
		Journal:           j,
		MaxAttempts:       20,
		BaseDelay:         5 * time.Millisecond,
		MaxDelay:          200 * time.Millisecond,
		MaxRetryAfter:     500 * time.Millisecond,
		ResumeJitter:      50 * time.Millisecond,
		ResumeConcurrency: conc,
		PrepareRequest: func(r *http.Request) error {
			r.Header.Set(charges.ClientHeader, client) // credentials are re-applied, never journaled
			return nil
		},
		SecretHeaders: []string{charges.ClientHeader},
	})
	if err != nil {
		return err
	}
	// A child that cannot finish its batch in this time (the service is
	// gone, say) gives up rather than loop forever.
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	res, err := c.Resume(ctx)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil && !retryable(r.Err) {
			return fmt.Errorf("resuming %s: %w", r.Operation.Key, r.Err)
		}
	}
	if len(res) > 0 {
		fmt.Printf("chaos: the new client resumed %d pending operations\n", len(res))
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < ops; i = int(next.Add(1)) - 1 {
				if err := charge(ctx, c, rec, url, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// charge sends operation i until it has a final answer.
func charge(ctx context.Context, c *idem.Client, rec *history.Recorder, url string, i int) error {
	for {
		body := fmt.Appendf(nil, `{"amount":%d,"currency":"usd","ref":"op-%d"}`, 1000+i, i)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/charges", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		var resp *idem.Response
		call := history.Now()
		var err error
		if i%2 == 0 {
			req.Header.Set("Idempotency-Key", idem.DeriveKey("chaos", strconv.Itoa(i)))
			resp, err = c.Do(req)
		} else {
			resp, err = c.DoNamed("chaos/"+strconv.Itoa(i), req)
		}
		switch {
		case err == nil && resp.StatusCode == http.StatusCreated:
			recordAnswer(rec, i, resp, call)
			return nil
		case err == nil:
			return fmt.Errorf("operation %d: status %d: %s", i, resp.StatusCode, resp.Body)
		case ctx.Err() != nil:
			return fmt.Errorf("operation %d: %w", i, ctx.Err())
		case retryable(err):
			time.Sleep(50 * time.Millisecond) // still pending; keep at it
		default:
			return fmt.Errorf("operation %d: %w", i, err)
		}
	}
}

// childTimeout bounds a child's whole run.
const childTimeout = 5 * time.Minute

// retryable reports errors after which the operation is still pending and
// worth sending again.
func retryable(err error) bool {
	return errors.Is(err, idem.ErrRetriesExhausted) || errors.Is(err, idem.ErrBudgetExhausted)
}
