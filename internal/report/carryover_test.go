package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/hoststate"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
)

// webCell is study 004's web cell at 8,000 users as issue 29 saw it:
// native's repetitions slowed down as the TIME_WAIT sockets the ones
// before left grew, while every container started in a fresh network
// namespace. tw, when set, is the TIME_WAIT count each repetition
// started from, recorded as the runner records it.
func webCell(native, docker []float64, nativeTW, dockerTW []int) []sample.Sample {
	var out []sample.Sample
	add := func(platform string, values []float64, tw []int) {
		for rep, v := range values {
			var tags map[string]string
			if tw != nil {
				tags = map[string]string{hoststate.TagPrefix + "tcp_time_wait": strconv.Itoa(tw[rep]), hoststate.TagPrefix + "leftovers": "0"}
			}
			for _, inst := range []int{0, sample.AggregateInstance} {
				out = append(out, sample.Sample{RunID: 1, Platform: platform, Workload: "http", Params: "users=8000", Instances: 1, Instance: inst,
					Rep: rep, Metric: "total_time", Unit: "s", Better: sample.Lower, Value: v, Start: time.Unix(1e9, 0), Tags: tags})
			}
		}
	}
	add("native", native, nativeTW)
	add("docker", docker, dockerTW)
	return out
}

func cellOf(t *testing.T, cells []Cell, platform string) Cell {
	t.Helper()
	for _, c := range cells {
		if c.Platform == platform {
			return c
		}
	}
	t.Fatalf("no cell of %s in %v", platform, cells)
	return Cell{}
}

func warningsOf(c Cell, kind string) []string {
	var out []string
	for _, w := range c.Warnings {
		if strings.HasPrefix(w, kind+":") {
			out = append(out, w)
		}
	}
	return out
}

// TestCarriedOverBaselineIsNoPlatformsMerit: the baseline's repetitions
// that started from a growing TIME_WAIT count are flagged, naming the
// state, and a container that reads faster than it says why, in the
// cells and on the summary line.
func TestCarriedOverBaselineIsNoPlatformsMerit(t *testing.T) {
	samples := webCell([]float64{2.28, 6.73, 43.9}, []float64{1.1, 2.1, 1.5}, []int{0, 9000, 28000}, []int{40, 10, 25})
	cells := Cells(samples, Options{Baseline: "native", Stats: stats.Options{Seed: 1}})
	native, docker := cellOf(t, cells, "native"), cellOf(t, cells, "docker")

	ws := warningsOf(native, hoststate.Kind)
	if len(ws) != 2 || !strings.Contains(ws[0], "repetition 3 with 28,000 TIME_WAIT sockets") ||
		!strings.Contains(ws[1], "the more TIME_WAIT sockets a repetition started with, the slower it ran (0 → 28,000") {
		t.Errorf("native's carry-over warnings: %q", ws)
	}
	if len(warningsOf(native, hoststate.BaselineKind)) != 0 {
		t.Errorf("the baseline is warned about itself: %q", native.Warnings)
	}
	ws = warningsOf(docker, hoststate.BaselineKind)
	if len(ws) != 1 || !strings.Contains(ws[0], "the repetitions of native started from different host states") ||
		!strings.Contains(ws[0], "9,000 TIME_WAIT sockets on native, 25 on docker") || !strings.Contains(ws[0], "as much as docker's merit") {
		t.Errorf("docker's warnings: %q", docker.Warnings)
	}

	var sum bytes.Buffer
	if err := Summary(&sum, cells, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(sum.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "docker ") {
			line = l
		}
	}
	if !strings.Contains(line, "the host's state differed: see baseline carry-over") {
		t.Errorf("docker's summary line does not say the ratio is not its merit: %q\n%s", line, sum.String())
	}
	for _, want := range []string{"warning: 1 cell whose repetitions started from different host states", "warning: 1 cell compared with a baseline whose host state differed"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
}

// TestNoCarryOverWhereTheStatesAgree: repetitions that started alike, or
// whose state was not recorded (older stores, remote hosts), are not
// flagged, however noisy.
func TestNoCarryOverWhereTheStatesAgree(t *testing.T) {
	for name, tw := range map[string][2][]int{
		"alike":      {{100, 300, 200}, {40, 10, 25}},
		"unrecorded": {nil, nil},
	} {
		cells := Cells(webCell([]float64{2.28, 6.73, 43.9}, []float64{1.1, 2.1, 1.5}, tw[0], tw[1]), Options{Baseline: "native", Stats: stats.Options{Seed: 1}})
		for _, c := range cells {
			if ws := append(warningsOf(c, hoststate.Kind), warningsOf(c, hoststate.BaselineKind)...); len(ws) > 0 {
				t.Errorf("%s: %s warned %q", name, c.Platform, ws)
			}
		}
	}
}
