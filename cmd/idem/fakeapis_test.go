package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// Imitations of two providers' idempotency, as their documents describe it
// (the sources the idem profiles cite), for idem check --profile and idem
// send --profile: a Square-like API that takes the key in the JSON body and
// a Stripe-like one that takes it in a header.

// fakeAPI keeps one record per key: the first request with a key runs,
// copies that arrive while it runs wait for it (squareLike) or get 409
// (stripeLike), and later ones get its answer or the API's key-reuse
// error.
type fakeAPI struct {
	// keyOf returns the request's key ("" if none) and what is compared
	// between requests with one key, or an error answer.
	keyOf func(r *http.Request, body []byte) (key string, params []byte, status int, errBody []byte)
	// maxKeyLen is the longest key taken.
	maxKeyLen int
	// tooLong, reused and missing are the API's error bodies.
	tooLong, reused, missing []byte
	// requireKey refuses a request without a key; waitInFlight makes a
	// copy wait for the first instead of getting conflict; markReplay
	// sets Idempotent-Replayed: true on a repeat.
	requireKey, waitInFlight, markReplay bool
	conflict                             []byte
	// answer writes a new execution's body.
	answer func(id string) []byte

	// down answers every request 503, as an outage would.
	down atomic.Bool

	mu       sync.Mutex
	records  map[string]*fakeRecord
	executed int
}

type fakeRecord struct {
	params [32]byte
	done   chan struct{}
	body   []byte
}

// squareLike imitates Square's CreatePayment: the key in the body's
// idempotency_key, at most maxKeyLen characters (45 for CreatePayment),
// required; a repeat gets the first answer unmarked; a key used with other
// data gets 400 IDEMPOTENCY_KEY_REUSED.
func squareLike(maxKeyLen int) *fakeAPI {
	sqErr := func(code string) []byte {
		b, _ := json.Marshal(map[string]any{"errors": []any{map[string]string{"category": "INVALID_REQUEST_ERROR", "code": code}}})
		return b
	}
	f := &fakeAPI{
		maxKeyLen: maxKeyLen, requireKey: true, waitInFlight: true,
		tooLong: sqErr("VALUE_TOO_LONG"), reused: sqErr("IDEMPOTENCY_KEY_REUSED"), missing: sqErr("MISSING_REQUIRED_PARAMETER"),
		answer: func(id string) []byte {
			b, _ := json.Marshal(map[string]any{"payment": map[string]any{"id": id, "status": "COMPLETED"}})
			return b
		},
	}
	f.keyOf = func(_ *http.Request, body []byte) (string, []byte, int, []byte) {
		var doc map[string]any
		if json.Unmarshal(body, &doc) != nil {
			return "", nil, http.StatusBadRequest, sqErr("INVALID_BODY")
		}
		k, _ := doc["idempotency_key"].(string)
		delete(doc, "idempotency_key")
		params, _ := json.Marshal(doc) // keys sorted: key order does not matter
		return k, params, 0, nil
	}
	return f
}

// stripeLike imitates Stripe: the key in the Idempotency-Key header as it
// is (a quoted key is another key), at most 255 characters, optional; a
// repeat gets the first answer with Idempotent-Replayed: true; a copy
// while the first runs gets 409; a key used with other parameters gets 400
// with error type idempotency_error.
func stripeLike() *fakeAPI {
	stErr := func(typ, msg string) []byte {
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"type": typ, "message": msg}})
		return b
	}
	return &fakeAPI{
		maxKeyLen: 255, markReplay: true,
		tooLong:  stErr("invalid_request_error", "Keys for idempotent requests can only be 255 characters long."),
		reused:   stErr("idempotency_error", "Keys for idempotent requests can only be used with the same parameters they were first used with."),
		conflict: stErr("idempotency_error", "There is currently another in-progress request using this Idempotent Key."),
		answer: func(id string) []byte {
			b, _ := json.Marshal(map[string]any{"id": id, "object": "payment_intent", "status": "succeeded"})
			return b
		},
		keyOf: func(r *http.Request, body []byte) (string, []byte, int, []byte) {
			return r.Header.Get("Idempotency-Key"), body, 0, nil
		},
	}
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.executed
}

func (f *fakeAPI) write(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if f.down.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	key, params, status, errBody := f.keyOf(r, body)
	switch {
	case status != 0:
		f.write(w, status, errBody)
		return
	case key == "" && f.requireKey:
		f.write(w, http.StatusBadRequest, f.missing)
		return
	case len(key) > f.maxKeyLen:
		f.write(w, http.StatusBadRequest, f.tooLong)
		return
	case key == "":
		f.write(w, http.StatusOK, f.execute())
		return
	}
	sum := sha256.Sum256(params)
	f.mu.Lock()
	if f.records == nil {
		f.records = map[string]*fakeRecord{}
	}
	rec, seen := f.records[key]
	if !seen {
		rec = &fakeRecord{params: sum, done: make(chan struct{})}
		f.records[key] = rec
	}
	f.mu.Unlock()
	if !seen {
		rec.body = f.execute()
		close(rec.done)
		f.write(w, http.StatusOK, rec.body)
		return
	}
	if rec.params != sum {
		f.write(w, http.StatusBadRequest, f.reused)
		return
	}
	select {
	case <-rec.done:
	default:
		if !f.waitInFlight {
			f.write(w, http.StatusConflict, f.conflict)
			return
		}
		select {
		case <-rec.done:
		case <-r.Context().Done():
			return
		}
	}
	if f.markReplay {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	f.write(w, http.StatusOK, rec.body)
}

// execute runs the request: a new payment with a new ID.
func (f *fakeAPI) execute() []byte {
	var b [8]byte
	rand.Read(b[:])
	f.mu.Lock()
	f.executed++
	f.mu.Unlock()
	return f.answer(fmt.Sprintf("pay_%s", hex.EncodeToString(b[:])))
}
