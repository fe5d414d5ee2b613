package nspawn

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

func newSystem(t *testing.T, agent, state string) platform.Platform {
	t.Helper()
	o, err := platform.ParseOptions("nspawn:boot=true", Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Factory.New(t.Context(), o, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSystemRefusesMinimal: boot=true with an image without an init
// system is one clear error.
func TestSystemRefusesMinimal(t *testing.T) {
	p := newSystem(t, "/bin/true", t.TempDir())
	_, err := p.Create(t.Context(), platform.Spec{Image: image.Minimal})
	if err == nil || !strings.Contains(err.Error(), "boot=true") || !strings.Contains(err.Error(), "image=debian") {
		t.Fatalf("boot=true on minimal: %v", err)
	}
	o, _ := platform.ParseOptions("nspawn:boot=bogus", Factory.Extra...)
	if _, err := Factory.New(t.Context(), o, platform.Env{AgentBinary: "/bin/true", StateDir: t.TempDir()}); err == nil {
		t.Error("boot=bogus accepted")
	}
}

// TestSystemBoots boots a system container and checks that systemd is PID
// 1 with its usual services (journald, D-Bus, sshd) running, the masked
// servers not, and that the agent runs as a process among them.
func TestSystemBoots(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a system")
	}
	agent := conformance.BuildAgent(t)
	p := newSystem(t, agent, conformance.SystemStateDir())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	if err := p.Available(ctx); err != nil {
		conformance.SkipUnlessRequired(t, "nspawn", err)
	}
	if err := p.(platform.Preparer).Prepare(ctx, image.Debian); err != nil {
		t.Fatal(err)
	}
	conformance.CheckSystemBoots(ctx, t, p, platform.Spec{Network: platform.NetNone}, conformance.SystemChecks{Processes: true})
}

// TestSystemConformance runs the platform suite on system containers.
func TestSystemConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("boots systems")
	}
	agent := conformance.BuildAgent(t)
	state := conformance.SystemStateDir()
	rec := &localtest.Recorder{}
	conformance.Run(t, func(t *testing.T) platform.Platform {
		rec.Platform = newSystem(t, agent, state)
		return rec
	}, conformance.Opts{
		Image: image.Debian,
		Leftovers: func(ctx context.Context) ([]string, error) {
			all, err := localtest.Leftovers(ctx, Factory, state)
			return rec.Mine(all), err
		},
		Timeout: 5 * time.Minute,
	})
}

// TestSystemFootprintCountsServices: a booted system's processes (systemd,
// journald, D-Bus... in the sub-cgroups systemd and nspawn make) all sit
// at or below the cgroup Footprint reads, so its services are counted.
func TestSystemFootprintCountsServices(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a system")
	}
	agent := conformance.BuildAgent(t)
	state := conformance.SystemStateDir()
	p := newSystem(t, agent, state)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := p.Available(ctx); err != nil {
		conformance.SkipUnlessRequired(t, "nspawn", err)
	}
	inst, err := p.Create(ctx, platform.Spec{Image: image.Debian, Network: platform.NetNone})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	in := inst.(*Instance)
	fp, err := in.Footprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mem, cpu := in.cg.g.AccountingDirs()
	var names []string
	var walk func(pid int)
	walk = func(pid int) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		names = append(names, strings.TrimSpace(string(comm)))
		m, c, err := hostos.ProcessCgroups(pid)
		if err != nil {
			t.Errorf("pid %d (%s): %v", pid, comm, err)
		} else if !under(m, mem) || !under(c, cpu) {
			t.Errorf("pid %d (%s) is in %s and %s, outside the counted %s and %s", pid, strings.TrimSpace(string(comm)), m, c, mem, cpu)
		}
		for _, c := range children(pid) {
			walk(c)
		}
	}
	walk(in.leader)
	if !slices.Contains(names, "systemd-journal") {
		t.Errorf("no journald among the system's processes %v", names)
	}
	if fp.MemoryBytes <= 0 || fp.CPUSeconds <= 0 || len(fp.EnginePIDs) != 1 {
		t.Errorf("footprint %+v", fp)
	}
	t.Logf("booted system: %d processes %v, memory %d KiB, cpu %.3f s, disk %d KiB", len(names), names, fp.MemoryBytes>>10, fp.CPUSeconds, fp.DiskBytes>>10)
}

// under reports whether dir is base or below it.
func under(dir, base string) bool {
	return dir == base || strings.HasPrefix(dir, base+"/")
}
