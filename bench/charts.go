package main

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// draw writes the charts of what this run measured to dir, and returns
// their paths. Every number on them comes from the report.
func (r *report) draw(dir string) ([]string, error) {
	type chart struct {
		file string
		make func() (*figure, error)
	}
	var charts []chart
	if r.client != nil {
		charts = append(charts, chart{"client-latency.svg", r.clientLatency}, chart{"client-throughput.svg", r.clientThroughput})
	}
	if r.server != nil && len(r.server.http) > 0 {
		charts = append(charts, chart{"server-latency.svg", r.serverLatency})
	}
	if r.server != nil && len(r.server.pileUp) > 0 {
		charts = append(charts, chart{"pileup.svg", r.pileUpChart})
	}
	var files []string
	for _, c := range charts {
		f, err := c.make()
		if err != nil {
			return files, fmt.Errorf("%s: %w", c.file, err)
		}
		path := filepath.Join(dir, c.file)
		if err := f.save(path); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, nil
}

// footer is the last caption line of every chart: the machine, the date
// and the command.
func (r *report) footer() string {
	return fmt.Sprintf("%s. %s, %d rounds.", r.machine.caption(), r.command, r.cfg.rounds)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// clientNames are the clients' names on the charts, shorter than the
// tables' where the tables explain in words.
var clientNames = map[int]string{
	kPlain:     "net/http",
	kRetryable: "go-retryablehttp",
	kBare:      "idem, no journal",
	kJournal:   "idem, journal",
	kFloor:     "floor: durable bbolt commit + net/http",
}

func (r *report) clientLatency() (*figure, error) {
	c := r.client
	var cats []string
	clients := hbarSeries{name: "client, p50", color: blue}
	floors := hbarSeries{name: "floor, p50", color: grey}
	add := func(name string, s sample, floor bool) {
		cats = append(cats, name)
		p50, p99 := millis(s.median()), millis(s.p99())
		on, off := &clients, &floors
		if floor {
			on, off = &floors, &clients
		}
		on.values, on.whisk = append(on.values, p50), append(on.whisk, p99)
		off.values, off.whisk = append(off.values, math.NaN()), append(off.whisk, math.NaN())
	}
	for k, row := range c.rows {
		add(clientNames[k], row.lat, row.floor)
	}
	add("floor: durable bbolt commit alone", c.backToBack, true)
	p := newPlot("Client: one 1 KiB JSON POST over loopback, sequential", "latency per operation (ms)", "")
	legend, err := hbars(p, cats, []hbarSeries{clients, floors}, 3, latencyLabel)
	if err != nil {
		return nil, err
	}
	return &figure{plot: p, height: hbarHeight(len(cats), 1), legend: legend, caption: []string{
		fmt.Sprintf("Bars: p50; whiskers: p99, over %d operations per client, clients interleaved round by round. The floor under a journal is net/http after one durable bbolt commit of a journal-sized record; alone, that commit back to back.", len(c.row(kPlain).lat)),
		r.footer(),
	}}, nil
}

func (r *report) clientThroughput() (*figure, error) {
	c := r.client
	var cats []string
	for k := range c.rows {
		cats = append(cats, clientNames[k])
	}
	var series []hbarSeries
	for ci, conc := range c.concs {
		s := hbarSeries{name: fmt.Sprintf("%d in flight", conc), color: palette[ci]}
		for _, row := range c.rows {
			s.values = append(s.values, medianFloat(row.tput[ci]))
		}
		series = append(series, s)
	}
	p := newPlot("Client: throughput, 1 KiB JSON POST over loopback", "operations per second", "")
	legend, err := hbars(p, cats, series, 0, func(v, _ float64) string { return fmt.Sprintf("%.0f", v) })
	if err != nil {
		return nil, err
	}
	return &figure{plot: p, height: hbarHeight(len(cats), len(series)), legend: legend, caption: []string{
		fmt.Sprintf("Median of %d rounds of %s each, clients interleaved. Client and server share the machine's CPUs.", r.cfg.rounds, dur(r.cfg.tputDur)),
		r.footer(),
	}}, nil
}

func (r *report) serverLatency() (*figure, error) {
	s := r.server
	var cats []string
	newKey := hbarSeries{name: "new key (bare: no key), p50", color: blue}
	replay := hbarSeries{name: "replay, p50", color: orange}
	floor := hbarSeries{name: "PostgreSQL floor, p50", color: grey}
	all := []*hbarSeries{&newKey, &replay, &floor}
	add := func(name string, vals map[*hbarSeries]sample) {
		cats = append(cats, name)
		for _, sr := range all {
			v, ok := vals[sr]
			if !ok {
				sr.values, sr.whisk = append(sr.values, math.NaN()), append(sr.whisk, math.NaN())
				continue
			}
			sr.values, sr.whisk = append(sr.values, millis(v.median())), append(sr.whisk, millis(v.p99()))
		}
	}
	for _, row := range s.http {
		vals := map[*hbarSeries]sample{&newKey: row.newKey}
		if row.store != "" {
			vals[&replay] = row.replay
		}
		add(row.name, vals)
	}
	if f := s.floors; f != nil {
		add("SELECT 1 (pgx, no HTTP)", map[*hbarSeries]sample{&floor: f.select1})
		add("durable one-row INSERT (pgx, no HTTP)", map[*hbarSeries]sample{&floor: f.insert})
	}
	p := newPlot("Server: POST /charges over loopback HTTP, new key and replay, sequential", "latency per request (ms)", "")
	legend, err := hbars(p, cats, []hbarSeries{newKey, replay, floor}, 3, latencyLabel)
	if err != nil {
		return nil, err
	}
	caption := []string{
		fmt.Sprintf("Bars: p50; whiskers: p99, over %d requests per bar. The bare handlers take no key; the PostgreSQL floors are measured on one pgx connection in the same rounds, synchronous_commit on.", r.cfg.rounds*r.cfg.seqOps),
	}
	if bm, f := s.httpRow(bareMemory), s.floors; bm != nil && f != nil {
		bound := replayBound(bm.newKey.median(), f.select1.median())
		line, err := plotter.NewLine(plotter.XYs{{X: millis(bound), Y: -0.5}, {X: millis(bound), Y: float64(len(cats)) - 0.5}})
		if err != nil {
			return nil, err
		}
		line.Color, line.Width, line.Dashes = vermilion, 1.5, []vg.Length{5, 3}
		p.Add(line)
		legend = append(legend, legendEntry{"replay target", line})
		caption = append(caption, fmt.Sprintf("Replay target (dashed): bare in-memory handler p50 + 1.5 × SELECT 1 p50 = %s + 1.5 × %s = %s.",
			ms(bm.newKey.median()), ms(f.select1.median()), ms(bound)))
	}
	caption = append(caption, r.footer())
	return &figure{plot: p, height: hbarHeight(len(cats), 2), legend: legend, caption: caption}, nil
}

// pileUpChart draws, per store, how many of the 100 requests had been
// answered at each moment since the first was sent.
func (r *report) pileUpChart() (*figure, error) {
	p := newPlot(fmt.Sprintf("Server: pile-up, one request to a %s handler and %d duplicates", dur(pileHandler), pileDuplicates),
		"time since the first request was sent (ms)", "requests answered")
	grid := plotter.NewGrid()
	p.Add(grid)
	var legend []legendEntry
	xmax := 0.0
	n := 1 + pileDuplicates
	for i, row := range r.server.pileUp {
		rank := row.byRank()
		xys := plotter.XYs{{X: 0, Y: 0}}
		for k, t := range rank {
			xys = append(xys, plotter.XY{X: millis(t), Y: float64(k + 1)})
			xmax = max(xmax, millis(t))
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		line.StepStyle = plotter.PostStep
		line.Color, line.Width = palette[i%len(palette)], 2
		line.Dashes = [][]vg.Length{nil, {6, 3}, {2, 2}, {8, 3, 2, 3}}[i%4]
		p.Add(line)
		first := row.first().median()
		dot, err := plotter.NewScatter(plotter.XYs{{X: millis(first), Y: 1}})
		if err != nil {
			return nil, err
		}
		dot.GlyphStyle = draw.GlyphStyle{Color: palette[i%len(palette)], Radius: 4, Shape: draw.CircleGlyph{}}
		p.Add(dot)
		legend = append(legend, legendEntry{fmt.Sprintf("%s: all answered at %s (median)", row.store, ms(row.all().median())), line})
	}
	for _, ref := range []struct {
		at   time.Duration
		name string
	}{{pileHeadStart, "duplicates sent"}, {pileHandler, "handler's own time"}} {
		l, err := plotter.NewLine(plotter.XYs{{X: millis(ref.at), Y: 0}, {X: millis(ref.at), Y: float64(n)}})
		if err != nil {
			return nil, err
		}
		l.Color, l.Width, l.Dashes = grey, 1, []vg.Length{3, 3}
		p.Add(l)
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: millis(ref.at), Y: float64(n) * 0.55}}, Labels: []string{ref.name}})
		if err != nil {
			return nil, err
		}
		lab.TextStyle[0] = textStyle(9)
		lab.TextStyle[0].XAlign = draw.XRight
		lab.TextStyle[0].Rotation = math.Pi / 2
		lab.Offset = vg.Point{X: -3}
		p.Add(lab)
	}
	dotLegend, err := plotter.NewScatter(plotter.XYs{{}})
	if err != nil {
		return nil, err
	}
	dotLegend.GlyphStyle = draw.GlyphStyle{Color: ink, Radius: 4, Shape: draw.CircleGlyph{}}
	legend = append(legend, legendEntry{"the first request answered", dotLegend})
	p.X.Min, p.X.Max = 0, math.Ceil(xmax/10)*10+2
	p.X.Tick.Marker = plot.ConstantTicks(ticks(0, int(p.X.Max), 10))
	p.Y.Min, p.Y.Max = 0, float64(n)+2
	p.Y.Tick.Marker = plot.ConstantTicks(ticks(0, n, 20))
	caption := []string{fmt.Sprintf("Each line: for k = 1 to %d, when the k-th answer came, the median over %d rounds. The duplicates are sent %s after the first request, wait for its outcome and replay it.", n, len(r.server.pileUp[0].answered), dur(pileHeadStart))}
	for _, row := range r.server.pileUp {
		if len(row.others) > 0 {
			caption = append(caption, fmt.Sprintf("%s: answers other than 201 over all rounds: %s.", row.store, statusCounts(row.others)))
		}
	}
	return &figure{plot: p, height: 300, legend: legend, caption: append(caption, r.footer())}, nil
}

func ticks(from, to, step int) []plot.Tick {
	var t []plot.Tick
	for v := from; v <= to; v += step {
		t = append(t, plot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
	}
	return t
}
