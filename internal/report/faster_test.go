package report

import (
	"strings"
	"testing"
)

// A platform that reads better than native beyond its interval carries a
// warning naming what else may differ; within its interval, worse, on a
// baseline that is not the bare host, or native itself, it carries none.
func TestFasterThanHost(t *testing.T) {
	isHost := func(p string) bool { return p == "native" } // the registry's answer
	native := Cell{Platform: "native", Workload: "http", Metric: "total_time", Better: "lower"}
	lxc := Cell{Platform: "lxc", Options: "init=system", Workload: "http", Metric: "total_time", Better: "lower",
		Ratio: 0.813, RatioCILow: 0.782, RatioCIHigh: 0.952, RatioValid: true}
	w := fasterThanHost(native, lxc, isHost)
	if !strings.HasPrefix(w, FasterKind+": lxc:init=system reads better than native") || !strings.Contains(w, "0.813 [0.782, 0.952]") || !strings.Contains(w, "loopback") {
		t.Errorf("warning %q", w)
	}
	rate := lxc
	rate.Better, rate.Ratio, rate.RatioCILow, rate.RatioCIHigh = "higher", 1.2, 1.1, 1.3
	if fasterThanHost(native, rate, isHost) == "" {
		t.Error("a higher-is-better rate above native beyond its interval: no warning")
	}
	for name, c := range map[string]Cell{
		"interval reaches 1": func() Cell { x := lxc; x.RatioCIHigh = 1.01; return x }(),
		"slower":             func() Cell { x := lxc; x.Ratio, x.RatioCILow, x.RatioCIHigh = 1.2, 1.1, 1.3; return x }(),
		"invalid ratio":      func() Cell { x := lxc; x.RatioValid = false; return x }(),
		"native itself":      func() Cell { x := lxc; x.Platform, x.Options = "native", ""; return x }(),
	} {
		if w := fasterThanHost(native, c, isHost); w != "" {
			t.Errorf("%s: warned %q", name, w)
		}
	}
	if w := fasterThanHost(Cell{Platform: "docker", Better: "lower"}, lxc, isHost); w != "" {
		t.Errorf("docker baseline: warned %q", w)
	}
	if w := fasterThanHost(native, lxc, nil); w != "" {
		t.Errorf("no IsHost given: warned %q", w)
	}
}
