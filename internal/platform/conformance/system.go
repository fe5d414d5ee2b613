package conformance

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
)

// SystemStateDir is the state directory of the tests that boot system
// instances: they need the debian image, whose tree takes minutes to
// build, so they reuse the one in $ISOBENCH_STATE_DIR or /var/lib/isobench.
func SystemStateDir() string {
	if d := os.Getenv("ISOBENCH_STATE_DIR"); d != "" {
		return d
	}
	return "/var/lib/isobench"
}

// SystemChecks says what CheckSystemBoots looks for beyond systemd and its
// services.
type SystemChecks struct {
	// Processes: the agent ("isobench") and sshd are among the processes
	// `ps` lists inside the instance.
	Processes bool
}

// CheckSystemBoots boots a system instance of the debian image on p (the
// image prepared already) from base (named "sys", 1 CPU, 512 MiB): systemd
// is PID 1 with journald, D-Bus and sshd active and the masked nginx not;
// its footprint, when the instance reports one, has memory; a command run
// with Exec has Docker's confinement (CheckConfinement) while what systemd
// has is recorded. Then a main process runs among a system's, also with
// Docker's confinement, and gives the instance's status (7).
func CheckSystemBoots(ctx context.Context, t *testing.T, p platform.Platform, base platform.Spec, checks SystemChecks) {
	t.Helper()
	phases := map[string]time.Time{}
	start := time.Now()
	spec := base
	spec.Name, spec.Image, spec.CPUs, spec.Memory = "sys", image.Debian, 1, 512<<20
	spec.Phase = func(n string, at time.Time) { phases[n] = at }
	in, err := p.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.WithoutCancel(ctx))
	t.Logf("system boot: Create %v, created→started (systemd boot) %v",
		time.Since(start).Round(time.Millisecond), phases["started"].Sub(phases["created"]).Round(time.Millisecond))
	var out bytes.Buffer
	script := "cat /proc/1/comm; for u in systemd-journald dbus ssh nginx; do echo $u $(systemctl is-active $u); done"
	want := []string{"systemd\n", "systemd-journald active", "dbus active", "ssh active", "nginx inactive"}
	if checks.Processes {
		script += "; ps -e -o comm= | sort | tr '\\n' ' '"
		want = append(want, "sshd", "isobench")
	}
	if err := in.Exec(ctx, []string{"sh", "-c", script}, platform.ExecIO{Stdout: &out}); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	o := out.String()
	t.Logf("in the system: %s", o)
	for _, w := range want {
		if !strings.Contains(o, w) {
			t.Errorf("%q not in %q", w, o)
		}
	}
	// the workloads isobench runs in a booted system are confined as
	// Docker's; systemd itself is not (it mounts, unshares...): recorded
	got, err := Probe(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	CheckConfinement(t, p.Name(), "exec in the booted system", got)
	out.Reset()
	if err := in.Exec(ctx, []string{"cat", "/proc/1/status"}, platform.ExecIO{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	init, err := Confinement(out.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s booted system's init (PID 1): cap_eff=%s cap_bnd=%s seccomp=%s no_new_privs=%s", p.Name(), init["cap_eff"], init["cap_bnd"], init["seccomp"], init["no_new_privs"])
	facts := in.Facts(ctx)
	for _, k := range []string{"cap_eff", "cap_bnd", "seccomp", "no_new_privs"} {
		if fv, ok := facts["init_"+k]; ok && fv != init[k] {
			t.Errorf("instance fact init_%s=%s, but PID 1 has %s", k, fv, init[k])
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
	// a main process runs among the system's, confined as Docker's, and
	// gives its status
	var mainOut syncBuffer
	in2, err := p.Create(ctx, platform.Spec{Name: "sysmain", Image: image.Debian, MainStdout: &mainOut,
		Main: []string{"sh", "-c", image.AgentPath + " agent probe; exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	defer in2.Close(context.WithoutCancel(ctx))
	code, err := in2.Wait(ctx)
	var ee *platform.ExitError
	if code != 7 && !(errors.As(err, &ee) && ee.Code == 7) {
		t.Errorf("main exit: %d %v, want 7", code, err)
	}
	if got, err := ParseProbe(mainOut.String()); err != nil {
		t.Error(err)
	} else {
		CheckConfinement(t, p.Name(), "main process of a booted system", got)
	}
}
