package platform

import (
	"strings"
	"testing"
)

// Impossible limits are refused when the options are parsed (issue 12,
// defect 4: cpus=nan and cpus=1e300 ran unlimited and tagged the samples).
func TestParseOptionsRefusesImpossibleLimits(t *testing.T) {
	cases := map[string]string{
		"native:cpus=nan":                     "positive number of cores",
		"native:cpus=NaN":                     "positive number of cores",
		"native:cpus=-inf":                    "positive number of cores",
		"native:cpus=0":                       "positive number of cores",
		"native:cpus=-1":                      "positive number of cores",
		"native:cpus=inf":                     "too large",
		"native:cpus=+Inf":                    "too large",
		"native:cpus=1e300":                   "too large",
		"native:cpus=1e400":                   "too large",
		"native:cpus=1025":                    "too large",
		"native:memory=99999999999999999999t": "too large",
		"native:memory=1e300":                 "too large",
		"native:memory=2000t":                 "too large",
		"native:memory=nan":                   "at least 4m",
		"native:memory=1k":                    "at least 4m",
	}
	for in, want := range cases {
		o, err := ParseOptions(in)
		if err == nil {
			t.Errorf("%s accepted: %+v", in, o.Base)
			continue
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %q, want one line containing %q", in, err, want)
		}
	}
	for in, cpus := range map[string]float64{"native:cpus=0.5": 0.5, "native:cpus=1024": 1024, "native:cpus=2": 2} {
		o, err := ParseOptions(in)
		if err != nil || o.Base.CPUs != cpus {
			t.Errorf("%s: %+v %v", in, o.Base, err)
		}
	}
	if o, err := ParseOptions("native:memory=1024t"); err != nil || o.Base.Memory != 1<<50 {
		t.Errorf("memory=1024t: %+v %v", o.Base, err)
	}
}
