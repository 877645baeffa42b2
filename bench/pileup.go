package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// The pile-up: one request to a slow handler, then duplicates while it runs.
const (
	pileHandler    = 50 * time.Millisecond
	pileDuplicates = 99
	pileHeadStart  = 5 * time.Millisecond // the first is running when the duplicates are sent
)

// pileUpRow is one store's pile-up.
type pileUpRow struct {
	store string
	// answered holds, for each round, when each request was answered,
	// measured from the moment the first was sent; [0] is the first
	// request, the duplicates follow.
	answered [][]time.Duration
	// others counts answers other than 201, by status: a duplicate
	// answered 409 (still running after Options.Wait) or 503 (refused under
	// load) was answered, but not with the outcome.
	others   map[int]int
	alone    sample // the first request of a round sent with no duplicates
	takeover string
}

// all is when the last of each round's requests was answered.
func (r *pileUpRow) all() sample {
	var s sample
	for _, a := range r.answered {
		s = append(s, slices.Max(a))
	}
	return s
}

// first is when each round's first request was answered.
func (r *pileUpRow) first() sample {
	var s sample
	for _, a := range r.answered {
		s = append(s, a[0])
	}
	return s
}

// slowed is how much the duplicates slowed the first request (p50 with
// them minus p50 alone).
func (r *pileUpRow) slowed() time.Duration { return r.first().median() - r.alone.median() }

// byRank is the median over rounds of the k-th answer: [k] is when k+1
// requests had been answered.
func (r *pileUpRow) byRank() []time.Duration {
	if len(r.answered) == 0 {
		return nil
	}
	sorted := make([][]time.Duration, len(r.answered))
	for i, a := range r.answered {
		sorted[i] = slices.Sorted(slices.Values(a))
	}
	out := make([]time.Duration, len(sorted[0]))
	for k := range out {
		var s sample
		for _, a := range sorted {
			s = append(s, a[k])
		}
		out[k] = s.median()
	}
	return out
}

// pileUp sends one request to a 50 ms handler, then 99 duplicates while it
// runs, on every store, and records when each was answered. It also checks
// that a crashed worker's key is still taken over.
func pileUp(cfg config, e env) []pileUpRow {
	var rows []pileUpRow
	for _, k := range e.storeKinds() {
		if k.noDelay {
			continue
		}
		c := k.config(charges.Config{Delay: pileHandler, Wait: 2 * time.Second}, tableName("pileup"))
		svc, err := charges.New(context.Background(), c)
		must(err)
		url, stop := serve(svc.Handler())
		hc := newHTTPClient()
		row := pileUpRow{store: k.name, takeover: "see the server tests", others: map[int]int{}}
		for round := range cfg.rounds*4 + 1 {
			// The first round only warms up: it opens the connections a
			// hundred concurrent requests need.
			warm := round == 0
			d, _ := postCharge(hc, url, newKey())
			answered, statuses := pileRound(hc, url)
			if !warm {
				row.alone = append(row.alone, d)
				row.answered = append(row.answered, answered)
				for _, st := range statuses {
					if st != http.StatusCreated {
						row.others[st]++
					}
				}
			}
		}
		if k.takeover != nil {
			row.takeover = k.takeover(c, url)
		}
		rows = append(rows, row)
		stop()
		e.cleanUp(c)
	}
	return rows
}

// pileRound sends one request with a fresh key, then the duplicates, and
// returns when each was answered since the first was sent, and how.
func pileRound(hc *http.Client, url string) ([]time.Duration, []int) {
	key := newKey()
	answered := make([]time.Duration, 1+pileDuplicates)
	statuses := make([]int, 1+pileDuplicates)
	start := time.Now()
	var wg sync.WaitGroup
	send := func(i int) {
		defer wg.Done()
		_, statuses[i], _ = sendCharge(hc, url, "bench", key)
		answered[i] = time.Since(start)
	}
	wg.Add(1)
	go send(0)
	time.Sleep(pileHeadStart)
	for i := range pileDuplicates {
		wg.Add(1)
		go send(1 + i)
	}
	wg.Wait()
	return answered, statuses
}

// pgTakeover plays a worker that claimed a key and crashed: it claims the
// key as the middleware does (pgstore.Store.ClaimWork: a lock held by the
// work's transaction), then its connection is killed, as a crashed
// process's would be. It reports how long after the kill a retry got the
// key.
func pgTakeover(cfg charges.Config, url string) string {
	ctx := context.Background()
	st, err := pgstore.New(cfg.Pool, pgstore.Options{Table: cfg.Table + "_keys", Transactional: true})
	must(err)
	defer st.Close()
	key := newKey()
	c, wctx, work, err := st.ClaimWork(ctx, server.Key{Scope: "bench", Key: key}, chargeFingerprint(url))
	must(err)
	if !c.Acquired {
		return "claim failed"
	}
	defer work.Rollback(ctx) // the connection is gone: only frees the work
	tx, ok := pgstore.Tx(wctx)
	if !ok {
		return "no transaction"
	}
	var pid uint32
	must(tx.QueryRow(wctx, "SELECT pg_backend_pid()").Scan(&pid))
	var killed bool
	must(cfg.Pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&killed))
	if !killed {
		return "the connection could not be killed"
	}
	try, after, ok := retryUntilCreated(url, key, 5*time.Second)
	if !ok {
		return "NO: the key stayed locked"
	}
	return fmt.Sprintf("yes: retry %d ran, answered %s after the kill (handler %s)", try, ms(after), dur(cfg.Delay))
}

// chargeFingerprint is the fingerprint the middleware computes for the
// bench's charge to url.
func chargeFingerprint(url string) string {
	req := httptest.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(chargeBody)))
	req.Header.Set("Content-Type", "application/json")
	return server.Fingerprint(req, []byte(chargeBody))
}

// retryUntilCreated sends the bench's charge with key to url every 20 ms
// until it is answered 201 or limit has passed, and returns which try it
// was, how long after the first, and whether one was.
func retryUntilCreated(url, key string, limit time.Duration) (int, time.Duration, bool) {
	hc := newHTTPClient()
	start := time.Now()
	for try := 1; time.Since(start) < limit; try++ {
		if _, status, _ := sendCharge(hc, url, "bench", key); status == http.StatusCreated {
			return try, time.Since(start), true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, 0, false
}

func printPileUp(rows []pileUpRow) {
	if len(rows) == 0 {
		return
	}
	t := &table{title: "Server: pile-up, one request to a 50 ms handler then 99 duplicates while it runs", head: []string{"store", "all 100 answered p50", "p99", "first request p50 with duplicates", "first request p50 alone", "first slowed by", "answers other than 201", "crashed-worker takeover"}}
	for _, r := range rows {
		all := r.all()
		others := "none"
		if len(r.others) > 0 {
			others = statusCounts(r.others)
		}
		t.add(r.store, ms(all.median()), ms(all.p99()), ms(r.first().median()), ms(r.alone.median()), ms(r.slowed()), others, r.takeover)
	}
	t.notes = append(t.notes, "Duplicates wait (Options.Wait) for the first request's outcome and replay it; duplicates in the same process wake as soon as it is stored.")
	t.print()
}
