// This file holds the package's examples.

package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/idemhq/idem"
)

// A POST that meets a 503 is retried with the same key and the same bytes.
func ExampleNew() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1"}`)
	}))
	defer srv.Close()

	client, err := idem.New(idem.Options{})
	if err != nil {
		panic(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":1000}`))
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, string(resp.Body), "after", resp.Attempts, "attempts")
	// Output: 201 {"id":"ch_1"} after 2 attempts
}

func ExampleNewKey() {
	key := idem.NewKey()
	fmt.Println(len(key), key[14:15]) // 36 characters, version 7
	// Output: 36 7
}

// Keys derived from business IDs are the same in every process, so a
// retry from another machine is recognised too. The derivation is part of
// idem's compatibility promise: this output never changes.
func ExampleDeriveKey() {
	fmt.Println(idem.DeriveKey("payout", "2026-12-25", "417"))
	fmt.Println(idem.DeriveKey("payout", "2026-12-25", "417") == idem.DeriveKey("payout", "2026-12-2", "5417"))
	// Output:
	// 742a48db-cbaf-8290-b144-5804a11352c8
	// false
}

// After a crash, Resume sends every pending operation again with its
// journaled key and bytes.
func ExampleClient_Resume() {
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "charged %s", body)
	}))
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "idem-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "client.journal")

	// The first process journals the operation; the server is down.
	journal, _ := idem.OpenJournal(path, idem.JournalOptions{})
	client, _ := idem.New(idem.Options{Journal: journal, MaxAttempts: 1})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":1000}`))
	_, err := client.Do(req)
	fmt.Println(errors.Is(err, idem.ErrRetriesExhausted))
	journal.Close() // the process ends

	// The next process resumes it.
	up.Store(true)
	journal, _ = idem.OpenJournal(path, idem.JournalOptions{})
	defer journal.Close()
	client, _ = idem.New(idem.Options{Journal: journal})
	resumed, _ := client.Resume(context.Background())
	for _, r := range resumed {
		fmt.Println(r.Response.StatusCode, string(r.Response.Body))
	}
	// Output:
	// true
	// 201 charged {"amount":1000}
}

// A name binds one key to one logical operation for good.
func ExampleClient_NamedKey() {
	dir, _ := os.MkdirTemp("", "idem-example")
	defer os.RemoveAll(dir)
	journal, _ := idem.OpenJournal(filepath.Join(dir, "client.journal"), idem.JournalOptions{})
	defer journal.Close()
	client, _ := idem.New(idem.Options{Journal: journal})

	first, _ := client.NamedKey("payout/2026-12-25/417")
	again, _ := client.NamedKey("payout/2026-12-25/417")
	fmt.Println(first == again)
	// Output: true
}

// An SDK built on net/http gets keys and retries by taking idem's client.
func ExampleClient_HTTPClient() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "key present: %t", r.Header.Get("Idempotency-Key") != "")
	}))
	defer srv.Close()

	client, _ := idem.New(idem.Options{})
	var sdk *http.Client = client.HTTPClient() // hand this to the SDK
	resp, err := sdk.Post(srv.URL+"/charges", "application/json", strings.NewReader(`{"amount":1000}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), "after", calls.Load(), "attempts")
	// Output: 201 key present: true after 2 attempts
}

// A profile carries an API's conventions. Square takes the key in the
// JSON body: idem writes one in, and sends the same bytes on every
// attempt.
func ExampleProfile() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Key string `json:"idempotency_key"`
		}
		json.Unmarshal(body, &req)
		fmt.Println("key in the body:", req.Key != "", "key header:", r.Header.Get("Idempotency-Key") != "")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	sq := idem.Square()
	fmt.Println(sq.BodyKey, sq.MaxKeyLen)
	client, err := idem.New(idem.Options{Profile: sq})
	if err != nil {
		panic(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v2/payments", strings.NewReader(`{"amount_money":{"amount":100,"currency":"USD"}}`))
	if _, err := client.Do(req); err != nil {
		panic(err)
	}
	// Output:
	// idempotency_key 45
	// key in the body: true key header: false
}

// Stripe-Should-Retry: false on a 503 ends the call at once; the
// operation's outcome is unknown and it stays pending.
func ExampleErrServerSaidNoRetry() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Stripe-Should-Retry", "false")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	client, err := idem.New(idem.Options{Profile: idem.Stripe()})
	if err != nil {
		panic(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/charges", strings.NewReader(`amount=1000`))
	_, err = client.Do(req)
	var e *idem.Error
	fmt.Println(errors.Is(err, idem.ErrServerSaidNoRetry), errors.As(err, &e) && e.Attempts == 1, e.StatusCode)
	// Output: true true 503
}
