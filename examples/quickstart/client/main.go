// Command client is idem's client quick start: it sends one charge to the
// server quick start, safely retried, and says what became of it.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemhq/idem"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "the server's base URL")
	path := flag.String("journal", filepath.Join(os.TempDir(), "idem-quickstart.journal"), "the journal file")
	amount := flag.Int("amount", 1000, "cents to charge for order-1")
	flag.Parse()
	if err := run(*url, *path, *amount); err != nil {
		log.Fatal(err)
	}
}

func run(url, path string, amount int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	journal, err := idem.OpenJournal(path, idem.JournalOptions{})
	if err != nil {
		return err // idem.ErrJournalLocked if another process holds it
	}
	defer journal.Close()
	client, err := idem.New(idem.Options{
		Journal: journal,
		// Credentials are never journaled; this puts them back on every attempt.
		PrepareRequest: func(r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+cmp.Or(os.Getenv("API_TOKEN"), "acme"))
			return nil
		},
	})
	if err != nil {
		return err
	}

	// After a restart: finish what the last process left pending.
	resumed, err := client.Resume(ctx)
	if err != nil {
		return err
	}
	for _, r := range resumed {
		switch {
		case errors.Is(r.Err, idem.ErrExpired):
			log.Printf("%s is past the server's retention: reconcile it", r.Operation.Key)
		case r.Err != nil:
			log.Printf("%s is still pending: %v", r.Operation.Key, r.Err)
		default:
			log.Printf("resumed %s: %d", r.Operation.Key, r.Response.StatusCode)
		}
	}

	// One operation. Its key comes from the business ID, so any process
	// that charges order-1 uses the same key; without one, Do mints a key.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/charges",
		strings.NewReader(fmt.Sprintf(`{"amount":%d,"currency":"usd"}`, amount)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idem.DeriveKey("charge", "order-1"))
	resp, err := client.Do(req)
	var e *idem.Error
	switch {
	case err == nil:
		fmt.Printf("%d %s (replayed %t, from journal %t)\n",
			resp.StatusCode, strings.TrimSpace(string(resp.Body)), resp.Replayed, resp.FromJournal)
		if resp.StatusCode >= 400 { // a final answer all the same: retrying will not change it
			return fmt.Errorf("the server refused order-1 with %d", resp.StatusCode)
		}
		return nil
	case errors.Is(err, idem.ErrKeyReused):
		return fmt.Errorf("order-1 was charged with a different request: %w", err)
	case errors.As(err, &e):
		return fmt.Errorf("no final answer after %d attempts; run again to finish %s: %w", e.Attempts, e.Key, err)
	default:
		return err
	}
}
