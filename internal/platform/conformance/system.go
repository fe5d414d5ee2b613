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
// its footprint, when the instance reports one, has memory. Then a main
// process runs among a system's and gives the instance's status (7).
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
