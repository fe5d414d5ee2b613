package cli

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/suggest"
)

// A mistake in a study file is one line with its line number and key in
// the file's terms: no Go type names, no "unmarshal", "did you mean" for
// a near-miss key.
func TestStudyFileMistakesInPlainWords(t *testing.T) {
	head := "platforms: [native]\nworkloads: [cpu]\n"
	cases := []struct {
		yaml string
		want []string
	}{
		{"platforms: [native]\nworkload: [cpu]\n", []string{"line 2", `unknown key "workload"`, "did you mean workloads?", "hosts", "spread"}},
		{head + "instances: 1,2\n", []string{"line 3", "instances", "want a list", "[1, 2, 4]", `"1,2"`}},
		{head + "reps: [1]\n", []string{"line 3", "reps", `"auto"`}},
		{"platforms: native\nworkloads: [cpu]\n", []string{"line 1", "platforms", "want a list"}},
		{"- native\n", []string{"line 1", "mapping"}},
		{head + "warmup: two\n", []string{"line 3", "warmup", "whole number", `"two"`}},
		{head + "duet: maybe\n", []string{"line 3", "duet", "true or false"}},
		{head + "target: [1]\n", []string{"line 3", "target", "a number"}},
		{head + "platfroms: [docker]\n", []string{"line 3", "did you mean platforms?"}},
		{head + "hosts: local\n", []string{"line 3", "hosts", "want a list"}},
		{head + "workloads2: [x]\nzzz: 1\n", []string{"line 3", `unknown key "workloads2"`}},
		{head + "platforms: [[native]]\n", []string{"line 3", "platforms", "each entry"}},
		{head + "study:\n  bogus_key: 1\n", []string{"line 4", "bogus_key"}},
	}
	for _, c := range cases {
		_, err := decodeStudy([]byte(c.yaml))
		if err == nil {
			t.Errorf("%q: no error", c.yaml)
			continue
		}
		msg := err.Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: %q lacks %q", c.yaml, msg, w)
			}
		}
		for _, bad := range []string{"cli.Study", "study.Meta", "!!", "[]int", "[]string", "unmarshal", "\n", "not found in type"} {
			if strings.Contains(msg, bad) {
				t.Errorf("%q: %q shows Go internals (%q)", c.yaml, msg, bad)
			}
		}
	}
	// a near miss is not suggested when nothing is near
	if _, err := decodeStudy([]byte(head + "zzzzzz: 1\n")); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("zzzzzz: %v", err)
	}
}

// The key list a study file error gives is every key the Study struct
// accepts.
func TestStudyKeysListEveryKey(t *testing.T) {
	typ := reflect.TypeOf(Study{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		if !strings.Contains(studyKeys, " "+name+",") && !strings.Contains(studyKeys, " "+name+" ") {
			t.Errorf("studyKeys lacks %q: %s", name, studyKeys)
		}
	}
}

// An unknown platform or workload gets "did you mean" for a typo, and the
// list of known workloads leaves out the internal ones (_service, ...).
func TestUnknownNamesDidYouMean(t *testing.T) {
	cases := []struct {
		args       []string
		want, nope string
	}{
		{[]string{"run", "--platform", "dokcer", "--workload", "cpu", "--dry-run"}, `unknown platform "dokcer": did you mean docker?`, ""},
		{[]string{"run", "--platform", "dokcer:cpus=1", "--workload", "cpu", "--dry-run"}, "did you mean docker?", ""},
		{[]string{"run", "--platform", "native", "--workload", "tcp-strem", "--dry-run"}, `unknown workload "tcp-strem": did you mean tcp-stream?`, ""},
		{[]string{"run", "--platform", "native", "--workload", "prime95", "--dry-run"}, `unknown workload "prime95" (known: astar`, "did you mean"},
		{[]string{"run", "--platform", "native", "--workload", "_servic", "--dry-run"}, `unknown workload "_servic"`, "_service"},
		{[]string{"image", "build", "--platform", "podmn"}, "did you mean podman?", ""},
	}
	for _, c := range cases {
		st, out, errb := newTestState(t)
		code := Main(context.Background(), st, c.args)
		oneUsageLine(t, code, errb.String())
		msg := errb.String()
		if !strings.Contains(msg, c.want) || (c.nope != "" && strings.Contains(msg, c.nope)) || strings.Contains(msg, "_net-client") || out.Len() != 0 {
			t.Errorf("%v: %q (want %q, not %q or an internal workload)", c.args, msg, c.want, c.nope)
		}
	}
}

func TestClosest(t *testing.T) {
	known := []string{"docker", "docker-in-vm", "podman", "native", "lxc", "lxd", "qemu"}
	for name, want := range map[string]string{"dokcer": "docker", "Docker": "docker", "natve": "native", "lxe": "lxc", "vmware": "", "qemu-kvm": "", "x": ""} {
		if got := suggest.Closest(name, known); got != want {
			t.Errorf("suggest.Closest(%q) = %q, want %q", name, got, want)
		}
	}
}
