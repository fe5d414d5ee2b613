package cli

import (
	"math"
	"testing"
)

// go test -run=^$ -fuzz=FuzzDecodeStudy -fuzztime=10s ./internal/cli
func FuzzDecodeStudy(f *testing.F) {
	for _, s := range []string{
		"platforms: [native, \"docker:storage=volume\", \"docker:storage=rootfs\"]\nworkloads: [\"cpu:threads=8,max-prime=10000,duration=10s\", \"memory:block-size=1k,threads=8\", startup]\ninstances: [1, 2, 4, 8]\nreps: 10\nwarmup: 1\nbaseline: native\n",
		"platforms: [native]\nworkloads: [cpu]\nreps: auto\ntarget: 2.5\nreps_cap: 12\n",
		"platforms: [native]\nworkloads: [cpu]\ninstances: [1.5]\n",
		"platforms: [native]\nworkloads: [cpu]\ninstances: [1000000]\n",
		"platforms: [native]\nworkloads: [cpu]\ninstances: [99999999999999999999]\n",
		"platforms: [native]\nworkloads: [cpu]\ninstances: [0x10, 0o7, 1_0]\n",
		"platforms: [native]\nworkloads: [cpu]\ntarget: .nan\n",
		"platforms: [native]\nworkloads: [cpu]\ntarget: 0\n",
		"platforms: [native]\nworkloads: [cpu]\n---\nplatforms: [docker]\n",
		"platforms: [native]\nworkloads: [cpu]\nrepz: 3\n",
		"platforms: [native\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n",
		"platforms: &p [native]\nworkloads: *p\ninstances: !!str 1\n",
		"[1, 2]", "", "---", "~", "platforms: {a: 1}\nworkloads: [cpu]\n", "instances: [[1]]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeStudy(b)
		if err != nil {
			return
		}
		if len(st.Platforms) == 0 || len(st.Workloads) == 0 {
			t.Fatalf("accepted without platforms or workloads: %+v", st)
		}
		for _, n := range st.Instances {
			if n < 1 || n > maxInstances {
				t.Fatalf("instances %v accepted from %q", st.Instances, b)
			}
		}
		if st.Target != 0 && !(st.Target > 0 && st.Target < 100) || math.IsNaN(st.Target) {
			t.Fatalf("target %v accepted from %q", st.Target, b)
		}
	})
}
