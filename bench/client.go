package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	bolt "go.etcd.io/bbolt"

	"github.com/idemhq/idem"
)

// payload is the 1 KiB JSON body every client posts.
var payload = func() []byte {
	b := []byte(`{"amount":1000,"currency":"usd","description":"`)
	b = append(b, strings.Repeat("x", 1024-len(b)-2)...)
	return append(b, `"}`...)
}()

// clientKind is one way of sending the POST.
type clientKind struct {
	name  string
	floor bool // a floor under the clients, not a client
	do    func(ctx context.Context) error
	stop  func()
}

func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 128
	t.MaxIdleConns = 256
	return t
}

// startEcho serves 201 with a small JSON body on loopback.
func startEcho() (url string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1","amount":1000}`)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/charges", func() { srv.Close() }
}

// clientKinds returns the clients compared, in the order of the k*
// constants.
func clientKinds(url, dir string) []clientKind {
	plain := &http.Client{Transport: newTransport()}
	rc := &retryablehttp.Client{
		HTTPClient:   &http.Client{Transport: newTransport()},
		RetryMax:     4,
		RetryWaitMin: 200 * time.Millisecond,
		RetryWaitMax: 10 * time.Second,
		CheckRetry:   retryablehttp.DefaultRetryPolicy,
		Backoff:      retryablehttp.DefaultBackoff,
	}
	bare, err := idem.New(idem.Options{Transport: newTransport()})
	must(err)
	j, err := idem.OpenJournal(filepath.Join(dir, "bench.journal"), idem.JournalOptions{})
	must(err)
	journaled, err := idem.New(idem.Options{Transport: newTransport(), Journal: j})
	must(err)
	plainDo := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		resp, err := plain.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	db, err := bolt.Open(filepath.Join(dir, "floor.db"), 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	must(err)
	must(db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("b")); return err }))
	var seq atomic.Int64
	record := make([]byte, len(payload)+200)
	return []clientKind{
		{name: "net/http", do: plainDo},
		{name: "go-retryablehttp", do: func(ctx context.Context) error {
			req, _ := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, url, payload)
			req.Header.Set("Content-Type", "application/json")
			resp, err := rc.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		}},
		{name: "idem, no journal", do: idemDo(bare, url)},
		{name: "idem, journal", do: idemDo(journaled, url), stop: func() { j.Close() }},
		// The floor under any journal: net/http, after one durable bbolt
		// commit of a journal-sized record, in the same rhythm as idem's.
		{name: "net/http after one durable bbolt commit (floor)", floor: true, do: func(ctx context.Context) error {
			k := strconv.FormatInt(seq.Add(1), 10)
			must(db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(k), record) }))
			return plainDo(ctx)
		}, stop: func() { db.Close() }},
	}
}

func idemDo(c *idem.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
}

// runSequential sends n operations one after another and returns their
// latencies and the heap allocations per operation (client and server).
func runSequential(k clientKind, n int) (sample, float64) {
	lat := make(sample, 0, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		start := time.Now()
		must(k.do(context.Background()))
		lat = append(lat, time.Since(start))
	}
	runtime.ReadMemStats(&after)
	return lat, float64(after.Mallocs-before.Mallocs) / float64(n)
}

// runConcurrent keeps conc operations in flight for about d and returns
// operations per second.
func runConcurrent(k clientKind, conc int, d time.Duration) float64 {
	var done atomic.Int64
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				must(k.do(context.Background()))
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}

// boltCommitFloor measures one durable bbolt commit of a journal-sized
// record: the physical floor under any journal on this disk.
func boltCommitFloor(dir string, n int) sample {
	db, err := bolt.Open(filepath.Join(dir, "back-to-back.db"), 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	must(err)
	defer db.Close()
	must(db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("b")); return err }))
	v := make([]byte, len(payload)+200)
	lat := make(sample, 0, n)
	for i := range n {
		start := time.Now()
		must(db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(strconv.Itoa(i)), v) }))
		lat = append(lat, time.Since(start))
	}
	return lat
}

// memTransport answers 201 in memory, so the journal is all that is timed.
type memTransport struct{}

func (memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{StatusCode: 201, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
}

// journalWrites measures durable writes per second with w writers: idem's
// journal (through Do, on an in-memory transport) against bbolt's Batch.
func journalWrites(dir string, writers int, d time.Duration) (idemRate, batchRate float64) {
	sub, err := os.MkdirTemp(dir, "gc")
	must(err)
	j, err := idem.OpenJournal(filepath.Join(sub, "j"), idem.JournalOptions{})
	must(err)
	c, err := idem.New(idem.Options{Journal: j, Transport: memTransport{}})
	must(err)
	idemRate = runConcurrent(clientKind{do: func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://mem/charges", bytes.NewReader(payload))
		_, err := c.Do(req)
		return err
	}}, writers, d)
	must(j.Close())

	db, err := bolt.Open(filepath.Join(sub, "batch.db"), 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	must(err)
	defer db.Close()
	must(db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("b")); return err }))
	v := make([]byte, len(payload)+200)
	var seq atomic.Int64
	batchRate = runConcurrent(clientKind{do: func(context.Context) error {
		k := strconv.FormatInt(seq.Add(1), 10)
		return db.Batch(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(k), v) })
	}}, writers, d)
	return idemRate, batchRate
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
