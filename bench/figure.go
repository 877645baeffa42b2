package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Charts are 600 pt wide: 800 CSS pixels, the width of a README.
const chartWidth = 600

// The Okabe–Ito palette: told apart with any colour vision.
var (
	blue      = color.RGBA{0x00, 0x72, 0xB2, 0xff}
	orange    = color.RGBA{0xE6, 0x9F, 0x00, 0xff}
	green     = color.RGBA{0x00, 0x9E, 0x73, 0xff}
	vermilion = color.RGBA{0xD5, 0x5E, 0x00, 0xff}
	purple    = color.RGBA{0xCC, 0x79, 0xA7, 0xff}
	sky       = color.RGBA{0x56, 0xB4, 0xE9, 0xff}
	grey      = color.RGBA{0x99, 0x99, 0x99, 0xff}
	ink       = color.RGBA{0x22, 0x22, 0x22, 0xff}
)

// series colours, in the order series are added: a store, a client or an
// in-flight count keeps its colour from chart to chart.
var palette = []color.Color{blue, orange, green, vermilion, purple, sky}

// sans is the charts' typeface: Liberation Sans, whose metrics are
// Arial's, so a viewer without it lays the text out the same.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func init() {
	plot.DefaultFont = sans
	plotter.DefaultFont = sans
}

func textStyle(size vg.Length) text.Style {
	return text.Style{Color: ink, Font: font.From(sans, size), Handler: plot.DefaultTextHandler}
}

func restyle(s *text.Style, size vg.Length) {
	s.Font, s.Color = font.From(sans, size), ink
}

// newPlot is a plot in the charts' house style.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	// Only the fonts and colours change: the styles' alignments are the
	// ones gonum gave each piece of text.
	restyle(&p.Title.TextStyle, 13)
	p.Title.Padding = 6
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		restyle(&a.Label.TextStyle, 11)
		restyle(&a.Tick.Label, 10)
		a.Label.Padding = 4
	}
	return p
}

// legendEntry is one entry of a figure's legend.
type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

// figure is a plot with its legend and caption drawn under it, outside the
// data area, so neither can cover a bar or a line.
type figure struct {
	plot    *plot.Plot
	height  vg.Length // of the plot alone
	legend  []legendEntry
	caption []string
}

const (
	legendSize  = 10
	captionSize = 9
	margin      = 8
)

// save writes the figure as SVG.
func (f *figure) save(path string) error {
	w := vg.Length(chartWidth)
	legend := f.legendRows(w - 2*margin)
	capSty := textStyle(captionSize)
	var lines []string
	for _, c := range f.caption {
		lines = append(lines, wrap(capSty, c, w-2*margin)...)
	}
	legendLine := textStyle(legendSize).Height("X") + 4
	capLine := capSty.Height("X") + 2
	legendH := vg.Length(len(legend)) * legendLine
	if legendH > 0 {
		legendH += margin
	}
	capH := vg.Length(len(lines))*capLine + margin
	c := vgsvg.New(w, f.height+legendH+capH)
	dc := draw.New(c)
	// A white ground: a dark-themed page must not show through.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	f.plot.Draw(draw.Crop(dc, margin/2, -margin, legendH+capH, 0))

	y := dc.Min.Y + capH + legendH - legendLine
	for _, row := range legend {
		f.drawLegendRow(dc, row, y)
		y -= legendLine
	}
	y = dc.Min.Y + capH - capLine - 2
	for _, l := range lines {
		dc.FillText(capSty, vg.Point{X: dc.Min.X + margin, Y: y}, l)
		y -= capLine
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, sansFallback(buf.Bytes()), 0o644)
}

const thumbW, thumbGap, entryGap = 16, 4, 14

// legendRows lays the legend out in rows that fit the width.
func (f *figure) legendRows(width vg.Length) [][]legendEntry {
	sty := textStyle(legendSize)
	var rows [][]legendEntry
	var row []legendEntry
	var used vg.Length
	for _, e := range f.legend {
		ew := thumbW + thumbGap + sty.Width(e.name) + entryGap
		if len(row) > 0 && used+ew > width {
			rows, row, used = append(rows, row), nil, 0
		}
		row, used = append(row, e), used+ew
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	return rows
}

func (f *figure) drawLegendRow(dc draw.Canvas, row []legendEntry, y vg.Length) {
	sty := textStyle(legendSize)
	h := sty.Height("X")
	x := dc.Min.X + margin
	for _, e := range row {
		thumb := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: y + 1}, Max: vg.Point{X: x + thumbW, Y: y + h - 1},
		}}
		e.thumb.Thumbnail(&thumb)
		x += thumbW + thumbGap
		dc.FillText(sty, vg.Point{X: x, Y: y}, e.name)
		x += sty.Width(e.name) + entryGap
	}
}

// wrap breaks s into lines no wider than width, at spaces.
func wrap(sty text.Style, s string, width vg.Length) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		try := word
		if line != "" {
			try = line + " " + word
		}
		if line != "" && sty.Width(try) > width {
			lines, line = append(lines, line), word
			continue
		}
		line = try
	}
	return append(lines, line)
}

var fontFamily = regexp.MustCompile(`font-family:([^;"]+);`)

// sansFallback names fallbacks after each font family in the SVG: a viewer
// without Liberation Sans takes Arial or Helvetica, which have its metrics,
// instead of its default serif face, which would spill text out of place.
func sansFallback(svg []byte) []byte {
	return fontFamily.ReplaceAll(svg, []byte(`font-family:'$1',Arial,Helvetica,sans-serif;`))
}

// hbarSeries is one series of a horizontal bar chart.
type hbarSeries struct {
	name   string
	color  color.Color
	values []float64 // per category; NaN where the series has no bar
	whisk  []float64 // where each bar's whisker ends (its p99), or nil
}

// hbars draws horizontal bars, one row of bars per category, first
// category at the top, each bar labelled by label(value, whisker end; NaN
// without a whisker). The axis ends at clip times the longest bar (no
// clipping if clip is 0): a whisker beyond it is drawn dashed to the
// axis's end, and its label says where it ends. It returns the legend
// entries for the series.
func hbars(p *plot.Plot, categories []string, series []hbarSeries, clip float64, label func(v, whisk float64) string) ([]legendEntry, error) {
	const band = 0.8 // of the space between two categories
	n := len(categories)
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	p.Add(grid)

	type bar struct {
		s          int
		v, w, y    float64 // value, whisker end (NaN: none), centre
		labelWidth vg.Length
		text       string
	}
	var bars []bar
	longest := 0.0
	for i := range categories {
		var present []int
		for s := range series {
			if !math.IsNaN(series[s].values[i]) {
				present = append(present, s)
			}
		}
		h := band / float64(max(1, len(present)))
		for j, s := range present {
			b := bar{s: s, v: series[s].values[i], w: math.NaN(), y: float64(n-1-i) + band/2 - (float64(j)+0.5)*h}
			if series[s].whisk != nil && series[s].whisk[i] > b.v {
				b.w = series[s].whisk[i]
			}
			b.text = label(b.v, b.w)
			b.labelWidth = textStyle(9).Width(b.text)
			longest = max(longest, b.v)
			bars = append(bars, b)
		}
	}
	limit := math.Inf(1)
	if clip > 0 {
		limit = clip * longest
	}
	// The data area's width, roughly: the canvas less the widest
	// category name and the axis. The axis is made long enough for every
	// label to fit right of its bar.
	var widest vg.Length
	for _, c := range categories {
		widest = max(widest, p.Y.Tick.Label.Width(c))
	}
	area := float64(vg.Length(chartWidth) - widest - 40)
	xmax, clipped := 0.0, false
	rings := make([][]plotter.XYer, len(series))
	var caps plotter.XYs
	var capErr plotter.XErrors
	labels := plotter.XYLabels{}
	half := band / float64(2*len(series)) * 0.84
	for _, b := range bars {
		hh := half
		rings[b.s] = append(rings[b.s], plotter.XYs{{X: 0, Y: b.y - hh}, {X: b.v, Y: b.y - hh}, {X: b.v, Y: b.y + hh}, {X: 0, Y: b.y + hh}})
		end := b.v
		switch {
		case math.IsNaN(b.w):
		case b.w <= limit:
			end = b.w
			caps = append(caps, plotter.XY{X: b.v, Y: b.y})
			capErr = append(capErr, struct{ Low, High float64 }{0, b.w - b.v})
		default:
			end, clipped = limit, true
			l, err := plotter.NewLine(plotter.XYs{{X: b.v, Y: b.y}, {X: limit, Y: b.y}})
			if err != nil {
				return nil, err
			}
			l.Color, l.Width, l.Dashes = ink, 1, []vg.Length{3, 2}
			p.Add(l)
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: end, Y: b.y})
		labels.Labels = append(labels.Labels, b.text)
		// end/xmax*area + 6 + width ≤ area
		xmax = max(xmax, end*area/(area-6-float64(b.labelWidth)))
	}
	var legend []legendEntry
	for s, sr := range series {
		if len(rings[s]) == 0 {
			continue
		}
		poly, err := plotter.NewPolygon(rings[s]...)
		if err != nil {
			return nil, err
		}
		poly.Color = sr.color
		poly.LineStyle.Width = 0
		p.Add(poly)
		legend = append(legend, legendEntry{sr.name, poly})
	}
	if len(caps) > 0 || clipped {
		if len(caps) > 0 {
			eb, err := plotter.NewXErrorBars(struct {
				plotter.XYs
				plotter.XErrors
			}{caps, capErr})
			if err != nil {
				return nil, err
			}
			eb.LineStyle.Color, eb.LineStyle.Width, eb.CapWidth = ink, 1, 6
			p.Add(eb)
		}
		name := "whisker: p99"
		if clipped {
			name += " (dashed: beyond the axis)"
		}
		legend = append(legend, legendEntry{name, whiskerThumb{}})
	}
	lab, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range lab.TextStyle {
		lab.TextStyle[i] = textStyle(9)
		lab.TextStyle[i].YAlign = draw.YCenter
	}
	lab.Offset = vg.Point{X: 5}
	p.Add(lab)
	rev := make([]string, n)
	for i, c := range categories {
		rev[n-1-i] = c
	}
	p.NominalY(rev...)
	p.Y.Padding = 0
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	p.X.Min, p.X.Max = 0, xmax
	return legend, nil
}

// latencyLabel labels a latency bar with its p50 and p99 in milliseconds.
func latencyLabel(v, w float64) string {
	if math.IsNaN(w) {
		return fmt.Sprintf("%.3f ms", v)
	}
	return fmt.Sprintf("%.3f ms, p99 %.3f", v, w)
}

// whiskerThumb is the legend's picture of a whisker: a line ending in a cap.
type whiskerThumb struct{}

func (whiskerThumb) Thumbnail(c *draw.Canvas) {
	sty := draw.LineStyle{Color: ink, Width: 1}
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(sty, c.Min.X, y, c.Max.X, y)
	c.StrokeLine2(sty, c.Max.X, c.Min.Y, c.Max.X, c.Max.Y)
}

// hbarHeight is a plot height that gives each category's row of bars room.
func hbarHeight(categories, seriesPerCategory int) vg.Length {
	return vg.Length(70 + categories*(10+10*seriesPerCategory))
}
