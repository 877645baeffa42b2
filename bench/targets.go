package main

import (
	"fmt"
	"time"
)

// The targets BENCHMARKS.md holds the library to, as ratios within one run.
const (
	targetJournal        = 1.3  // journal cost ≤ 1.3× one durable bbolt commit
	targetJournaled64    = 0.40 // journaled, 64 in flight ≥ 40% of go-retryablehttp
	targetBareTime       = 1.05 // idem without journal: p50 within 5% of go-retryablehttp
	targetBareAllocs     = 15   // and at most 15 more allocations
	targetMemTime        = 2 * time.Microsecond
	targetMemAllocs      = 15
	targetPGNewKey       = 1.5  // pgstore new key p50 ≤ 1.5× the bare PostgreSQL handler's
	targetPGFloor        = 1.05 // pgstore new key p50 ≤ 1.05× its three-round-trip floor by hand
	targetPGThroughput   = 0.60
	targetReplayTrips    = 1.5 // replay p50 ≤ bare in-memory p50 + 1.5 × SELECT 1 p50
	targetReplayFloor    = 1.1 // replay p50 ≤ 1.1× its floor: 1 autocommit SELECT + the bare in-memory handler
	targetPileAll        = 60 * time.Millisecond
	targetPileFirstSlows = time.Millisecond
)

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}

// printTargets writes one row per target, each with the floor or baseline
// it is measured against, from this run alone. A half that did not run
// leaves its rows out and says so.
func printTargets(c *clientResults, s *serverResults) {
	t := &table{title: "Targets, this run", head: []string{"target", "measured", "floor or baseline, same run", "verdict"}}
	if c != nil {
		added, floorAdded := c.journalAdded()
		x := float64(added) / float64(floorAdded)
		t.add(fmt.Sprintf("journal adds ≤ %.1f× one durable bbolt commit, sequential", targetJournal),
			fmt.Sprintf("%s (adds %s)", ratio(float64(added), float64(floorAdded)), ms(added)),
			fmt.Sprintf("one durable bbolt commit adds %s to the same request", ms(floorAdded)), verdict(x <= targetJournal))

		j, r := c.rate(kJournal, 64), c.rate(kRetryable, 64)
		t.add(fmt.Sprintf("journaled, 64 in flight: ≥ %.0f%% of go-retryablehttp's throughput", 100*targetJournaled64),
			fmt.Sprintf("%s (%.0f ops/s)", pct(j/r), j),
			fmt.Sprintf("go-retryablehttp %.0f ops/s; floor (durable bbolt commit + net/http) %.0f ops/s", r, c.rate(kFloor, 64)),
			verdict(j/r >= targetJournaled64))

		bare, retry := c.row(kBare), c.row(kRetryable)
		tx := float64(bare.lat.median()) / float64(retry.lat.median())
		da := medianFloat(bare.allocs) - medianFloat(retry.allocs)
		t.add(fmt.Sprintf("idem without journal: p50 ≤ %.2f× go-retryablehttp, ≤ %d more allocations", targetBareTime, targetBareAllocs),
			fmt.Sprintf("%s (%s), %+.0f allocations", ratio(float64(bare.lat.median()), float64(retry.lat.median())), ms(bare.lat.median()), da),
			fmt.Sprintf("go-retryablehttp %s, %.0f allocations", ms(retry.lat.median()), medianFloat(retry.allocs)),
			verdict(tx <= targetBareTime && da <= targetBareAllocs))
	} else {
		t.add("client targets", "not measured (-only)", "", "")
	}
	if s == nil {
		t.add("server targets", "not measured (-only)", "", "")
		t.print()
		return
	}
	if p := s.inProcess; p != nil {
		d, a := p.added()
		t.add(fmt.Sprintf("memstore: a first execution adds ≤ %s and ≤ %d allocations over the bare handler", us(targetMemTime), targetMemAllocs),
			fmt.Sprintf("%s, %+.0f allocations", us(d), a),
			fmt.Sprintf("bare handler in process %s, %.0f allocations", us(time.Duration(medianFloat(p.bare))), medianFloat(p.bareA)),
			verdict(d <= targetMemTime && a <= targetMemAllocs))
	}
	pg, bpg := s.storeRow("pgstore (transactional)")
	switch {
	case pg == nil || bpg == nil || s.floors == nil:
		t.add("pgstore targets", "not measured in this run (no PostgreSQL, or -only)", "", "")
	default:
		f := s.floors
		x := float64(pg.newKey.median()) / float64(bpg.newKey.median())
		t.add(fmt.Sprintf("pgstore new key: p50 ≤ %.1f× the bare PostgreSQL handler's", targetPGNewKey),
			fmt.Sprintf("%s (%s)", ratio(float64(pg.newKey.median()), float64(bpg.newKey.median())), ms(pg.newKey.median())),
			fmt.Sprintf("bare PostgreSQL handler %s; durable INSERT %s; SELECT 1 %s; floors by hand: %s", ms(bpg.newKey.median()), ms(f.insert.median()), ms(f.select1.median()), floorRatios(s, bpg)),
			verdict(x <= targetPGNewKey))
		if f3, f1 := s.httpRow(floorThree), s.httpRow(floorPipelined); f3 != nil && f1 != nil {
			x3 := float64(pg.newKey.median()) / float64(f3.newKey.median())
			t.add(fmt.Sprintf("pgstore new key: p50 ≤ %.2f× its floor, the same 3 round trips by hand", targetPGFloor),
				fmt.Sprintf("%s (%s)", ratio(float64(pg.newKey.median()), float64(f3.newKey.median())), ms(pg.newKey.median())),
				fmt.Sprintf("3 round trips by hand %s (%s bare); 1 pipelined transaction by hand %s (%s bare; pgstore is %s of it)",
					ms(f3.newKey.median()), ratio(float64(f3.newKey.median()), float64(bpg.newKey.median())),
					ms(f1.newKey.median()), ratio(float64(f1.newKey.median()), float64(bpg.newKey.median())),
					ratio(float64(pg.newKey.median()), float64(f1.newKey.median()))),
				verdict(x3 <= targetPGFloor))
			t.add(fmt.Sprintf("floors at 16 clients: ≥ %.0f%% of the bare PostgreSQL handler's throughput (for reference)", 100*targetPGThroughput),
				fmt.Sprintf("3 round trips %s; 1 pipelined %s", pct(medianFloat(f3.tput)/medianFloat(bpg.tput)), pct(medianFloat(f1.tput)/medianFloat(bpg.tput))),
				fmt.Sprintf("pgstore %s", pct(medianFloat(pg.tput)/medianFloat(bpg.tput))), "")
		}
		tp := medianFloat(pg.tput) / medianFloat(bpg.tput)
		t.add(fmt.Sprintf("pgstore at 16 clients: ≥ %.0f%% of the bare PostgreSQL handler's throughput", 100*targetPGThroughput),
			fmt.Sprintf("%s (%.0f req/s)", pct(tp), medianFloat(pg.tput)),
			fmt.Sprintf("bare PostgreSQL handler %.0f req/s", medianFloat(bpg.tput)),
			verdict(tp >= targetPGThroughput))
		if bm := s.httpRow(bareMemory); bm != nil {
			bound := replayBound(bm.newKey.median(), f.select1.median())
			t.add(fmt.Sprintf("pgstore replay over HTTP: p50 ≤ bare in-memory handler p50 + %.1f × SELECT 1 p50", targetReplayTrips),
				ms(pg.replay.median()),
				fmt.Sprintf("bound %s = %s + %.1f × %s", ms(bound), ms(bm.newKey.median()), targetReplayTrips, ms(f.select1.median())),
				verdict(pg.replay.median() <= bound))
		}
		if rf := s.replayFloor; len(rf) > 0 {
			x := float64(pg.replay.median()) / float64(rf.median())
			t.add(fmt.Sprintf("pgstore replay over HTTP: p50 ≤ %.1f× its floor, one autocommit SELECT of the record + the bare in-memory handler by hand", targetReplayFloor),
				fmt.Sprintf("%s (%s)", ratio(float64(pg.replay.median()), float64(rf.median())), ms(pg.replay.median())),
				fmt.Sprintf("floor %s, same HTTP and pool", ms(rf.median())),
				verdict(x <= targetReplayFloor))
		}
	}
	if pp, bpg := s.storeRow(pgPipelined); pp != nil && bpg != nil {
		x := float64(pp.newKey.median()) / float64(bpg.newKey.median())
		t.add(fmt.Sprintf("pgstore, pipelined claim (opt-in): new key p50 ≤ %.1f× the bare PostgreSQL handler's", targetPGNewKey),
			fmt.Sprintf("%s (%s)", ratio(float64(pp.newKey.median()), float64(bpg.newKey.median())), ms(pp.newKey.median())),
			fmt.Sprintf("bare PostgreSQL handler %s", ms(bpg.newKey.median())),
			verdict(x <= targetPGNewKey))
		if f2 := s.httpRow(floorTwo); f2 != nil {
			x2 := float64(pp.newKey.median()) / float64(f2.newKey.median())
			t.add(fmt.Sprintf("pgstore, pipelined claim: new key p50 ≤ %.2f× its floor, the same 2 round trips by hand", targetPGFloor),
				fmt.Sprintf("%s (%s)", ratio(float64(pp.newKey.median()), float64(f2.newKey.median())), ms(pp.newKey.median())),
				fmt.Sprintf("2 round trips by hand %s (%s bare; %s at 16 clients)", ms(f2.newKey.median()),
					ratio(float64(f2.newKey.median()), float64(bpg.newKey.median())), pct(medianFloat(f2.tput)/medianFloat(bpg.tput))),
				verdict(x2 <= targetPGFloor))
		}
		tp := medianFloat(pp.tput) / medianFloat(bpg.tput)
		t.add(fmt.Sprintf("pgstore, pipelined claim: at 16 clients ≥ %.0f%% of the bare PostgreSQL handler's throughput", 100*targetPGThroughput),
			fmt.Sprintf("%s (%.0f req/s)", pct(tp), medianFloat(pp.tput)),
			fmt.Sprintf("bare PostgreSQL handler %.0f req/s", medianFloat(bpg.tput)),
			verdict(tp >= targetPGThroughput))
		if rf := s.replayFloor; len(rf) > 0 {
			t.add("pgstore, pipelined claim: replay over HTTP (for reference: one round trip, the claim with the charge refused, the ROLLBACK after the answer)",
				fmt.Sprintf("%s (%s of the replay floor)", ms(pp.replay.median()), ratio(float64(pp.replay.median()), float64(rf.median()))),
				fmt.Sprintf("floor %s", ms(rf.median())), "")
		}
	}
	for _, r := range s.pileUp {
		all := r.all().median()
		t.add(fmt.Sprintf("pile-up, %s: 100 answered ≤ %s median, first slowed < %s", r.store, dur(targetPileAll), dur(targetPileFirstSlows)),
			fmt.Sprintf("%s; first slowed by %s", ms(all), ms(r.slowed())),
			fmt.Sprintf("handler %s; first request alone %s", dur(pileHandler), ms(r.alone.median())),
			verdict(all <= targetPileAll && r.slowed() < targetPileFirstSlows))
	}
	t.print()
	if bm, f := s.httpRow(bareMemory), s.floors; bm != nil && f != nil {
		fmt.Printf("\nReplay target: pgstore replay over HTTP p50 ≤ bare in-memory handler p50 + 1.5 × SELECT 1 p50 = %s + 1.5 × %s = %s.\n",
			ms(bm.newKey.median()), ms(f.select1.median()), ms(replayBound(bm.newKey.median(), f.select1.median())))
	}
}

func replayBound(bareMemory, select1 time.Duration) time.Duration {
	return bareMemory + time.Duration(targetReplayTrips*float64(select1))
}

// floorRatios says what the hand-written floors cost against the bare
// PostgreSQL handler, the bound no design of their round trips can beat.
func floorRatios(s *serverResults, bare *httpRow) string {
	f3, f1 := s.httpRow(floorThree), s.httpRow(floorPipelined)
	if f3 == nil || f1 == nil {
		return "not measured"
	}
	return fmt.Sprintf("3 round trips %s, 1 pipelined %s", ratio(float64(f3.newKey.median()), float64(bare.newKey.median())),
		ratio(float64(f1.newKey.median()), float64(bare.newKey.median())))
}
