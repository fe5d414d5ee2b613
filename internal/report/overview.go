package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/stats"
)

// cellGroup is a workload's headline metric at one instance count: the
// cells of one group of the verdict, the baseline first.
type cellGroup struct {
	Title string // "cpu:threads=2 (events/s, higher is better)", with ×N when the workload ran at several counts
	Name  string // the title without the unit
	// Label is the workload's label alone, Title's head: the part a
	// figure may shorten (the rest tells the groups of one label apart)
	Label string
	Cells []Cell
}

// headlineGroups are the groups of the verdict, in cell order.
func headlineGroups(cells []Cell) []cellGroup {
	head := headline(cells)
	multi := map[string]bool{}
	insts := map[string]int{}
	for _, c := range cells {
		if head[workloadLabel(c)] != c.Metric {
			continue
		}
		if n, ok := insts[workloadLabel(c)]; ok && n != c.Instances {
			multi[workloadLabel(c)] = true
		}
		insts[workloadLabel(c)] = c.Instances
	}
	var out []cellGroup
	index := map[string]int{}
	for _, c := range cells {
		if head[workloadLabel(c)] != c.Metric {
			continue
		}
		name := workloadLabel(c)
		if multi[name] {
			name = fmt.Sprintf("%s ×%d", name, c.Instances)
		}
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, cellGroup{Title: fmt.Sprintf("%s %s (%s, %s is better)", name, c.Metric, c.Unit, c.Better), Name: name, Label: workloadLabel(c)})
		}
		out[i].Cells = append(out[i].Cells, c)
	}
	return out
}

// verdictGroup is one group of the verdict as the page shows it.
type verdictGroup struct {
	Title string
	Lines []verdictLine
}

type verdictLine struct {
	Label, Text, Class string
}

func verdictGroups(cells []Cell) []verdictGroup {
	var out []verdictGroup
	for _, g := range headlineGroups(cells) {
		vg := verdictGroup{Title: g.Title}
		for _, c := range g.Cells {
			vg.Lines = append(vg.Lines, verdictLine{Label: c.Label(), Text: summaryLine(c), Class: verdictClass(c.Verdict)})
		}
		out = append(out, vg)
	}
	return out
}

// overviewRow is one comparison in the overview figure: the ratio of a
// platform's median to the baseline's with its interval (as the summary
// prints it); the verdict (slower, faster, no difference) gives the colour.
type overviewRow struct {
	Group string // the group's name on its first row, else ""
	// GroupLabel is the workload label Group starts with: shortened
	// first when Group is too long, so the instance count and metric
	// after it stay readable
	GroupLabel string
	Label      string
	Factor     float64
	Lo, Hi     float64
	CIValid    bool
	Verdict    string
}

// overviewRows are the compared cells of the verdict groups.
func overviewRows(cells []Cell) []overviewRow {
	var out []overviewRow
	for _, g := range headlineGroups(cells) {
		first := true
		for _, c := range g.Cells {
			if c.Baseline == "" || c.Label() == c.Baseline || !(c.Ratio > 0) {
				continue
			}
			r := overviewRow{Label: c.Label(), Factor: c.Ratio, Lo: c.RatioCILow, Hi: c.RatioCIHigh, CIValid: c.RatioValid, Verdict: c.Verdict}
			if first {
				r.Group, r.GroupLabel, first = g.Title, g.Label, false
			}
			out = append(out, r)
		}
	}
	return out
}

// Overview figure geometry.
const (
	ovW       = 560
	ovLabelW  = 200 // the label column
	ovRight   = 20
	ovRowH    = 20
	ovGroupH  = 22
	ovTop     = 34
	ovBottom  = 46
	ovMaxText = 30 // characters of a label
)

// overviewSVG draws every comparison with the baseline: a point at the
// factor, whiskers for its 95% interval, the line at 1, on a log scale
// when the factors span more than 3×.
func overviewSVG(rows []overviewRow, base string) string {
	if len(rows) == 0 {
		return ""
	}
	lo, hi := 1.0, 1.0
	for _, r := range rows {
		lo, hi = math.Min(lo, r.Factor), math.Max(hi, r.Factor)
		if r.CIValid && r.Lo > 0 {
			lo, hi = math.Min(lo, r.Lo), math.Max(hi, r.Hi)
		}
	}
	logScale := hi/lo > 3
	var ticksAt []float64
	var pos func(float64) float64
	plotL, plotR := float64(ovLabelW), float64(ovW-ovRight)
	if logScale {
		lo, hi = lo/1.15, hi*1.15
		a, b := math.Log(lo), math.Log(hi)
		pos = func(v float64) float64 { return plotL + (math.Log(v)-a)/(b-a)*(plotR-plotL) }
		for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
			for _, m := range []float64{1, 2, 5} {
				if v := m * math.Pow(10, e); v >= lo && v <= hi {
					ticksAt = append(ticksAt, v)
				}
			}
		}
	} else {
		span := hi - lo
		lo, hi = lo-0.1*span-0.02, hi+0.1*span+0.02
		var step float64
		lo, hi, step = niceScale(lo, hi, 6)
		lo = math.Max(lo, 0)
		pos = func(v float64) float64 { return plotL + (v-lo)/(hi-lo)*(plotR-plotL) }
		ticksAt = ticks(lo, hi, step)
	}
	groups := 0
	for _, r := range rows {
		if r.Group != "" {
			groups++
		}
	}
	height := float64(ovTop + groups*ovGroupH + len(rows)*ovRowH + ovBottom + 18)
	var w svgWriter
	title := "Every platform against " + base + ": the ratio of medians with its 95% interval; red slower, green faster, grey no detectable difference"
	w.printf(`<svg xmlns="http://www.w3.org/2000/svg" class="chart overview" role="img" viewBox="0 0 %d %s" width="%d" height="%s" font-family="sans-serif" font-size="%d">`,
		ovW, f1(height), ovW, f1(height), fontSize)
	w.printf(`<title>%s</title>`, esc(title))
	w.printf(`<rect x="0" y="0" width="%d" height="%s" fill="#fff"/>`, ovW, f1(height))
	w.text(ovW/2, 18, "middle", "title", fitText("Ratio to "+base+" (median, 95% CI)", titleChars))
	bottom := height - ovBottom - 18 + 6
	for _, t := range ticksAt {
		x := pos(t)
		w.printf(`<line x1="%s" y1="%d" x2="%s" y2="%s" stroke="#e4e4e4"/>`, f1(x), ovTop-4, f1(x), f1(bottom))
		w.text(x, bottom+14, "middle", "tick", strconv.FormatFloat(t, 'g', 3, 64)+"×")
	}
	x1 := pos(1)
	w.printf(`<line x1="%s" y1="%d" x2="%s" y2="%s" stroke="#333" stroke-width="1.5"/>`, f1(x1), ovTop-4, f1(x1), f1(bottom))
	scale := "linear scale"
	if logScale {
		scale = "log scale"
	}
	w.text((plotL+plotR)/2, bottom+32, "middle", "axis", "median ÷ "+base+"'s ("+scale+"; 1 = same as "+base+")")
	lx := 14.0
	for _, k := range []struct{ col, name string }{{"#c0392b", "slower"}, {"#2d7a2d", "faster"}, {"#777", "no detectable difference"}, {"#a06000", "too few repetitions"}} {
		w.printf(`<circle cx="%s" cy="%s" r="%s" fill="%s"/>`, f1(lx), f1(bottom+48), f1(markerR), k.col)
		w.text(lx+8, bottom+52, "start", "note", k.name)
		lx += 24 + charWidth*float64(len(k.name))
	}
	y := float64(ovTop)
	for _, r := range rows {
		if r.Group != "" {
			y += ovGroupH
			// bold: about 7.4 units a glyph; shortened, the whole title
			// is the text's tooltip
			if g := fitGroup(r.Group, r.GroupLabel, 74); g == r.Group {
				w.text(4, y-6, "start", "group", g)
			} else {
				w.printf(`<text x="4.0" y="%s" text-anchor="start" class="group"><title>%s</title>%s</text>`, f1(y-6), esc(r.Group), esc(g))
			}
		}
		y += ovRowH
		cy := y - ovRowH/2
		w.text(14, cy+4, "start", "legend", fitText(r.Label, ovMaxText-8)+"  "+ratioNum(r.Factor)+"×")
		col := "#777"
		switch r.Verdict {
		case stats.VerdictSlower, stats.VerdictLower:
			col = "#c0392b"
		case stats.VerdictFaster, stats.VerdictHigher:
			col = "#2d7a2d"
		case stats.VerdictInsufficient:
			col = "#a06000"
		}
		if r.CIValid && r.Lo > 0 {
			a, b := pos(r.Lo), pos(r.Hi)
			w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`, f1(a), f1(cy), f1(b), f1(cy), col)
			w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, f1(a), f1(cy-capHalf), f1(a), f1(cy+capHalf), col)
			w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, f1(b), f1(cy-capHalf), f1(b), f1(cy+capHalf), col)
		}
		w.printf(`<circle cx="%s" cy="%s" r="%s" fill="%s"><title>%s</title></circle>`, f1(pos(r.Factor)), f1(cy), f1(markerR+0.5), col,
			esc(fmt.Sprintf("%s: %s× (%s)", r.Label, ratioNum(r.Factor), r.Verdict)))
	}
	w.printf(`</svg>`)
	return w.b.String()
}

// fitGroup fits a group's title (label followed by " ×N metric (unit,
// better)") into n characters, shortening the label first: two groups of
// one label at different instance counts, or with different metrics, never
// read the same. Only when the rest alone is too long is it cut too, from
// its end (the unit and direction go before the count and the metric).
func fitGroup(title, label string, n int) string {
	r := []rune(title)
	if len(r) <= n || !strings.HasPrefix(title, label) {
		return fitText(title, n)
	}
	rest := []rune(strings.TrimPrefix(title, label))
	room := max(n-len(rest), 12)
	l := fitText(label, room)
	out := []rune(l + string(rest))
	if len(out) > n {
		out = append(out[:n-1], '…')
	}
	return string(out)
}
