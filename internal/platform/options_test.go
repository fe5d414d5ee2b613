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

// go test -run=^$ -fuzz=FuzzParseOptions -fuzztime=10s ./internal/platform
func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{
		"native", "docker:cpus=1,memory=2g,network=bridge,storage=volume", "docker:network=nat", "podman:network=host",
		"lxc:cpus=0.5", "native:cpus=nan", "native:cpus=inf", "native:cpus=1e300", "native:cpus=1025", "native:cpus=-0",
		"native:memory=99999999999999999999t", "native:memory=4m", "native:memory=3m", "native:memory=nan", "gvisor:network=sandbox",
		"qemu:cpus=1,disk=8g", "docker:runtime=runsc", "docker:bogus=1", "docker:cpus=1,cpus=2", "", ":", "docker:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOptions(s, "runtime", "disk")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		b := o.Base
		if b.CPUs != 0 && !(b.CPUs > 0 && b.CPUs <= 1024) {
			t.Fatalf("%q: cpus %v accepted", s, b.CPUs)
		}
		if b.Memory != 0 && !(b.Memory >= 4<<20 && b.Memory <= 1<<50) {
			t.Fatalf("%q: memory %d accepted", s, b.Memory)
		}
		switch b.Network {
		case "", NetBridge, NetHost, NetNone, NetNAT:
		default:
			t.Fatalf("%q: network %q accepted", s, b.Network)
		}
		switch b.Storage {
		case "", StorageRootfs, StorageVolume:
		default:
			t.Fatalf("%q: storage %q accepted", s, b.Storage)
		}
		// The canonical form stored with samples parses to the same limits.
		back, err := ParseOptions(o.Name+":"+o.Canonical(), "runtime", "disk")
		if err != nil || back.Base.CPUs != b.CPUs || back.Base.Memory != b.Memory || back.Base.Network != b.Network || back.Base.Storage != b.Storage {
			t.Fatalf("%q: canonical %q reads back as %+v, %v", s, o.Canonical(), back.Base, err)
		}
	})
}
