package cli

import (
	"bytes"
	"os"
	"strconv"

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
	type strict struct {
		Platforms []string `yaml:"platforms"`
		Workloads []string `yaml:"workloads"`
		Instances []int    `yaml:"instances"`
		Reps      any      `yaml:"reps"`
		RepsCap   int      `yaml:"reps_cap"`
		Target    float64  `yaml:"target"`
		Warmup    int      `yaml:"warmup"`
		Baseline  string   `yaml:"baseline"`
		Image     string   `yaml:"image"`
	}
	var s strict
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return Study{}, usage("study file %s: %v (keys: platforms, workloads, instances, reps, reps_cap, target, warmup, baseline, image)", path, err)
	}
	st := Study{Platforms: s.Platforms, Workloads: s.Workloads, Instances: s.Instances, RepsCap: s.RepsCap, Target: s.Target,
		Warmup: s.Warmup, Baseline: s.Baseline, Image: s.Image}
	switch v := s.Reps.(type) {
	case nil:
	case int:
		st.Reps = strconv.Itoa(v)
	case string:
		st.Reps = v
	default:
		return Study{}, usage("study file %s: reps must be a number or \"auto\", got %v", path, v)
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
