package cli

import (
	"bytes"
	"os"

	"gopkg.in/yaml.v3"
)

// Study is the YAML form of a run's matrix; every field can also be given
// as a flag (flags win).
type Study struct {
	Platforms []string `yaml:"platforms" json:"platforms"`
	Workloads []string `yaml:"workloads" json:"workloads"`
	Instances []int    `yaml:"instances" json:"instances"`
	Reps      string   `yaml:"reps" json:"reps"` // a number or "auto"
	RepsCap   int      `yaml:"reps_cap" json:"reps_cap,omitempty"`
	Target    float64  `yaml:"target" json:"target,omitempty"` // percent, for reps: auto
	Warmup    int      `yaml:"warmup" json:"warmup"`
	Baseline  string   `yaml:"baseline" json:"baseline"`
	Image     string   `yaml:"image" json:"image"`
}

// loadStudy reads a study file strictly: unknown keys are errors.
func loadStudy(path string) (Study, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Study{}, usage("study file: %v", err)
	}
	// yaml.v3 decodes `reps: 3` and `reps: auto` alike into the string.
	var st Study
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&st); err != nil {
		return Study{}, usage("study file %s: %v (keys: platforms, workloads, instances, reps (a number or \"auto\"), reps_cap, target, warmup, baseline, image)", path, err)
	}
	if len(st.Platforms) == 0 || len(st.Workloads) == 0 {
		return Study{}, usage("study file %s: needs at least one entry under platforms and under workloads", path)
	}
	for _, n := range st.Instances {
		if n < 1 {
			return Study{}, usage("study file %s: instances must be ≥ 1, got %d", path, n)
		}
	}
	return st, nil
}
