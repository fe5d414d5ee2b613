package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/confine"
	"github.com/isobench/isobench/internal/platform"
)

// ConfinedByDefault lists the platforms whose workload processes (the
// main process and every Exec) get Docker's default confinement unless
// told otherwise: Docker's capability set, its seccomp filter and no
// other, no no_new_privs, and its devices. What the probe measures in
// them must equal DockerConfinement. The others (native, gVisor, QEMU,
// Kubernetes...) have theirs recorded.
var ConfinedByDefault = []string{"runc", "crun", "docker", "podman", "lxc", "lxd", "nspawn"}

// SwapLimited lists the platforms on which memory= means what Docker's
// --memory does with isobench's --memory-swap of the same size: memory
// and swap together are limited to it (no swap beyond the limit).
var SwapLimited = append([]string{"native"}, ConfinedByDefault...)

// confinementFacts are the probe's facts a platform may also report for
// its instances; where it does, they must agree.
var confinementFacts = []string{"cap_eff", "cap_prm", "cap_bnd", "seccomp", "seccomp_filters", "no_new_privs", "devices_list"}

// DockerConfinement is what the probe measures in a process of a Docker
// container with Docker's defaults (the docker platform's own run of this
// suite checks it against Docker). devices_list and seccomp_filters are
// compared only where the probe can read them (cgroup v1; kernel 5.9).
func DockerConfinement() map[string]string {
	caps := confine.DockerCapMask()
	return map[string]string{
		"cap_eff": caps, "cap_prm": caps, "cap_bnd": caps, "cap_inh": confine.HexMask(0), "cap_amb": confine.HexMask(0),
		"no_new_privs": "0", "seccomp": "2", "seccomp_filters": "1", "seccomp_probe": confine.DockerSeccompProbe,
		"dev_null": "rw", "dev_block": "denied", "dev_kmsg": "denied", "dev_fuse": "denied",
		"devices_list": confine.DockerDevicesList(),
	}
}

// Probe runs "isobench agent probe" in inst and returns what it measured
// (confine.Probe): the confinement and limits of a process the platform
// runs there.
func Probe(ctx context.Context, inst platform.Instance) (map[string]string, error) {
	out, errs, err := run(ctx, inst, nil, platform.AgentPlaceholder, "agent", "probe")
	if err != nil {
		return nil, fmt.Errorf("agent probe: %w (stderr %q)", err, errs)
	}
	return ParseProbe(out)
}

// ParseProbe reads the probe's JSON line.
func ParseProbe(out string) (map[string]string, error) {
	var f map[string]string
	if err := json.Unmarshal(bytes.TrimSpace([]byte(out)), &f); err != nil {
		return nil, fmt.Errorf("agent probe printed %q: %w", out, err)
	}
	return f, nil
}

// DiffConfinement lists how got differs from Docker's confinement, one
// "key=got, Docker's want" a difference; nil when it is Docker's.
func DiffConfinement(got map[string]string) []string {
	var out []string
	for k, want := range DockerConfinement() {
		v, ok := got[k]
		if !ok && (k == "devices_list" || k == "seccomp_filters") {
			continue // not readable here
		}
		if v != want {
			out = append(out, fmt.Sprintf("%s=%q, Docker's %q", k, v, want))
		}
	}
	if cwd := got["cwd"]; !strings.HasPrefix(cwd, "/") {
		out = append(out, fmt.Sprintf("cwd=%q, not a directory in the instance's root", cwd))
	}
	sort.Strings(out)
	return out
}

// CheckConfinement records what a workload process (what) of an instance
// of platform name has, and on the platforms in ConfinedByDefault fails t
// unless it is Docker's default confinement.
func CheckConfinement(t *testing.T, name, what string, got map[string]string) {
	t.Helper()
	t.Logf("%s %s: %s", name, what, FormatProbe(got))
	if !slices.Contains(ConfinedByDefault, name) {
		return
	}
	for _, d := range DiffConfinement(got) {
		t.Errorf("%s %s: %s", name, what, d)
	}
}

// FormatProbe renders the probe's facts, sorted by name.
func FormatProbe(f map[string]string) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%q", k, f[k])
	}
	return b.String()
}

// testConfinement probes a command run with Exec and a main process: their
// capability sets, seccomp mode, filters and what the filter answers,
// no_new_privs, device access and working directory, recorded; facts the
// platform reports under the same names must agree with the command's;
// on the platforms in ConfinedByDefault both must be Docker's.
func (s *suite) testConfinement(t *testing.T) {
	t.Run("exec", func(t *testing.T) {
		ctx := s.ctx(t)
		inst := s.create(t, s.spec())
		got, err := Probe(ctx, inst)
		if err != nil {
			t.Fatal(err)
		}
		CheckConfinement(t, s.p.Name(), "exec", got)
		facts := inst.Facts(ctx)
		for _, k := range confinementFacts {
			if fv, ok := facts[k]; ok && got[k] != "" && fv != got[k] {
				t.Errorf("instance fact %s=%s, but a command inside has %s", k, fv, got[k])
			}
		}
	})
	t.Run("main", func(t *testing.T) {
		ctx := s.ctx(t)
		var out syncBuffer
		sp := s.spec()
		sp.Main = []string{platform.AgentPlaceholder, "agent", "probe"}
		sp.MainStdout = &out
		inst := s.create(t, sp)
		if code, err := inst.Wait(ctx); err != nil || code != 0 {
			t.Fatalf("main probe: Wait = %d, %v", code, err)
		}
		got, err := ParseProbe(out.String())
		if err != nil {
			t.Fatal(err)
		}
		CheckConfinement(t, s.p.Name(), "main process", got)
	})
}

// checkSwap probes the memory limits a workload of inst (created with
// memory bytes) sees. On the platforms in SwapLimited, memory and swap
// together must be limited to memory (as the instance's memory_swap_limit
// fact says); where the kernel does not account swap, the group's
// swappiness must be 0 and the fact swap_limit say so.
func (s *suite) checkSwap(t *testing.T, ctx context.Context, inst platform.Instance, memory int64, facts map[string]string) {
	got, err := Probe(ctx, inst)
	limited := slices.Contains(SwapLimited, s.p.Name())
	if err != nil {
		if limited {
			t.Error(err)
		} else {
			t.Logf("no probe: %v", err)
		}
		return
	}
	t.Logf("%s memory as a workload sees it: memory_limit=%s memory_swap_limit=%s memory_swappiness=%s swap_accounting=%s",
		s.p.Name(), got["memory_limit"], got["memory_swap_limit"], got["memory_swappiness"], got["swap_accounting"])
	if !limited {
		return
	}
	if got["swap_accounting"] != "1" {
		if sw := got["memory_swappiness"]; sw != "" && sw != "0" {
			t.Errorf("no swap accounting here, and the group's swappiness is %s, want 0", sw)
		}
		if facts["swap_limit"] != cgroup.SwapUnavailable {
			t.Errorf("no swap accounting here: fact swap_limit=%q, want %q", facts["swap_limit"], cgroup.SwapUnavailable)
		}
		return
	}
	// the kernel rounds limits down to whole pages
	if v, err := strconv.ParseInt(got["memory_swap_limit"], 10, 64); err != nil || v > memory || v < memory-64<<10 {
		t.Errorf("memory+swap limit inside is %q, want %d (memory=%d and no swap beyond it, as Docker's --memory-swap)", got["memory_swap_limit"], memory, memory)
	}
	if want := strconv.FormatInt(memory, 10); facts["memory_swap_limit"] != want {
		t.Errorf("instance fact memory_swap_limit=%q, want %s", facts["memory_swap_limit"], want)
	}
}
