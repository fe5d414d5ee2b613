package confine

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// The test binary plays the confine wrapper and the probe it runs.
func TestMain(m *testing.M) {
	switch os.Getenv("ISOBENCH_CONFINE_TEST") {
	case "confine":
		os.Setenv("ISOBENCH_CONFINE_TEST", "probe")
		os.Exit(Main(os.Args[1:], os.Stderr))
	case "probe":
		os.Exit(ProbeMain(os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestConfinedExec runs the probe under Main (as root, which the agent
// inside an instance is) and checks it has Docker's confinement.
func TestConfinedExec(t *testing.T) {
	needTable(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root, as the agent inside an instance is")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probe := func(args ...string) map[string]string {
		cmd := exec.Command(self, append(args, "--", self)...)
		cmd.Env = append(os.Environ(), "ISOBENCH_CONFINE_TEST=confine")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("confine %v: %v", args, err)
		}
		var f map[string]string
		if err := json.Unmarshal(out, &f); err != nil {
			t.Fatalf("probe printed %q: %v", out, err)
		}
		t.Logf("confined %v: %v", args, f)
		return f
	}
	before := Probe()
	f := probe()
	want := map[string]string{"cap_eff": DockerCapMask(), "cap_prm": DockerCapMask(), "cap_bnd": DockerCapMask(),
		"cap_inh": HexMask(0), "cap_amb": HexMask(0), "seccomp": "2", "seccomp_probe": DockerSeccompProbe,
		"no_new_privs": before["no_new_privs"]}
	if before["seccomp_filters"] != "" {
		n := map[string]string{"0": "1", "1": "2"}[before["seccomp_filters"]]
		want["seccomp_filters"] = n
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("confined: %s=%s, want %s", k, f[k], v)
		}
	}
	if f["dev_null"] != "rw" {
		t.Errorf("confined: /dev/null %s, want rw", f["dev_null"])
	}
	u := probe("--seccomp=unconfined")
	if u["cap_eff"] != DockerCapMask() || u["seccomp"] != before["seccomp"] || u["seccomp_probe"] == DockerSeccompProbe {
		t.Errorf("--seccomp=unconfined: cap_eff %s seccomp %s probe %q", u["cap_eff"], u["seccomp"], u["seccomp_probe"])
	}
	cmd := exec.Command(self, "--", "/no/such/program")
	cmd.Env = append(os.Environ(), "ISOBENCH_CONFINE_TEST=confine")
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 127 {
		t.Errorf("confine of a missing program: %v, want exit status 127", err)
	}
}
