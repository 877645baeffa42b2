package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// clientRow is one way of sending the POST, with every sample it produced.
type clientRow struct {
	name   string
	floor  bool        // a floor under a client, not a client
	lat    sample      // each sequential operation's latency, all rounds
	allocs []float64   // heap allocations per operation (client and server), one per round
	tput   [][]float64 // operations per second, [in-flight index][round]
}

// clientResults is what the client half measured.
type clientResults struct {
	rows        []clientRow // in the order of clientKinds: the k* constants index it
	concs       []int       // operations in flight for tput
	backToBack  sample      // one durable bbolt commit, back to back
	groupCommit []groupCommitRow
}

// groupCommitRow compares idem's journal with bbolt's Batch at one number
// of writers: durable writes per second, one per round.
type groupCommitRow struct {
	writers     int
	idem, batch []float64
}

// The rows of clientResults, in the order clientKinds returns them.
const (
	kPlain = iota
	kRetryable
	kBare
	kJournal
	kFloor
)

func (r *clientResults) row(k int) *clientRow { return &r.rows[k] }

// journalAdded is what the journal adds to an operation (p50 with journal
// minus p50 without), and floorAdded what one durable bbolt commit adds to
// the same request (the floor row minus net/http).
func (r *clientResults) journalAdded() (added, floorAdded time.Duration) {
	return r.row(kJournal).lat.median() - r.row(kBare).lat.median(),
		r.row(kFloor).lat.median() - r.row(kPlain).lat.median()
}

func (r *clientResults) rate(k, conc int) float64 {
	for ci, c := range r.concs {
		if c == conc {
			return medianFloat(r.row(k).tput[ci])
		}
	}
	return 0
}

func benchClient(cfg config) *clientResults {
	url, stop := startEcho()
	defer stop()
	dir, err := os.MkdirTemp("", "idem-bench")
	must(err)
	defer os.RemoveAll(dir)
	kinds := clientKinds(url, dir)
	defer func() {
		for _, k := range kinds {
			if k.stop != nil {
				k.stop()
			}
		}
	}()
	res := &clientResults{concs: []int{1, 16, 64}}
	for _, k := range kinds {
		res.rows = append(res.rows, clientRow{name: k.name, floor: k.floor, tput: make([][]float64, len(res.concs))})
	}
	// Warm up connections and code paths.
	for _, k := range kinds {
		runSequential(k, 50)
	}

	// Sequential latency, kinds interleaved in short turns.
	var steps []func(int)
	for i, k := range kinds {
		steps = append(steps, func(n int) {
			l, a := runSequential(k, n)
			res.rows[i].lat = append(res.rows[i].lat, l...)
			res.rows[i].allocs = append(res.rows[i].allocs, a)
		})
	}
	interleaved(cfg.rounds, cfg.seqOps, steps...)
	for range cfg.rounds {
		res.backToBack = append(res.backToBack, boltCommitFloor(dir, cfg.seqOps/4)...)
	}

	// Throughput at 1, 16 and 64 operations in flight.
	for ci, conc := range res.concs {
		for range cfg.rounds {
			for i, k := range kinds {
				res.rows[i].tput[ci] = append(res.rows[i].tput[ci], runConcurrent(k, conc, cfg.tputDur))
			}
		}
	}

	// Group commit against bbolt's Batch.
	for _, w := range res.concs {
		g := groupCommitRow{writers: w}
		for range cfg.rounds {
			x, y := journalWrites(dir, w, cfg.tputDur)
			g.idem, g.batch = append(g.idem, x), append(g.batch, y)
		}
		res.groupCommit = append(res.groupCommit, g)
	}
	return res
}

// print writes the client tables.
func (r *clientResults) print() {
	t := &table{title: "Client: 1 KiB JSON POST to a loopback server, sequential", head: []string{"client", "p50", "p99", "allocs/op (client+server)", "p50 vs net/http"}}
	base := float64(r.row(kPlain).lat.median())
	for _, row := range r.rows {
		a := fmt.Sprintf("%.0f", medianFloat(row.allocs))
		if row.floor {
			a = ""
		}
		t.add(row.name, ms(row.lat.median()), ms(row.lat.p99()), a, ratio(float64(row.lat.median()), base))
	}
	t.add("one durable bbolt commit, back to back", ms(r.backToBack.median()), ms(r.backToBack.p99()), "", "")
	bare, retry := r.row(kBare), r.row(kRetryable)
	added, floorAdded := r.journalAdded()
	t.notes = append(t.notes,
		fmt.Sprintf("idem without journal vs go-retryablehttp: %s time, %+.0f allocations per operation.",
			ratio(float64(bare.lat.median()), float64(retry.lat.median())), medianFloat(bare.allocs)-medianFloat(retry.allocs)),
		fmt.Sprintf("The journal adds %s per operation (p50 with journal minus p50 without); one durable bbolt commit adds %s to the same request (floor minus net/http): %s of the floor. Back to back, without network gaps between them, a commit takes %s: an idle disk is slower to wake.",
			ms(added), ms(floorAdded), ratio(float64(added), float64(floorAdded)), ms(r.backToBack.median())))
	t.print()

	tp := &table{title: "Client: throughput, operations per second (median of rounds)", head: []string{"client"}}
	for _, c := range r.concs {
		tp.head = append(tp.head, fmt.Sprintf("%d in flight", c))
	}
	for _, row := range r.rows {
		cells := []string{row.name}
		for ci := range r.concs {
			cells = append(cells, fmt.Sprintf("%.0f", medianFloat(row.tput[ci])))
		}
		tp.add(cells...)
	}
	tp.notes = append(tp.notes, fmt.Sprintf("idem with journal at 64 in flight: %s of go-retryablehttp's throughput.",
		pct(r.rate(kJournal, 64)/r.rate(kRetryable, 64))))
	tp.print()

	gc := &table{title: "Journal: durable writes per second, idem group commit vs bbolt Batch", head: []string{"writers", "idem journal (Do, in-memory transport)", "bbolt Batch (one Put)", "ratio"}}
	for _, g := range r.groupCommit {
		a, b := medianFloat(g.idem), medianFloat(g.batch)
		gc.add(strconv.Itoa(g.writers), fmt.Sprintf("%.0f", a), fmt.Sprintf("%.0f", b), ratio(a, b))
	}
	gc.notes = append(gc.notes, "bbolt's Batch waits up to MaxBatchDelay (10 ms) to fill a batch; idem's committer starts a commit as soon as the previous one ends.")
	gc.print()
}
