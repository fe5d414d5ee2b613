package qemu

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// debianState is the state dir the Debian tests use: $ISOBENCH_STATE_DIR
// or /var/lib/isobench, where a built Debian tree is reused (building one
// takes minutes with mmdebstrap).
func debianState(t *testing.T) string {
	if d := os.Getenv("ISOBENCH_STATE_DIR"); d != "" {
		return d
	}
	return "/var/lib/isobench"
}

func skipWithoutDebian(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots VMs")
	}
	if err := availableTools(&Platform{}); err != nil {
		conformance.SkipUnlessRequired(t, "qemu", err)
	}
}

// TestDebianRootDisk boots the debian image from its root disk twice
// (the first Create builds the disk), checks the root is the ext4 disk
// with the Debian userland, that a VM's writes to its root do not reach
// the shared image nor the next VM, and logs boot to agent hello.
func TestDebianRootDisk(t *testing.T) {
	skipWithoutDebian(t)
	agent := testAgent(t)
	p := newTestPlatform(t, agent, debianState(t), "qemu:accel="+accelOption())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	if err := p.Prepare(ctx, image.Debian); err != nil {
		t.Fatal(err)
	}
	img, err := p.buildRootDisk(ctx, image.Debian)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		phases := map[string]time.Time{}
		start := time.Now()
		inst, err := p.Create(ctx, platform.Spec{Name: "deb", Image: image.Debian, CPUs: 1, Memory: 512 << 20, Network: platform.NetNone,
			Phase: func(n string, at time.Time) { phases[n] = at }})
		if err != nil {
			t.Fatal(err)
		}
		f := inst.Facts(ctx)
		uptime, _ := strconv.ParseInt(f["guest_uptime_ns"], 10, 64)
		t.Logf("debian boot %d (accel=%s): Create %v, created→started %v, guest uptime at hello %v; root %s",
			i, f["accel"], time.Since(start).Round(time.Millisecond), phases["started"].Sub(phases["created"]).Round(time.Millisecond),
			time.Duration(uptime).Round(time.Millisecond), f["root"])
		var out bytes.Buffer
		script := "grep -E ' / | /isobench-scratch ' /proc/mounts; cat /etc/debian_version; test -x /usr/sbin/nginx && echo nginx; cat /isobench-marker 2>/dev/null; echo written > /isobench-marker"
		if err := inst.Exec(ctx, []string{"sh", "-c", script}, platform.ExecIO{Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		o := out.String()
		for _, want := range []string{"/dev/vda / ext4 rw", "/dev/vdb /isobench-scratch ext4", "nginx"} {
			if !strings.Contains(o, want) {
				t.Errorf("boot %d: %q not in %q", i, want, o)
			}
		}
		if strings.Contains(o, "written") {
			t.Errorf("boot %d: a previous VM's write to its root is visible: %q", i, o)
		}
		if err := inst.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	after, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the shared root disk %s was written (mtime %v → %v)", img, before.ModTime(), after.ModTime())
	}
	t.Logf("root disk %s: %d MB apparent", filepath.Base(img), after.Size()>>20)
}

// TestConformanceDebian runs the platform suite with the debian image.
func TestConformanceDebian(t *testing.T) {
	skipWithoutDebian(t)
	agent := testAgent(t)
	state := debianState(t)
	conformance.Run(t, func(t *testing.T) platform.Platform {
		return newTestPlatform(t, agent, state, "qemu:accel="+accelOption())
	}, conformance.Opts{
		Image:      image.Debian,
		NoNetworks: []string{platform.NetHost},
		Limits:     vmLimits,
		Leftovers:  func(ctx context.Context) ([]string, error) { return leftovers(state), nil },
		Timeout:    5 * time.Minute,
	})
}

// TestPruneStale removes old cached files but keeps the new one and
// recent ones (another process may boot from them), and never another
// profile's.
func TestPruneStale(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * StaleAge)
	for _, n := range []string{"root-debian-a.img", "root-debian-b.img", "root-debian-c.img", "root-debian-docker-d.img"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"root-debian-a.img", "root-debian-b.img", "root-debian-docker-d.img"} {
		if err := os.Chtimes(filepath.Join(dir, n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	pruneStale(dir, "root-debian-", ".img", filepath.Join(dir, "root-debian-b.img"))
	var left []string
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		left = append(left, e.Name())
	}
	want := "root-debian-b.img root-debian-c.img root-debian-docker-d.img"
	if got := strings.Join(left, " "); got != want {
		t.Errorf("left %q, want %q", got, want)
	}
}
