// This file holds the client's benchmarks: a POST through idem and
// through go-retryablehttp, and the journal's commits.

package idem

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// postRetryablehttp returns a POST of benchBody to url through
// go-retryablehttp, over rt (nil: a clone of http.DefaultTransport), its
// response's body read and closed.
func postRetryablehttp(url string, rt http.RoundTripper) func() error {
	if rt == nil {
		rt = http.DefaultTransport.(*http.Transport).Clone()
	}
	rc := &retryablehttp.Client{HTTPClient: &http.Client{Transport: rt}, RetryMax: 4,
		CheckRetry: retryablehttp.DefaultRetryPolicy, Backoff: retryablehttp.DefaultBackoff}
	return func() error {
		req, _ := retryablehttp.NewRequest(http.MethodPost, url, benchBody)
		req.Header.Set("Content-Type", "application/json")
		resp, err := rc.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
}

// postIdem returns a POST of benchBody to url through c.
func postIdem(url string, c *Client) func() error {
	return func() error {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchBody))
		req.Header.Set("Content-Type", "application/json")
		_, err := c.Do(req)
		return err
	}
}

// postFloor returns the least any client that makes idem's promise
// without a journal does to a POST of benchBody to url, by hand, over the
// same net/http Client machinery: it reads the request body into memory
// (to send the same bytes on every attempt) in one read of its known
// length, mints a UUIDv7 key, copies the header map to add the key
// header, sends the request through an http.Client, and reads the whole
// response body in one read of its known length, with no retry loop, no
// attempt deadline and no budget.
func postFloor(url string) func() error {
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	return func() error {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchBody))
		req.Header.Set("Content-Type", "application/json")
		body := make([]byte, req.ContentLength) // known: one exact read
		if _, err := io.ReadFull(req.Body, body); err != nil {
			return err
		}
		h := req.Header.Clone()
		h["Idempotency-Key"] = []string{NewKey()}
		sent := req.WithContext(req.Context())
		sent.Header, sent.Body = h, io.NopCloser(bytes.NewReader(body))
		resp, err := hc.Do(sent)
		if err != nil {
			return err
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, resp.ContentLength)); err != nil {
			return err
		}
		return resp.Body.Close()
	}
}

// benchJournal returns a journal in a new file, closed when b ends.
func benchJournal(b *testing.B) *Journal {
	j, err := OpenJournal(filepath.Join(b.TempDir(), "j"), JournalOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return j
}

func newBenchClient(b testing.TB, o Options) *Client {
	c, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkPost compares one 1 KiB POST through go-retryablehttp and
// through idem (alone, with every Observer hook set doing nothing, and
// with a journal), over two transports; run with -benchmem and compare
// allocs/op side by side:
//
//   - loopback: to a loopback server, what a caller sees.
//   - in-process: to loopTransport (see TestPostAllocations), without a
//     network, so that what is timed is the client's own work, with none
//     of a loopback server's and a connection's goroutines to add noise.
//     cpu-µs/op counts the garbage collector's work too.
func BenchmarkPost(b *testing.B) {
	for _, tr := range []struct {
		name      string
		url       func(*testing.B) string
		transport func() http.RoundTripper // nil: each client's default
		cpu       bool                     // report cpu-µs/op
	}{
		{name: "loopback", url: benchServer, transport: func() http.RoundTripper { return nil }},
		{name: "in-process", url: func(*testing.B) string { return "http://api.test/charges" },
			transport: func() http.RoundTripper { return loopTransport{} }, cpu: true},
	} {
		b.Run(tr.name, func(b *testing.B) {
			url := tr.url(b)
			run := func(b *testing.B, post func() error) {
				b.ReportAllocs()
				if tr.cpu {
					defer reportCPU(b, processCPU())
				}
				for b.Loop() {
					if err := post(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.Run("retryablehttp", func(b *testing.B) { run(b, postRetryablehttp(url, tr.transport())) })
			b.Run("idem", func(b *testing.B) { run(b, postIdem(url, newBenchClient(b, Options{Transport: tr.transport()}))) })
			b.Run("idem-observer", func(b *testing.B) {
				// Every hook set, doing nothing: what the calls to an
				// Observer cost.
				obs := &Observer{
					OperationStart:  func(ctx context.Context, _ OperationStartInfo) context.Context { return ctx },
					OperationEnd:    func(context.Context, OperationEndInfo) {},
					Attempt:         func(context.Context, AttemptInfo) {},
					Retry:           func(context.Context, RetryInfo) {},
					BudgetExhausted: func(context.Context, BudgetInfo) {},
				}
				run(b, postIdem(url, newBenchClient(b, Options{Observer: obs, Transport: tr.transport()})))
			})
			b.Run("idem-journal", func(b *testing.B) {
				run(b, postIdem(url, newBenchClient(b, Options{Journal: benchJournal(b), Transport: tr.transport()})))
			})
		})
	}
}

// BenchmarkPostLatency times 1 KiB POSTs to one loopback server through
// clients that take turns, each going first in one turn of every round,
// so that all are under the same load whatever else the machine is
// doing, and reports each one's median latency (<client>-p50-µs) and
// ratios of them. The clients are made and warmed once, for both
// sub-benchmarks:
//
//   - retryablehttp-idem: go-retryablehttp and idem without a journal;
//     p50-ratio is idem's over go-retryablehttp's.
//   - retryablehttp-floor-idem: the two beside a floor (see postFloor),
//     the least any client that makes idem's promise without a journal
//     does; floor-ratio is the floor's over go-retryablehttp's (what no
//     design of idem's client can go under), idem-floor-ratio idem's over
//     the floor's (what idem's own machinery costs).
func BenchmarkPostLatency(b *testing.B) {
	url := benchServer(b)
	theirs, floor, ours := postRetryablehttp(url, nil), postFloor(url), postIdem(url, newBenchClient(b, Options{}))
	for range 100 { // connections made, pools filled
		for _, post := range []func() error{theirs, floor, ours} {
			if err := post(); err != nil {
				b.Fatal(err)
			}
		}
	}
	µs := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.Run("retryablehttp-idem", func(b *testing.B) {
		p50 := inTurns(b, theirs, ours)
		b.ReportMetric(µs(p50[0]), "retryablehttp-p50-µs")
		b.ReportMetric(µs(p50[1]), "idem-p50-µs")
		b.ReportMetric(float64(p50[1])/float64(p50[0]), "p50-ratio")
	})
	b.Run("retryablehttp-floor-idem", func(b *testing.B) {
		p50 := inTurns(b, theirs, floor, ours)
		b.ReportMetric(µs(p50[0]), "retryablehttp-p50-µs")
		b.ReportMetric(µs(p50[1]), "floor-p50-µs")
		b.ReportMetric(µs(p50[2]), "idem-p50-µs")
		b.ReportMetric(float64(p50[1])/float64(p50[0]), "floor-ratio")
		b.ReportMetric(float64(p50[2])/float64(p50[1]), "idem-floor-ratio")
	})
}

// inTurns makes posts in turns until b.Loop is done, each going first in
// one turn of every len(posts), and returns each one's median latency.
func inTurns(b *testing.B, posts ...func() error) []time.Duration {
	took := make([][]time.Duration, len(posts))
	for i := 0; b.Loop(); i++ {
		for j := range posts {
			k := (i + j) % len(posts)
			start := time.Now()
			if err := posts[k](); err != nil {
				b.Fatal(err)
			}
			took[k] = append(took[k], time.Since(start))
		}
	}
	p50 := make([]time.Duration, len(posts))
	for k, d := range took {
		slices.Sort(d)
		p50[k] = d[len(d)/2]
	}
	return p50
}

// TestPostAllocations holds the client to its allocation budget: a POST
// through idem without a journal makes at most 15 allocations more than
// the same POST through go-retryablehttp (BenchmarkPost/loopback counts
// them against a loopback server, the server's included: about 14 more).
// Here the POSTs go to loopTransport, which does to a request what net/http's
// Transport does that matters to the count (it derives the request's
// context, reads the body, reports the write to the client trace) and
// nothing that depends on timing, so the counts are the same on every
// run: idem's budget over this transport is 12, the 15 less what sending
// the key header costs the server (its name and value, 2) and a margin
// of one. Each count is the least of five runs, in case a garbage
// collection empties a pool, rounded. Under the race detector sync.Pool drops
// what it is given at random, so the test is skipped there.
func TestPostAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	const budget = 12
	const url = "http://api.test/charges"
	viaRetryablehttp := postRetryablehttp(url, loopTransport{})
	viaIdem := postIdem(url, newBenchClient(t, Options{Transport: loopTransport{}}))
	perPost := func(post func() error) float64 {
		const n = 1000
		least := math.Inf(1)
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range n {
				if err := post(); err != nil {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			least = min(least, float64(after.Mallocs-before.Mallocs)/n)
		}
		return least
	}
	// Rounded: a stray allocation in the run (a pool's refill after a
	// collection) is a thousandth of one per POST.
	base, ours := math.Round(perPost(viaRetryablehttp)), math.Round(perPost(viaIdem))
	t.Logf("allocations per POST: go-retryablehttp %.0f, idem %.0f (+%.0f)", base, ours, ours-base)
	if ours-base > budget {
		t.Errorf("a POST through idem makes %.0f allocations more than through go-retryablehttp, over the budget of %d", ours-base, budget)
	}
}

// loopTransport answers every request 201 with a 13-byte body, without a
// network, doing to the request what net/http's Transport does that an
// allocation count sees: it derives the request's context, reads the
// body to its end and closes it, reports the write to the request's
// client trace, and cancels the derived context once the response's body
// is read or closed.
type loopTransport struct{}

func (loopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(r.Context())
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteRequest != nil {
		tr.WroteRequest(httptrace.WroteRequestInfo{})
	}
	body := &loopBody{cancel: cancel}
	body.Reset(`{"id":"ch_1"}`)
	return &http.Response{StatusCode: http.StatusCreated, Header: http.Header{}, ContentLength: body.Size(),
		Body: body, Request: r}, nil
}

type loopBody struct {
	strings.Reader
	cancel context.CancelCauseFunc
}

func (b *loopBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF {
		b.cancel(nil)
	}
	return n, err
}

func (b *loopBody) Close() error {
	b.cancel(nil)
	return nil
}

// BenchmarkPostParallel is the 64-in-flight row of the bench program
// as a testing.B benchmark: 64 goroutines POST 1 KiB through
// go-retryablehttp, and through idem with a journal, to one loopback
// server. The journaled run also reports what each bbolt commit cost:
// operations, pages written (pages/commit) and write system calls
// (writes/commit); bbolt adds two fdatasyncs per commit to the writes.
// committer-busy is the share of the run the committer spent inside
// commits: near 1, the single committer is what bounds the throughput.
func BenchmarkPostParallel(b *testing.B) {
	url := benchServer(b)
	transport := func() *http.Transport {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost, t.MaxIdleConns = 128, 256
		return t
	}
	const inFlight = 64
	parallel := func(b *testing.B, do func() error) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU())
		b.SetParallelism((inFlight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := do(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("retryablehttp", func(b *testing.B) { parallel(b, postRetryablehttp(url, transport())) })
	b.Run("idem", func(b *testing.B) { parallel(b, postIdem(url, newBenchClient(b, Options{Transport: transport()}))) })
	b.Run("idem-journal", func(b *testing.B) {
		j := benchJournal(b)
		post := postIdem(url, newBenchClient(b, Options{Journal: j, Transport: transport()}))
		commits, stats, busy := j.commits.Load(), j.db.Stats().TxStats, j.commitTime.Load()
		began := time.Now()
		parallel(b, post)
		reportCommits(b, j, commits, stats)
		// The committer's share of the run: near 1, it is the limit.
		b.ReportMetric(float64(j.commitTime.Load()-busy)/float64(time.Since(began)), "committer-busy")
	})
}

// processCPU returns the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per operation since start:
// client, server and journal together.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e3, "cpu-µs/op")
}

// reportCommits reports, per bbolt commit since commits and stats were
// read, the operations it carried, the pages it wrote and bbolt's write
// system calls; and per operation the pages, the pwrite calls and the
// fdatasyncs (bbolt makes two a commit: one after the data pages, one
// after the meta page; a commit that grows the file syncs once more,
// which this leaves out, one in several thousand).
func reportCommits(b *testing.B, j *Journal, commits int64, stats bolt.TxStats) {
	b.StopTimer()
	n := float64(j.commits.Load() - commits)
	if n == 0 {
		return
	}
	now := j.db.Stats().TxStats
	ops := float64(b.N)
	pages, writes := float64(now.GetPageCount()-stats.GetPageCount()), float64(now.GetWrite()-stats.GetWrite())
	b.ReportMetric(ops/n, "ops/commit")
	b.ReportMetric(pages/n, "pages/commit")
	b.ReportMetric(writes/n, "writes/commit")
	b.ReportMetric(float64(now.GetWriteTime()-stats.GetWriteTime())/n/1e3, "µs-write+sync/commit")
	b.ReportMetric(pages/ops, "pages/op")
	b.ReportMetric(writes/ops, "pwrites/op")
	b.ReportMetric(2*n/ops, "fdatasyncs/op")
}

// freelists are the two ways the journal can keep bbolt's free list: not
// on disk, rebuilt when the file opens (the default, NoFreelistSync), or
// written with every commit.
var freelists = []struct {
	name string
	sync bool
}{{"freelist=rebuilt", false}, {"freelist=synced", true}}

// BenchmarkJournalCommit compares idem's group commit with bbolt's own
// Batch for concurrent durable writes, under either free-list setting.
func BenchmarkJournalCommit(b *testing.B) {
	for _, writers := range []int{1, 16, 64} {
		for _, fl := range freelists {
			b.Run("idem/"+fl.name+"/writers="+strconv.Itoa(writers), func(b *testing.B) {
				j, err := OpenJournal(filepath.Join(b.TempDir(), "j"), JournalOptions{syncFreelist: fl.sync})
				if err != nil {
					b.Fatal(err)
				}
				defer j.Close()
				commits, stats := j.commits.Load(), j.db.Stats().TxStats
				defer reportCPU(b, processCPU())
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
				reportCommits(b, j, commits, stats)
			})
		}
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

// BenchmarkOpenJournal is the cost of opening a journal of n operations,
// most of them finished (open): checking the file and bbolt's open, which
// rebuilds the free list when it is not on disk; and of the check alone
// (checkFile), on bytes already read.
func BenchmarkOpenJournal(b *testing.B) {
	for _, n := range []int{100, 10000} {
		for _, fl := range freelists {
			b.Run(fl.name+"/ops="+strconv.Itoa(n), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "j")
				j, err := OpenJournal(path, JournalOptions{syncFreelist: fl.sync})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					op := &Operation{Key: NewKey(), Method: "POST", URL: "http://x/", Body: benchBody, State: Pending, CreatedAt: time.Now()}
					if _, err := j.begin(op); err != nil {
						b.Fatal(err)
					}
					if i%10 != 0 {
						op.State, op.Response, op.UpdatedAt = Completed, &StoredResponse{StatusCode: 201, Body: []byte(`{"id":"ch_1"}`)}, time.Now()
						if err := j.update(op); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := j.Close(); err != nil {
					b.Fatal(err)
				}
				b.Run("open", func(b *testing.B) {
					for b.Loop() {
						j, err := OpenJournal(path, JournalOptions{syncFreelist: fl.sync})
						if err != nil {
							b.Fatal(err)
						}
						j.Close()
					}
				})
				b.Run("checkFile", func(b *testing.B) {
					raw, err := os.ReadFile(path)
					if err != nil {
						b.Fatal(err)
					}
					b.SetBytes(int64(len(raw)))
					for b.Loop() {
						if err := checkFile(raw); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
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
// previous operation's lazily written outcome riding along, as in Do,
// under either free-list setting.
func BenchmarkJournalBegin(b *testing.B) {
	for _, fl := range freelists {
		b.Run(fl.name, func(b *testing.B) {
			j, err := OpenJournal(filepath.Join(b.TempDir(), "j"), JournalOptions{syncFreelist: fl.sync})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			b.ReportAllocs()
			defer reportCPU(b, processCPU())
			commits, stats := j.commits.Load(), j.db.Stats().TxStats
			for b.Loop() {
				op := &Operation{Key: NewKey(), Method: "POST", URL: "http://x/", Body: benchBody, State: Pending}
				if _, err := j.begin(op); err != nil {
					b.Fatal(err)
				}
				op.State, op.Response = Completed, &StoredResponse{StatusCode: 201, Body: []byte(`{"id":"ch_1"}`)}
				if err := j.move(op, Pending, false); err != nil {
					b.Fatal(err)
				}
			}
			reportCommits(b, j, commits, stats)
		})
	}
}

// raceEnabled reports that the tests run under the race detector
// (transport_race_test.go sets it).
var raceEnabled bool
