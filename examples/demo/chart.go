package main

import (
	"bytes"
	"flag"
	"fmt"
	"image/color"
	"os"
	"regexp"
	"runtime"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The chart is 600 pt wide: 800 CSS pixels, the width of a README.
const chartWidth = 600

var (
	once  = color.RGBA{0x00, 0x72, 0xB2, 0xff} // Okabe–Ito blue
	twice = color.RGBA{0xD5, 0x5E, 0x00, 0xff} // Okabe–Ito vermilion
	ink   = color.RGBA{0x22, 0x22, 0x22, 0xff}
)

// sans is Liberation Sans, whose metrics are Arial's, so a viewer without
// it lays the text out the same.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func style(size vg.Length) text.Style {
	return text.Style{Color: ink, Font: font.From(sans, size), Handler: plot.DefaultTextHandler}
}

func restyle(s *text.Style, size vg.Length) { s.Font, s.Color = font.From(sans, size), ink }

// drawCharges writes an SVG with one panel per client: a bar per customer
// (operation), as high as the charges the service recorded for it: the
// first in blue, the duplicates stacked on it in vermilion.
func drawCharges(path string, results []result, settings, command string) error {
	plots := make([][]*plot.Plot, len(results))
	top := 0
	for _, r := range results {
		for _, c := range r.perOp {
			top = max(top, c)
		}
	}
	top = max(top, 2)
	for i, r := range results {
		p, err := panel(r, top)
		if err != nil {
			return err
		}
		plots[i] = []*plot.Plot{p}
	}

	const panelH, legendH, margin = 150, 22, 8
	capSty := style(9)
	host := fmt.Sprintf("%s, %d CPUs, %s/%s, %s. %s", cpuModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"), command)
	var lines []string
	for _, c := range []string{settings, host} {
		lines = append(lines, wrap(capSty, c, chartWidth-2*margin)...)
	}
	capLine := capSty.Height("X") + 2
	capH := vg.Length(len(lines))*capLine + margin
	titleH := vg.Length(26)
	w, h := vg.Length(chartWidth), titleH+vg.Length(len(results))*panelH+legendH+capH
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	title := style(13)
	title.XAlign = draw.XCenter
	dc.FillText(title, vg.Point{X: w / 2, Y: h - titleH + 8}, "Charges per customer, the same batch through the same lossy network")

	area := draw.Crop(dc, margin, -2*margin, legendH+capH, -titleH)
	tiles := draw.Tiles{Rows: len(results), Cols: 1, PadY: 6, PadBottom: 0}
	for i, cs := range plot.Align(plots, tiles, area) {
		plots[i][0].Draw(cs[0])
	}

	// The legend, under the panels.
	lsty := style(10)
	x, y := dc.Min.X+margin, dc.Min.Y+capH+6
	for _, e := range []struct {
		name string
		c    color.Color
	}{{"the charge asked for", once}, {"a duplicate charge", twice}} {
		sw := vg.Rectangle{Min: vg.Point{X: x, Y: y + 1}, Max: vg.Point{X: x + 16, Y: y + lsty.Height("X") - 1}}
		dc.SetColor(e.c)
		dc.Fill(sw.Path())
		x += 20
		dc.FillText(lsty, vg.Point{X: x, Y: y}, e.name)
		x += lsty.Width(e.name) + 14
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

// panel is one client's bars.
func panel(r result, top int) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %d charges for %d customers, %s", r.name, r.charges, r.ops, overcharged(r))
	restyle(&p.Title.TextStyle, 11)
	p.Title.Padding = 4
	p.X.Label.Text, p.Y.Label.Text = "customer (one charge each was asked for)", "charges"
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		restyle(&a.Label.TextStyle, 10)
		restyle(&a.Tick.Label, 9)
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	var ones, more []plotter.XYer
	for i, k := range r.perOp {
		if k == 0 {
			continue
		}
		x := float64(i + 1)
		ones = append(ones, rect(x, 0, 1))
		if k > 1 {
			more = append(more, rect(x, 1, float64(k)))
		}
	}
	for _, set := range []struct {
		rings []plotter.XYer
		c     color.Color
	}{{ones, once}, {more, twice}} {
		if len(set.rings) == 0 {
			continue
		}
		poly, err := plotter.NewPolygon(set.rings...)
		if err != nil {
			return nil, err
		}
		poly.Color, poly.LineStyle.Width = set.c, 0
		p.Add(poly)
	}
	p.X.Min, p.X.Max = 0.5, float64(len(r.perOp))+0.5
	p.Y.Min, p.Y.Max = 0, float64(top)+0.3
	var ticks []plot.Tick
	for v := 0; v <= top; v++ {
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	ticks = []plot.Tick{{Value: 1, Label: "1"}}
	for v := 50; v <= len(r.perOp); v += 50 {
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	return p, nil
}

// rect is the bar of customer x from y0 to y1.
func rect(x, y0, y1 float64) plotter.XYs {
	return plotter.XYs{{X: x - 0.45, Y: y0}, {X: x + 0.45, Y: y0}, {X: x + 0.45, Y: y1}, {X: x - 0.45, Y: y1}}
}

func overcharged(r result) string {
	if r.twice == 0 {
		return "none charged more than once"
	}
	return fmt.Sprintf("%d charged more than once", r.twice)
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
// instead of its default serif face.
func sansFallback(svg []byte) []byte {
	return fontFamily.ReplaceAll(svg, []byte(`font-family:'$1',Arial,Helvetica,sans-serif;`))
}

// cpuModel is the first "model name" in /proc/cpuinfo, or "unknown CPU".
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.Lines(string(b)) {
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(name) == "model name" {
			return strings.Join(strings.Fields(value), " ")
		}
	}
	return "unknown CPU"
}

// commandLine is how the demo was started, with a database's address left
// out.
func commandLine() string {
	args := []string{"go run ./examples/demo"}
	flag.Visit(func(f *flag.Flag) {
		v := f.Value.String()
		if f.Name == "database" {
			v = "DSN"
		}
		args = append(args, "-"+f.Name+" "+v)
	})
	return strings.Join(args, " ")
}
