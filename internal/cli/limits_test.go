package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Impossible limits are usage errors with one line, found before any
// platform is set up (issue 12, defect 4). Docker is among the platforms in
// the --target cases: were it set up first, a missing engine would fail
// differently and a present one would start a run.
func TestImpossibleLimitsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	study := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "platforms: [native, docker]\nworkloads: [cpu]\n"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"cpus nan", []string{"run", "--platform", "native:cpus=nan", "--workload", "cpu"}, "positive number of cores"},
		{"cpus inf", []string{"run", "--platform", "native:cpus=inf", "--workload", "cpu"}, "too large"},
		{"cpus 1e300", []string{"run", "--platform", "native:cpus=1e300", "--workload", "cpu"}, "too large"},
		{"memory overflow", []string{"run", "--platform", "native:memory=99999999999999999999t", "--workload", "cpu"}, "too large"},
		{"param overflow", []string{"run", "--platform", "native", "--workload", "cpu:threads=99999999999999999999"}, "too large"},
		{"duration overflow", []string{"run", "--platform", "native", "--workload", "cpu:duration=1e300"}, "too large"},
		{"target 0", []string{"run", "--platform", "native", "--platform", "docker", "--workload", "cpu", "--reps", "auto", "--target", "0"}, "--target 0"},
		{"target nan", []string{"run", "--platform", "native", "--platform", "docker", "--workload", "cpu", "--reps", "auto", "--target", "nan"}, "--target NaN"},
		{"target negative", []string{"run", "--platform", "native", "--platform", "docker", "--workload", "cpu", "--reps", "auto", "--target", "-5"}, "above 0"},
		{"target 100", []string{"run", "--platform", "native", "--platform", "docker", "--workload", "cpu", "--target", "100"}, "below 100"},
		{"instances too many", []string{"run", "--platform", "native", "--workload", "cpu", "--instances", "1,1000000"}, "too large"},
		{"instances overflow", []string{"run", "--platform", "native", "--workload", "cpu", "--instances", "99999999999999999999"}, "too large"},
		{"reps overflow", []string{"run", "--platform", "native", "--workload", "cpu", "--reps", "99999999999999999999"}, "too large"},
		{"file instances 1.5", []string{"run", study("frac.yaml", head+"instances: [1.5]\n")}, `"1.5"`},
		{"file instances 1e6", []string{"run", study("big.yaml", head+"instances: [1000000]\n")}, "too large"},
		{"file instances overflow", []string{"run", study("over.yaml", head+"instances: [99999999999999999999]\n")}, "too large"},
		{"file instances 0", []string{"run", study("zero.yaml", head+"instances: [0]\n")}, "from 1 to 4096"},
		{"file instances string", []string{"run", study("str.yaml", head+"instances: [two]\n")}, "from 1 to 4096"},
		{"file second document", []string{"run", study("two.yaml", head+"---\nplatforms: [docker]\n")}, "second YAML document"},
		{"file target 0", []string{"run", study("t0.yaml", head+"reps: auto\ntarget: 0\n")}, "target 0"},
		{"file target nan", []string{"run", study("tnan.yaml", head+"reps: auto\ntarget: .nan\n")}, "target .nan"},
		{"file empty", []string{"run", study("empty.yaml", "")}, "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			t.Chdir(dir)
			st, out, errb := newTestState(t)
			code := Main(context.Background(), st, c.args)
			oneUsageLine(t, code, errb.String())
			if !strings.Contains(errb.String(), c.want) {
				t.Fatalf("stderr %q lacks %q", errb.String(), c.want)
			}
			if out.Len() != 0 {
				t.Fatalf("stdout: %q", out.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "isobench.db")); err == nil {
				t.Fatal("a store was created")
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Fatalf("files left in the temp dir: %v", left)
			}
		})
	}
}

// A study file's values are kept as written when they are valid.
func TestDecodeStudyKeepsValidValues(t *testing.T) {
	st, err := decodeStudy([]byte("platforms: [native]\nworkloads: [cpu]\ninstances: [1, 2, 4096]\nreps: auto\ntarget: 2.5\n"))
	if err != nil || len(st.Instances) != 3 || st.Instances[2] != 4096 || st.Reps != "auto" || st.Target != 2.5 {
		t.Fatalf("%+v %v", st, err)
	}
	st, err = decodeStudy([]byte("platforms: [native]\nworkloads: [cpu]\nreps: 3\n"))
	if err != nil || st.Reps != "3" {
		t.Fatalf("reps: 3 -> %+v %v", st, err)
	}
}
