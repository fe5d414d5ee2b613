package report

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"github.com/isobench/isobench/internal/hostinfo"
	"github.com/isobench/isobench/internal/stats"
)

// HTML writes the report as one self-contained page (inline CSS and SVG,
// no script, nothing fetched at view time): the environment with warnings
// about settings that distort results, a summary of the differences from
// the baseline, study 004's overall score when the run has its workloads,
// then per workload and metric a chart of medians against instance count,
// a chart of overheads against the baseline and the table of cells, and
// finally the noise warnings.
//
// The page is an html/template, so every text from the run (platform
// labels, options, parameters, fingerprint values, warnings) is escaped
// for the context it lands in. The charts are SVG strings built in svg.go,
// where every text is escaped with esc (svgWriter.text, the titles, the
// labels, data-series); they go into the page as template.HTML only for
// that reason.
func HTML(w io.Writer, d Doc) error {
	bw := bufio.NewWriter(w)
	if err := pageTemplate.Execute(bw, newPage(markedDoc(d))); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return bw.Flush()
}

type page struct {
	Run          int64
	Status       string
	Unfinished   bool
	Base         string
	NCells       int
	CSS          template.CSS
	HostWarnings []string
	Emulated     []string
	Fingerprint  []keyValue
	Summary      []summaryGroup
	AnyDiffers   bool
	Verdict      []verdictGroup
	Overview     template.HTML
	NoiseCells   int
	ScoreErr     string
	Score        *scoreView
	Workloads    []workloadView
	Noise        []noiseKind
	SectionCSS   template.CSS
	Study        *StudyHeading
	Sections     []sectionView
}

type keyValue struct{ K, V string }

type summaryGroup struct {
	Label    string
	Compared int
	Rows     []summaryRow
}

type summaryRow struct {
	Class, Metric, Unit string
	Instances           int
	Label, Ratio, CI    string
	Change, Verdict     string
}

type scoreView struct {
	Native    string
	Missing   string
	NRows     int
	Platforms []string
	Rows      []scoreRow
}

type scoreRow struct {
	Title, Source string
	Header        bool // the total lines: a th title and no source
	Values        []scoreValue
}

type scoreValue struct {
	Text string
	Bold bool
}

type workloadView struct {
	ID, Label string
	Metrics   []metricView
}

type metricView struct {
	ID, Metric, Unit, Better string
	Charts                   []template.HTML
	Rows                     []cellRow
}

type cellRow struct {
	Class                  string
	Instances, N           int
	Label, Median, Stdev   string
	CV, CI, Ratio, RatioCI string
	Verdict                string
}

type noiseKind struct {
	Kind  string
	Lines []string
}

func newPage(d Doc) page {
	base := baselineOf(d.Cells)
	colours := platformColours(d.Cells)
	pg := page{Run: d.Run, Status: d.Status, Unfinished: d.Status != "" && d.Status != "done", Base: base,
		NCells: len(d.Cells), CSS: template.CSS(pageCSS), HostWarnings: hostinfo.Warnings(d.Fingerprint), Emulated: emulatedLines(d.Cells)}
	keys := make([]string, 0, len(d.Fingerprint))
	for k := range d.Fingerprint {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pg.Fingerprint = append(pg.Fingerprint, keyValue{k, d.Fingerprint[k]})
	}
	groups := groupByWorkload(d.Cells)
	if base != "" {
		pg.Summary, pg.AnyDiffers = summaryOf(groups)
		// Safe as HTML: overviewSVG escapes every text it draws.
		pg.Overview = template.HTML(overviewSVG(overviewRows(d.Cells), base))
	}
	pg.Verdict = verdictGroups(d.Cells)
	for _, c := range d.Cells {
		if len(c.Warnings) > 0 {
			pg.NoiseCells++
		}
	}
	score, haveScore, scoreErr := OverallScore(d.Cells)
	// study 004's overall score, and what a run lacks for it, only where
	// it is expected: study 004's report, or a run with all its inputs
	// (any run with a cpu cell is not study 004)
	study004 := d.Study != nil && d.Study.ID == "004"
	switch {
	case scoreErr != nil && study004:
		pg.ScoreErr = scoreErr.Error()
	case haveScore && (study004 || len(score.Missing) == 0):
		pg.Score = scoreViewOf(score)
	}
	for _, g := range groups {
		wv := workloadView{ID: anchor(g.label), Label: g.label}
		for _, m := range g.metrics {
			wv.Metrics = append(wv.Metrics, metricViewOf(m, base, colours))
		}
		pg.Workloads = append(pg.Workloads, wv)
	}
	pg.Noise = noiseOf(d.Cells)
	pg.Study = d.Study
	pg.Sections = sectionViews(d.Sections, sectionColours(colours, d.Sections))
	if len(pg.Sections) > 0 || pg.Study != nil {
		pg.SectionCSS = template.CSS(sectionCSS)
	}
	return pg
}

func summaryOf(groups []workloadGroup) (out []summaryGroup, anyDiffers bool) {
	for _, g := range groups {
		sg := summaryGroup{Label: g.label}
		for _, m := range g.metrics {
			for _, c := range m.cells {
				if c.Baseline != "" && c.Label() != c.Baseline {
					sg.Compared++
				}
				if !differs(c) {
					continue
				}
				ci := "-"
				if c.RatioValid {
					ci = fmt.Sprintf("[%.3f, %.3f]", c.RatioCILow, c.RatioCIHigh)
				}
				sg.Rows = append(sg.Rows, summaryRow{Class: verdictClass(c.Verdict), Metric: c.Metric, Unit: c.Unit, Instances: c.Instances,
					Label: c.Label(), Ratio: fmt.Sprintf("%.3f", c.Ratio), CI: ci, Change: changeFactor(c), Verdict: c.Verdict})
			}
		}
		if sg.Compared == 0 {
			continue
		}
		anyDiffers = anyDiffers || len(sg.Rows) > 0
		out = append(out, sg)
	}
	return out, anyDiffers
}

func scoreViewOf(s Score) *scoreView {
	v := &scoreView{Native: s.Native, NRows: len(s.Rows), Platforms: s.Platforms}
	if len(s.Missing) > 0 {
		var names []string
		for _, r := range s.Missing {
			names = append(names, rowTitle(r))
		}
		v.Missing = strings.Join(names, ", ")
	}
	for _, r := range s.Rows {
		row := scoreRow{Title: rowTitle(r), Source: s.Source[r]}
		for _, p := range s.Platforms {
			text := "-"
			if x, ok := s.Score[r][p]; ok {
				text = fmt.Sprintf("%.2f", x)
			}
			row.Values = append(row.Values, scoreValue{Text: text})
		}
		v.Rows = append(v.Rows, row)
	}
	for _, line := range []struct {
		name string
		m    map[string]float64
		pct  bool
	}{{"Total", s.Total, false}, {"Overall performance", s.Overall, true}} {
		row := scoreRow{Title: line.name, Header: true}
		for _, p := range s.Platforms {
			x, ok := line.m[p]
			switch {
			case !ok:
				row.Values = append(row.Values, scoreValue{Text: "-"})
			case line.pct:
				row.Values = append(row.Values, scoreValue{Text: fmt.Sprintf("%.1f%%", 100*x), Bold: true})
			default:
				row.Values = append(row.Values, scoreValue{Text: fmt.Sprintf("%.2f", x)})
			}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

func metricViewOf(m metricGroup, base string, colours map[string]string) metricView {
	c0 := m.cells[0]
	mv := metricView{ID: anchor(workloadLabel(c0) + "-" + c0.Metric), Metric: c0.Metric, Unit: c0.Unit, Better: c0.Better}
	// Safe as HTML: svg.go escapes every text it puts in a chart.
	mv.Charts = append(mv.Charts, template.HTML(metricLineChart(m, colours).SVG()))
	if bc, ok := overheadChart(m, base, colours); ok {
		mv.Charts = append(mv.Charts, template.HTML(bc.SVG()))
	}
	for _, c := range m.cells {
		t := c.texts()
		mv.Rows = append(mv.Rows, cellRow{Class: verdictClass(c.Verdict), Instances: c.Instances, N: c.N, Label: c.Label(),
			Median: num(c.Median), Stdev: num(c.Stdev), CV: t.cv, CI: t.ci, Ratio: t.ratio, RatioCI: t.ratioCI, Verdict: t.verdict})
	}
	return mv
}

func noiseOf(cells []Cell) []noiseKind {
	var out []noiseKind
	index := map[string]int{}
	for _, c := range cells {
		for _, wn := range c.Warnings {
			kind, _, _ := strings.Cut(wn, ":")
			i, ok := index[kind]
			if !ok {
				i = len(out)
				index[kind] = i
				out = append(out, noiseKind{Kind: kind})
			}
			out[i].Lines = append(out[i].Lines, fmt.Sprintf("%s %s ×%d on %s: %s", workloadLabel(c), c.Metric, c.Instances, c.Label(), wn))
		}
	}
	return out
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>isobench run {{.Run}}</title>
<style>{{.CSS}}</style>{{if .SectionCSS}}<style>{{.SectionCSS}}</style>{{end}}
</head><body>
<h1>isobench run {{.Run}}</h1>
<p class="meta">status: <b>{{.Status}}</b>{{if .Base}} · baseline: <b>{{.Base}}</b>{{end}} · {{.NCells}} cells</p>
{{if .Unfinished}}<p class="error">The run did not finish ({{.Status}}): the cells below hold only the repetitions that completed.</p>
{{end -}}
{{if .Emulated}}<div class="warnbox"><ul>{{range .Emulated}}<li>{{.}}</li>{{end}}</ul></div>
{{end -}}
<nav>{{if .Study}}<a href="#study">Study {{.Study.ID}}</a>: {{end}}{{range .Sections}}<a href="#{{.ID}}">{{.Number}}</a> · {{end}}<a href="#verdict">Verdict</a>
{{- if or .ScoreErr .Score}} · <a href="#score">Overall score</a>{{end}}
{{- range .Workloads}} · <a href="#{{.ID}}">{{.Label}}</a>{{end}}{{if .Base}} · <a href="#summary">All differences</a>{{end}} · <a href="#environment">Environment</a> · <a href="#noise">Noise warnings</a></nav>
{{with .Study}}<section id="study"><h2>Study {{.ID}}: {{.Title}}</h2>
<p class="meta">{{.Citation}}</p>
<p>Each table and figure of the paper follows, in the paper's shape, with what the paper found beside it and whether this run agrees in direction, with the 95% interval of the ratio that decides it ({{.Scale}} scale: {{.Agrees}} comparisons agree, {{.Disagrees}} disagree, {{.Undecided}} undecided{{if .NotComparable}}, {{.NotComparable}} not comparable (a side emulated){{end}}). Disagreement is information, not an error.</p>
{{range .Notes}}<p class="meta">{{.}}</p>
{{end}}</section>
{{end -}}
{{range .Sections}}<section class="paper" id="{{.ID}}"><h2>{{.Number}}: {{.Title}}</h2>
{{if .Fidelity}}<div class="fidelity"><b>{{.Fidelity}}</b>{{if .FidelityDetails}}<ul>
{{range .FidelityDetails}}<li>{{.}}</li>
{{end}}</ul>{{end}}</div>
{{end}}{{range .Notes}}<p class="meta">{{.}}</p>
{{end}}<div class="paper-body">{{if or .Charts .Left}}<div class="charts">
{{range .Charts}}{{.}}
{{end}}{{range .Left}}{{template "ptable" .}}{{end}}</div>
{{end}}<aside class="findings"><h3>The paper found · this run</h3>
{{range .Findings}}<p class="ftext">{{.Text}}</p>{{if .Lines}}<ul>
{{range .Lines}}<li class="{{.Class}}">{{if .Outcome}}<b>{{.Outcome}}</b> {{end}}{{.Text}}</li>
{{end}}</ul>{{end}}
{{else}}<p>The study file records no finding for this.</p>
{{end}}{{if .NotRun}}<h3>Not run here</h3><ul>
{{range .NotRun}}<li class="notrun">{{.}}</li>
{{end}}</ul>
{{end}}</aside></div>
{{range .Tables}}{{template "ptable" .}}{{end}}</section>
{{end -}}
<section id="verdict"><h2>Verdict</h2>
{{if .Base}}<p>Each platform against <b>{{.Base}}</b> (the baseline): the ratio of medians with its 95% bootstrap interval. A difference is called only when the interval excludes 1.</p>
{{if .Overview}}<div class="overview">
{{.Overview}}
</div>
{{end}}{{else}}<p>No baseline platform: nothing was compared (give --baseline, or run more than one platform).</p>
{{end -}}
{{range .Verdict}}<h3>{{.Title}}</h3><ul class="verdict">
{{range .Lines}}<li class="{{.Class}}"><span class="lbl">{{.Label}}</span> {{.Text}}</li>
{{end}}</ul>
{{end}}{{if .NoiseCells}}<p class="meta">{{.NoiseCells}} of {{.NCells}} cells carry noise warnings: see <a href="#noise">the end of the page</a>.</p>
{{end}}</section>
{{if .ScoreErr}}<section id="score"><h2>Overall score (study 004)</h2><p class="error">{{.ScoreErr}}</p></section>
{{else if .Score}}{{with .Score}}<section id="score"><h2>Overall score (study 004)</h2>
<p>Each row is a platform's median relative to {{.Native}}, oriented so that {{.Native}} = 1 and higher is better; the total sums the rows, overall = total / rows.</p>
{{if .Missing}}<div class="warnbox">The run lacks the workloads for: {{.Missing}}. The totals below are over {{.NRows}} rows, not the study's 4, and are not comparable with it.</div>
{{end}}<div class="tw"><table class="score"><thead><tr><th class="l">row</th><th class="l">source</th>{{range .Platforms}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr>{{if .Header}}<th class="l">{{.Title}}</th><td></td>{{else}}<td class="l">{{.Title}}</td><td class="l">{{.Source}}</td>{{end}}
{{- range .Values}}<td>{{if .Bold}}<b>{{.Text}}</b>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</tbody></table></div></section>
{{end}}{{end -}}
{{range .Workloads}}<section class="workload" id="{{.ID}}"><h2>{{.Label}}</h2>
{{range .Metrics}}<h3 id="{{.ID}}">{{.Metric}} <small>({{.Unit}}, {{.Better}} is better)</small></h3>
<div class="charts">
{{range .Charts}}{{.}}
{{end}}</div>
<div class="tw"><table class="cells"><thead><tr><th>instances</th><th class="l">platform</th><th>n</th><th>median</th><th>stdev</th><th>CV</th><th>median 95% CI</th><th>ratio</th><th>ratio 95% CI</th><th class="l">verdict</th></tr></thead><tbody>
{{range .Rows}}<tr class="{{.Class}}"><td>{{.Instances}}</td><td class="l">{{.Label}}</td><td>{{.N}}</td><td>{{.Median}}</td><td>{{.Stdev}}</td><td>{{.CV}}</td><td>{{.CI}}</td><td>{{.Ratio}}</td><td>{{.RatioCI}}</td><td class="l">{{.Verdict}}</td></tr>
{{end}}</tbody></table></div>
{{end}}</section>
{{end -}}
{{if .Base}}<section id="summary"><h2>All differences</h2>
<p>Every cell (each metric and instance count) whose 95% interval of the median ratio to <b>{{.Base}}</b> excludes 1; every other comparison found no detectable difference. Startup phases compared across different platforms get no verdict (each platform marks its phases at its own points).</p>
{{range .Summary}}<h3>{{.Label}}</h3>
{{if not .Rows}}<p class="ok">No platform differs detectably from {{$.Base}} ({{.Compared}} comparisons).</p>
{{else}}<div class="tw"><table class="summary"><thead><tr><th class="l">metric</th><th>instances</th><th class="l">platform</th><th>ratio</th><th>95% CI</th><th>change</th><th class="l">verdict</th></tr></thead><tbody>
{{range .Rows}}<tr class="{{.Class}}"><td class="l">{{.Metric}} ({{.Unit}})</td><td>{{.Instances}}</td><td class="l">{{.Label}}</td><td>{{.Ratio}}</td><td>{{.CI}}</td><td>{{.Change}}</td><td class="l">{{.Verdict}}</td></tr>
{{end}}</tbody></table></div><p class="meta">{{len .Rows}} of {{.Compared}} comparisons differ.</p>
{{end}}{{end -}}
{{if not .AnyDiffers}}<p class="ok"><b>No detectable difference anywhere.</b></p>
{{end}}</section>
{{end -}}
<section id="environment"><h2>Environment</h2>
<details{{if .HostWarnings}} class="has-warnings"{{end}}><summary>{{if .HostWarnings}}{{len .HostWarnings}} host setting(s) known to distort results; {{end}}{{len .Fingerprint}} recorded facts</summary>
{{if .HostWarnings}}<div class="warnbox host-warnings"><b>Settings known to distort results:</b><ul>
{{range .HostWarnings}}<li class="warn">{{.}}</li>
{{end}}</ul></div>
{{else if .Fingerprint}}<p class="ok">No recorded host setting is known to distort the results.</p>
{{end -}}
{{if .Fingerprint}}<div class="fp-wrap"><table class="fp"><tbody>
{{range .Fingerprint}}<tr><th class="l">{{.K}}</th><td>{{.V}}</td></tr>
{{end}}</tbody></table></div>
{{else}}<p>No fingerprint was recorded for this run.</p>
{{end}}</details></section>
<section id="noise"><h2>Noise warnings</h2>
{{if not .Noise}}<p class="ok">No cell shows a cold start, high variation or drift.</p></section>
{{else}}{{range .Noise}}<details class="warnbox noise"><summary><b>{{.Kind}}</b>: {{len .Lines}} of {{$.NCells}} cells</summary><ul>
{{range .Lines}}<li>{{.}}</li>
{{end}}</ul></details>
{{end}}</section>
{{end -}}
<footer>generated by isobench · charts: median per instance count, whiskers ±1 standard deviation, band 95% bootstrap CI of the median; overheads: median ratio to the baseline − 1 with its 95% bootstrap CI</footer>
</body></html>
{{define "ptable"}}<div class="tw"><table class="paper-table">{{if .Caption}}<caption>{{.Caption}}</caption>{{end}}<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{end}}`))

// changeFactor says how a detected difference compares, as a factor
// ("1.39× slower"), never as a percentage of a possibly tiny base.
func changeFactor(c Cell) string {
	if !(c.Ratio > 0) {
		return "-"
	}
	f := c.Ratio
	if (c.Verdict == stats.VerdictSlower) != (c.Better == stats.BetterLower) {
		f = 1 / c.Ratio
	}
	switch c.Verdict {
	case stats.VerdictSlower, stats.VerdictFaster:
		return ratioNum(f) + "× " + c.Verdict
	}
	return ratioNum(c.Ratio) + "×"
}
