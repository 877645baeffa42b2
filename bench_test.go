// This file holds the client's benchmarks: a POST through idem and
// through go-retryablehttp, and the journal's commits.

package idem

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-retryablehttp"
	bolt "go.etcd.io/bbolt"
)

var benchBody = []byte(`{"amount":1000,"currency":"usd","description":"` + strings.Repeat("x", 975) + `"}`)

func benchServer(b *testing.B) string { return benchServerT(b) }

func benchServerT(b testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1"}`)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkPost compares one 1 KiB POST through go-retryablehttp and
// through idem, against the same loopback server; run with -benchmem and
// compare allocs/op side by side.
func BenchmarkPost(b *testing.B) {
	url := benchServer(b)
	b.Run("retryablehttp", func(b *testing.B) {
		rc := &retryablehttp.Client{HTTPClient: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, RetryMax: 4,
			CheckRetry: retryablehttp.DefaultRetryPolicy, Backoff: retryablehttp.DefaultBackoff}
		b.ReportAllocs()
		for b.Loop() {
			req, _ := retryablehttp.NewRequest(http.MethodPost, url, benchBody)
			req.Header.Set("Content-Type", "application/json")
			resp, err := rc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("idem", func(b *testing.B) {
		c, _ := New(Options{})
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchBody))
			req.Header.Set("Content-Type", "application/json")
			if _, err := c.Do(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("idem-journal", func(b *testing.B) {
		j, err := OpenJournal(filepath.Join(b.TempDir(), "j"), JournalOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close()
		c, _ := New(Options{Journal: j})
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchBody))
			req.Header.Set("Content-Type", "application/json")
			if _, err := c.Do(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJournalCommit compares idem's group commit with bbolt's own
// Batch for concurrent durable writes.
func BenchmarkJournalCommit(b *testing.B) {
	for _, writers := range []int{1, 16, 64} {
		b.Run("idem/writers="+strconv.Itoa(writers), func(b *testing.B) {
			j, err := OpenJournal(filepath.Join(b.TempDir(), "j"), JournalOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			b.SetParallelism(writers)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op := &Operation{Key: NewKey(), Method: "POST", URL: "http://x/", Body: benchBody, State: Pending}
					if _, err := j.begin(op); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run("bbolt-batch/writers="+strconv.Itoa(writers), func(b *testing.B) {
			db, err := bolt.Open(filepath.Join(b.TempDir(), "b"), 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err })
			b.SetParallelism(writers)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := []byte(NewKey())
					if err := db.Batch(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put(k, benchBody) }); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkBoltCommit is the floor under the journal: one durable bbolt
// commit of a journal-sized record.
func BenchmarkBoltCommit(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "b"), 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err })
	v := make([]byte, len(benchBody)+200)
	for b.Loop() {
		k := []byte(NewKey())
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put(k, v) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJournalBegin is the journal's durable write alone, with the
// previous operation's lazily written outcome riding along, as in Do.
func BenchmarkJournalBegin(b *testing.B) {
	j, err := OpenJournal(filepath.Join(b.TempDir(), "j"), JournalOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	for b.Loop() {
		op := &Operation{Key: NewKey(), Method: "POST", URL: "http://x/", Body: benchBody, State: Pending}
		if _, err := j.begin(op); err != nil {
			b.Fatal(err)
		}
		op.State, op.Result = Completed, &Result{StatusCode: 201, Body: []byte(`{"id":"ch_1"}`)}
		if err := j.update(op); err != nil {
			b.Fatal(err)
		}
	}
}
