package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// This file draws the report's charts as inline SVG: a line chart of
// medians against instance count (error bars and a confidence band) and a
// grouped bar chart of overheads with interval whiskers. Only what the
// report needs: linear axes with "nice" ticks, a legend, a title and axis
// labels.

// palette holds colours that stay distinguishable from each other (the
// Tableau 10 set, which is also readable by most colour-blind viewers in
// its first six entries).
var palette = [...]string{"#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#595959"}

// colour returns the i-th series colour, cycling through the palette.
func colour(i int) string { return palette[((i%len(palette))+len(palette))%len(palette)] }

// Chart geometry, in SVG user units (pixels at 100 % zoom).
const (
	chartW      = 600
	plotTop     = 44
	plotH       = 230
	plotLeft    = 78
	plotRight   = 18
	legendRowH  = 18
	fontSize    = 12
	charWidth   = 6.6 // rough advance of a 12px sans-serif glyph, to lay out the legend
	markerR     = 3.5
	capHalf     = 4
	maxYTicks   = 6
	maxXTicks   = 8
	bandOpacity = 0.18
	titleChars  = 76 // what fits across a chart in the 13px bold title font
)

// point is one instance count of one series in a line chart.
type point struct {
	X              float64
	Y              float64 // median
	SDLow, SDHigh  float64 // median ± stdev
	CILow, CIHigh  float64
	CIValid, SDSet bool
}

// series is one platform's line.
type series struct {
	Name   string
	Colour string
	Points []point // by increasing X
}

// lineChart plots medians against instance count.
type lineChart struct {
	Title, XLabel, YLabel string
	Series                []series
}

// bar is one platform's bar within a group.
type bar struct {
	Series        string
	Colour        string
	Value         float64
	Low, High     float64 // whisker ends
	CIValid       bool
	Insignificant bool // the interval contains zero: drawn pale
}

// barGroup is the bars at one instance count.
type barGroup struct {
	Label string
	Bars  []bar
}

// barChart draws grouped bars around a zero line.
type barChart struct {
	Title, XLabel, YLabel string
	Groups                []barGroup
	Legend                []legendItem
	Note                  string
}

type legendItem struct{ Name, Colour string }

// niceNum rounds x to 1, 2, 5 or 10 times a power of ten (Heckbert's
// "nice numbers for graph labels"): the nearest when round is true, the
// next above otherwise.
func niceNum(x float64, round bool) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	exp := math.Floor(math.Log10(x))
	f := x / math.Pow(10, exp)
	var nf float64
	switch {
	case round && f < 1.5:
		nf = 1
	case round && f < 3:
		nf = 2
	case round && f < 7:
		nf = 5
	case round:
		nf = 10
	case f <= 1:
		nf = 1
	case f <= 2:
		nf = 2
	case f <= 5:
		nf = 5
	default:
		nf = 10
	}
	return nf * math.Pow(10, exp)
}

// niceScale widens [lo, hi] to multiples of a nice step giving at most
// about maxTicks ticks. A degenerate range is widened around its value.
func niceScale(lo, hi float64, maxTicks int) (min, max, step float64) {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return 0, 1, 0.2
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	if hi == lo {
		pad := math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 1
		}
		lo, hi = lo-pad, hi+pad
	}
	rng := niceNum(hi-lo, false)
	step = niceNum(rng/float64(maxTicks-1), true)
	min = math.Floor(lo/step) * step
	max = math.Ceil(hi/step) * step
	return min, max, step
}

// ticks lists min, min+step, ... up to max, computed by index to avoid
// accumulating rounding errors.
func ticks(min, max, step float64) []float64 {
	if !(step > 0) {
		return []float64{min}
	}
	n := int(math.Round((max - min) / step))
	if n > 100 {
		n = 100
	}
	out := make([]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		v := min + float64(i)*step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, v)
	}
	return out
}

// tickLabel prints a tick value with as many decimals as the step needs,
// abbreviating thousands and millions.
func tickLabel(v, step float64) string {
	if v == 0 {
		return "0"
	}
	suffix := ""
	a := math.Max(math.Abs(v), step)
	switch {
	case a >= 1e9:
		v, step, suffix = v/1e9, step/1e9, "G"
	case a >= 1e6:
		v, step, suffix = v/1e6, step/1e6, "M"
	case a >= 1e4:
		v, step, suffix = v/1e3, step/1e3, "k"
	}
	dec := 0
	if step > 0 && step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
		if dec > 6 {
			dec = 6
		}
	}
	return strconv.FormatFloat(v, 'f', dec, 64) + suffix
}

// fitText shortens s to at most n characters, eliding its middle so
// that both the workload's name and the metric at the end stay visible.
func fitText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 5 {
		return s
	}
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// esc escapes text for SVG and HTML content and attributes.
func esc(s string) string { return html.EscapeString(s) }

// f1 prints a coordinate.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// svgWriter accumulates an SVG document.
type svgWriter struct{ b strings.Builder }

func (w *svgWriter) printf(format string, a ...any) { fmt.Fprintf(&w.b, format, a...) }

func (w *svgWriter) text(x, y float64, anchor, class, s string) {
	w.printf(`<text x="%s" y="%s" text-anchor="%s" class="%s">%s</text>`, f1(x), f1(y), anchor, class, esc(s))
}

// legendLayout places items in rows under the plot; it returns each
// item's position and the height used.
func legendLayout(items []legendItem, x0, width float64) (pos [][2]float64, height float64) {
	x, row := x0, 0
	for _, it := range items {
		w := 22 + charWidth*float64(len([]rune(it.Name))) + 14
		if x > x0 && x+w > x0+width {
			x, row = x0, row+1
		}
		pos = append(pos, [2]float64{x, float64(row) * legendRowH})
		x += w
	}
	if len(items) == 0 {
		return nil, 0
	}
	return pos, float64(row+1) * legendRowH
}

// frame draws the title, the axes' labels and the horizontal grid, and
// returns the y mapping.
func (w *svgWriter) frame(class, title, xlabel, ylabel string, ymin, ymax, ystep float64, height float64) func(float64) float64 {
	w.printf(`<svg xmlns="http://www.w3.org/2000/svg" class="chart %s" role="img" viewBox="0 0 %d %s" width="%d" height="%s" font-family="sans-serif" font-size="%d">`,
		class, chartW, f1(height), chartW, f1(height), fontSize)
	w.printf(`<title>%s</title>`, esc(title))
	w.printf(`<rect x="0" y="0" width="%d" height="%s" fill="#fff"/>`, chartW, f1(height))
	w.text(chartW/2, 20, "middle", "title", fitText(title, titleChars))
	plotW := float64(chartW - plotLeft - plotRight)
	y := func(v float64) float64 { return plotTop + plotH - (v-ymin)/(ymax-ymin)*plotH }
	for _, t := range ticks(ymin, ymax, ystep) {
		yy := y(t)
		w.printf(`<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#e4e4e4"/>`, plotLeft, f1(yy), f1(plotLeft+plotW), f1(yy))
		w.text(plotLeft-6, yy+4, "end", "tick", tickLabel(t, ystep))
	}
	w.printf(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, plotLeft, plotTop, plotLeft, plotTop+plotH)
	w.printf(`<line x1="%d" y1="%d" x2="%s" y2="%d" stroke="#333"/>`, plotLeft, plotTop+plotH, f1(plotLeft+plotW), plotTop+plotH)
	w.text(plotLeft+plotW/2, plotTop+plotH+38, "middle", "axis", xlabel)
	cy := float64(plotTop + plotH/2)
	w.printf(`<text x="16" y="%s" text-anchor="middle" class="axis" transform="rotate(-90 16 %s)">%s</text>`, f1(cy), f1(cy), esc(ylabel))
	return y
}

func (w *svgWriter) legend(items []legendItem, pos [][2]float64, top float64, note string) {
	for i, it := range items {
		x, y := pos[i][0], top+pos[i][1]
		w.printf(`<rect x="%s" y="%s" width="16" height="10" fill="%s"/>`, f1(x), f1(y+2), it.Colour)
		w.text(x+22, y+11, "start", "legend", it.Name)
	}
	if note != "" {
		rows := 0.0
		if len(pos) > 0 {
			rows = pos[len(pos)-1][1] + legendRowH
		}
		w.text(plotLeft, top+rows+12, "start", "note", note)
	}
}

// SVG renders the line chart.
func (c lineChart) SVG() string {
	var items []legendItem
	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		items = append(items, legendItem{s.Name, s.Colour})
		for _, p := range s.Points {
			xlo, xhi = math.Min(xlo, p.X), math.Max(xhi, p.X)
			ylo, yhi = math.Min(ylo, p.Y), math.Max(yhi, p.Y)
			if p.SDSet {
				ylo, yhi = math.Min(ylo, p.SDLow), math.Max(yhi, p.SDHigh)
			}
			if p.CIValid {
				ylo, yhi = math.Min(ylo, p.CILow), math.Max(yhi, p.CIHigh)
			}
		}
	}
	if math.IsInf(xlo, 0) { // no points at all
		xlo, xhi, ylo, yhi = 1, 1, 0, 1
	}
	if ylo > 0 && ylo < 0.5*yhi {
		ylo = 0 // close enough to zero that the axis should start there
	}
	ymin, ymax, ystep := niceScale(ylo, yhi, maxYTicks)
	if xlo == xhi {
		xlo, xhi = math.Max(0, xlo-1), xhi+1
	}
	xmin, xmax, xstep := niceScale(xlo, xhi, maxXTicks)
	if xstep < 1 { // instance counts are whole numbers
		xstep = 1
		xmin, xmax = math.Floor(xlo), math.Ceil(xhi)
	}
	xmin = math.Max(0, xmin)

	plotW := float64(chartW - plotLeft - plotRight)
	note := "line: median · whiskers: ±1 stdev · band: 95% CI of the median"
	pos, lh := legendLayout(items, plotLeft, plotW)
	height := float64(plotTop+plotH+50) + lh + 20

	var w svgWriter
	y := w.frame("line", c.Title, c.XLabel, c.YLabel, ymin, ymax, ystep, height)
	// Points keep clear of the axes: the x range is inset on both sides.
	const inset = 18
	x := func(v float64) float64 { return plotLeft + inset + (v-xmin)/(xmax-xmin)*(plotW-2*inset) }
	for _, t := range ticks(xmin, xmax, xstep) {
		w.printf(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333"/>`, f1(x(t)), plotTop+plotH, f1(x(t)), plotTop+plotH+5)
		w.text(x(t), plotTop+plotH+18, "middle", "tick", tickLabel(t, xstep))
	}
	n := len(c.Series)
	for i, s := range c.Series {
		// Dodge the series sideways so that coincident error bars stay
		// apart; the offset is a few pixels, far less than a tick.
		dx := (float64(i) - float64(n-1)/2) * 5
		px := func(v float64) float64 { return x(v) + dx }
		w.printf(`<g class="series" data-series="%s">`, esc(s.Name))
		var band []point
		for _, p := range s.Points {
			if p.CIValid {
				band = append(band, p)
			}
		}
		switch {
		case len(band) == 1:
			p := band[0]
			w.printf(`<rect x="%s" y="%s" width="14" height="%s" fill="%s" fill-opacity="%g"/>`,
				f1(px(p.X)-7), f1(y(p.CIHigh)), f1(math.Max(1, y(p.CILow)-y(p.CIHigh))), s.Colour, bandOpacity)
		case len(band) > 1:
			var pts []string
			for _, p := range band {
				pts = append(pts, f1(px(p.X))+","+f1(y(p.CIHigh)))
			}
			for j := len(band) - 1; j >= 0; j-- {
				pts = append(pts, f1(px(band[j].X))+","+f1(y(band[j].CILow)))
			}
			w.printf(`<polygon points="%s" fill="%s" fill-opacity="%g" stroke="none"/>`, strings.Join(pts, " "), s.Colour, bandOpacity)
		}
		if len(s.Points) > 1 {
			var pts []string
			for _, p := range s.Points {
				pts = append(pts, f1(px(p.X))+","+f1(y(p.Y)))
			}
			w.printf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(pts, " "), s.Colour)
		}
		for _, p := range s.Points {
			if p.SDSet && p.SDHigh > p.SDLow {
				xx := px(p.X)
				w.printf(`<path d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="%s" stroke-width="1.3" fill="none"/>`,
					f1(xx), f1(y(p.SDLow)), f1(y(p.SDHigh)),
					f1(xx-capHalf), f1(y(p.SDLow)), f1(xx+capHalf),
					f1(xx-capHalf), f1(y(p.SDHigh)), f1(xx+capHalf), s.Colour)
			}
			w.printf(`<circle cx="%s" cy="%s" r="%g" fill="%s" stroke="#fff" stroke-width="1"/>`, f1(px(p.X)), f1(y(p.Y)), markerR, s.Colour)
		}
		w.printf(`</g>`)
	}
	w.legend(items, pos, float64(plotTop+plotH+50), note)
	w.printf(`</svg>`)
	return w.b.String()
}

// SVG renders the bar chart.
func (c barChart) SVG() string {
	ylo, yhi := 0.0, 0.0 // the zero line is always shown
	for _, g := range c.Groups {
		for _, b := range g.Bars {
			ylo, yhi = math.Min(ylo, b.Value), math.Max(yhi, b.Value)
			if b.CIValid {
				ylo, yhi = math.Min(ylo, b.Low), math.Max(yhi, b.High)
			}
		}
	}
	ymin, ymax, ystep := niceScale(ylo, yhi, maxYTicks)
	plotW := float64(chartW - plotLeft - plotRight)
	pos, lh := legendLayout(c.Legend, plotLeft, plotW)
	height := float64(plotTop+plotH+50) + lh + 20

	var w svgWriter
	y := w.frame("overhead", c.Title, c.XLabel, c.YLabel, ymin, ymax, ystep, height)
	w.printf(`<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="1.2"/>`, plotLeft, f1(y(0)), f1(plotLeft+plotW), f1(y(0)))
	if len(c.Groups) > 0 {
		gw := plotW / float64(len(c.Groups))
		for gi, g := range c.Groups {
			gx := plotLeft + float64(gi)*gw
			w.text(gx+gw/2, plotTop+plotH+18, "middle", "tick", g.Label)
			if len(g.Bars) == 0 {
				continue
			}
			bw := math.Min(48, gw*0.8/float64(len(g.Bars)))
			x0 := gx + (gw-bw*float64(len(g.Bars)))/2
			for bi, b := range g.Bars {
				bx := x0 + float64(bi)*bw
				top, bottom := y(math.Max(0, b.Value)), y(math.Min(0, b.Value))
				op := "0.9"
				if b.Insignificant {
					op = "0.35"
				}
				w.printf(`<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="%s"><title>%s</title></rect>`,
					f1(bx+1), f1(top), f1(bw-2), f1(math.Max(0.5, bottom-top)), b.Colour, op,
					esc(fmt.Sprintf("%s: %+.1f%%", b.Series, b.Value)))
				if b.CIValid {
					cx := bx + bw/2
					w.printf(`<path d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="#222" stroke-width="1.2" fill="none"/>`,
						f1(cx), f1(y(b.Low)), f1(y(b.High)),
						f1(cx-capHalf), f1(y(b.Low)), f1(cx+capHalf),
						f1(cx-capHalf), f1(y(b.High)), f1(cx+capHalf))
				}
			}
		}
	}
	w.legend(c.Legend, pos, float64(plotTop+plotH+50), c.Note)
	w.printf(`</svg>`)
	return w.b.String()
}
