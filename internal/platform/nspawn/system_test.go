package nspawn

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

// systemState is the state dir of the boot=true tests: they need the
// debian image, whose tree takes minutes to build, so they reuse the one
// in $ISOBENCH_STATE_DIR or /var/lib/isobench.
func systemState() string {
	if d := os.Getenv("ISOBENCH_STATE_DIR"); d != "" {
		return d
	}
	return "/var/lib/isobench"
}

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
	p := newSystem(t, agent, systemState())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	if err := p.Available(ctx); err != nil {
		conformance.SkipUnlessRequired(t, "nspawn", err)
	}
	if err := p.(platform.Preparer).Prepare(ctx, image.Debian); err != nil {
		t.Fatal(err)
	}
	phases := map[string]time.Time{}
	start := time.Now()
	in, err := p.Create(ctx, platform.Spec{Name: "sys", Image: image.Debian, CPUs: 1, Memory: 512 << 20, Network: platform.NetNone,
		Phase: func(n string, at time.Time) { phases[n] = at }})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.WithoutCancel(ctx))
	t.Logf("system container boot: Create %v, created→started (systemd boot) %v",
		time.Since(start).Round(time.Millisecond), phases["started"].Sub(phases["created"]).Round(time.Millisecond))
	var out bytes.Buffer
	script := "cat /proc/1/comm; for u in systemd-journald dbus ssh nginx; do echo $u $(systemctl is-active $u); done; ps -e -o comm= | sort | tr '\\n' ' '"
	if err := in.Exec(ctx, []string{"sh", "-c", script}, platform.ExecIO{Stdout: &out}); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	o := out.String()
	t.Logf("in the system container: %s", o)
	for _, want := range []string{"systemd\n", "systemd-journald active", "dbus active", "ssh active", "nginx inactive", "sshd", "isobench"} {
		if !strings.Contains(o, want) {
			t.Errorf("%q not in %q", want, o)
		}
	}
	if fp, ok := in.(platform.Footprinter); ok {
		f, err := fp.Footprint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("footprint of the booted system: memory %d MiB, cpu %.2f s", f.MemoryBytes>>20, f.CPUSeconds)
		if f.MemoryBytes <= 0 {
			t.Errorf("footprint memory %d", f.MemoryBytes)
		}
	}
	// a main process runs among the system's and gives its status
	in2, err := p.Create(ctx, platform.Spec{Name: "sysmain", Image: image.Debian, Main: []string{"sh", "-c", "exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	defer in2.Close(context.WithoutCancel(ctx))
	code, err := in2.Wait(ctx)
	var ee *platform.ExitError
	if code != 7 && !(errors.As(err, &ee) && ee.Code == 7) {
		t.Errorf("main exit: %d %v, want 7", code, err)
	}
}

// TestSystemConformance runs the platform suite on system containers.
func TestSystemConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("boots systems")
	}
	agent := conformance.BuildAgent(t)
	state := systemState()
	rec := &localtest.Recorder{}
	conformance.Run(t, func(t *testing.T) platform.Platform {
		rec.Platform = newSystem(t, agent, state)
		return rec
	}, conformance.Opts{
		Image: image.Debian,
		Leftovers: func(ctx context.Context) ([]string, error) {
			all, err := Leftovers(ctx, state)
			return rec.Mine(all), err
		},
		Timeout: 5 * time.Minute,
	})
}
