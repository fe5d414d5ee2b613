package cli

import (
	"strings"
	"testing"
)

// baseline: PLATFORM@N is accepted when PLATFORM is run and N is one of
// the instance counts; a label with an @ of its own stays a label.
func TestBaselinePinnedToInstanceCount(t *testing.T) {
	st, _, _ := newTestState(t)
	ok := Study{Platforms: []string{"native", "docker"}, Workloads: []string{"cpu"}, Instances: []int{1, 2, 4}, Baseline: "native@1"}
	if _, _, err := st.plan(&ok); err != nil {
		t.Fatalf("native@1: %v", err)
	}
	if ok.Baseline != "native@1" {
		t.Errorf("baseline became %q", ok.Baseline)
	}
	for base, want := range map[string]string{
		"native@3": "3 is not one of the instance counts",
		"lxc@1":    `baseline "lxc" is not one of the platforms`,
		"native@x": `baseline native@x: what follows @ is an instance count of native (one of 1, 2, 4), e.g. native@1; "x" is not`,
	} {
		s := Study{Platforms: []string{"native", "docker"}, Workloads: []string{"cpu"}, Instances: []int{1, 2, 4}, Baseline: base}
		_, _, err := st.plan(&s)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", base, err, want)
		}
	}
	// The study file form.
	s, err := decodeStudy([]byte("platforms: [native, docker]\nworkloads: [cpu]\ninstances: [1, 2]\nbaseline: native@1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.plan(&s); err != nil || s.Baseline != "native@1" {
		t.Fatalf("study file baseline native@1: %v (%q)", err, s.Baseline)
	}
}
