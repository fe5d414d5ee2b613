package lxd

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

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
	p := newPlatform(t, "lxd:init=system", agent, conformance.SystemStateDir())
	removeNewDebianImages(t, p)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	if err := p.Prepare(ctx, image.Debian); err != nil {
		t.Fatal(err)
	}
	conformance.CheckSystemBoots(ctx, t, p, platform.Spec{}, conformance.SystemChecks{Processes: false})
}

// TestSystemConformance runs the platform suite on system containers.
func TestSystemConformance(t *testing.T) {
	skipUnavailable(t)
	agent := conformance.BuildAgent(t)
	state := conformance.SystemStateDir()
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
