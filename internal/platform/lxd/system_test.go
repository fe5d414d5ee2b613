package lxd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

// systemState is the state dir of the init=system tests: they need the
// debian image, whose tree takes minutes to build, so they reuse the one
// in $ISOBENCH_STATE_DIR or /var/lib/isobench.
func systemState() string {
	if d := os.Getenv("ISOBENCH_STATE_DIR"); d != "" {
		return d
	}
	return "/var/lib/isobench"
}

func TestSystemOptions(t *testing.T) {
	p := newPlatform(t, "lxd:init=system", "/bin/true", t.TempDir())
	if _, err := p.Create(t.Context(), platform.Spec{Image: image.Minimal}); err == nil || !strings.Contains(err.Error(), "image=debian") {
		t.Errorf("init=system on minimal: %v", err)
	}
	if !strings.Contains(p.rawLXC(), "lxc.init.cmd = /sbin/init systemd.mask=nginx.service") {
		t.Errorf("raw.lxc %q", p.rawLXC())
	}
	o, _ := platform.ParseOptions("lxd:init=bogus", Factory.Extra...)
	if _, err := New(t.Context(), o, platform.Env{AgentBinary: "/bin/true", StateDir: t.TempDir()}); err == nil {
		t.Error("init=bogus accepted")
	}
}

// TestSystemBoots boots a system container: systemd is PID 1 with
// journald, D-Bus and sshd active and the image's servers masked; a main
// process runs among them and gives the instance's status.
func TestSystemBoots(t *testing.T) {
	skipUnavailable(t)
	agent := conformance.BuildAgent(t)
	p := newPlatform(t, "lxd:init=system", agent, systemState())
	removeNewDebianImages(t, p)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	if err := p.Prepare(ctx, image.Debian); err != nil {
		t.Fatal(err)
	}
	phases := map[string]time.Time{}
	start := time.Now()
	in, err := p.Create(ctx, platform.Spec{Name: "sys", Image: image.Debian, CPUs: 1, Memory: 512 << 20,
		Phase: func(n string, at time.Time) { phases[n] = at }})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.WithoutCancel(ctx))
	t.Logf("system container boot: Create %v, created→started %v", time.Since(start).Round(time.Millisecond), phases["started"].Sub(phases["created"]).Round(time.Millisecond))
	var out bytes.Buffer
	script := "cat /proc/1/comm; for u in systemd-journald dbus ssh nginx; do echo $u $(systemctl is-active $u); done"
	if err := in.Exec(ctx, []string{"sh", "-c", script}, platform.ExecIO{Stdout: &out}); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	o := out.String()
	t.Logf("in the system container: %s", o)
	for _, want := range []string{"systemd\n", "systemd-journald active", "dbus active", "ssh active", "nginx inactive"} {
		if !strings.Contains(o, want) {
			t.Errorf("%q not in %q", want, o)
		}
	}
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
	skipUnavailable(t)
	agent := conformance.BuildAgent(t)
	state := systemState()
	rec := &localtest.Recorder{}
	conformance.Run(t, func(t *testing.T) platform.Platform {
		p := newPlatform(t, "lxd:init=system", agent, state)
		removeNewDebianImages(t, p)
		rec.Platform = p
		return rec
	}, conformance.Opts{
		Image:      image.Debian,
		NoNetworks: []string{platform.NetHost},
		Leftovers: func(ctx context.Context) ([]string, error) {
			all, err := Leftovers(ctx, state)
			return rec.Mine(all), err
		},
		Timeout: 10 * time.Minute,
	})
}

// removeNewDebianImages removes, at the end of the test, the debian images
// it imported (one per agent build: 650 MB each).
func removeNewDebianImages(t *testing.T, p *Platform) {
	before, err := p.Images(t.Context(), image.Debian)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		after, _ := p.Images(context.Background(), image.Debian)
		for _, a := range after {
			if !slices.Contains(before, a) {
				if err := p.RemoveImage(context.Background(), a); err != nil {
					t.Errorf("removing test image %s: %v", a, err)
				}
			}
		}
	})
}
