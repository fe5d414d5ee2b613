package podman

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// newTestPlatform makes a platform whose imported test images are removed
// when t ends (images that were there before are kept).
func newTestPlatform(t *testing.T, agent, state string) *Platform {
	o, err := platform.ParseOptions("podman")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(t.Context(), o, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if before, err := p.Images(t.Context(), "minimal"); err == nil {
		t.Cleanup(func() {
			after, _ := p.Images(context.Background(), "minimal")
			for _, ref := range after {
				if !slices.Contains(before, ref) {
					if err := p.RemoveImage(context.Background(), ref); err != nil {
						t.Errorf("removing test image %s: %v", ref, err)
					}
				}
			}
		})
	}
	return p
}

// TestConformance runs the shared platform suite against rootful podman.
func TestConformance(t *testing.T) {
	probe, err := New(t.Context(), platform.Options{}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "podman", err)
	}
	agent := conformance.BuildAgent(t)
	state := t.TempDir()
	conformance.Run(t, func(t *testing.T) platform.Platform { return newTestPlatform(t, agent, state) }, conformance.Opts{
		NAT:       true,
		Leftovers: func(ctx context.Context) ([]string, error) { return Leftovers(ctx, state) },
	})
}

// TestStartup times create → agent hello → exit, for the report.
func TestStartup(t *testing.T) {
	probe, err := New(t.Context(), platform.Options{}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "podman", err)
	}
	agent := conformance.BuildAgent(t)
	p := newTestPlatform(t, agent, t.TempDir())
	if err := p.Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		var out strings.Builder
		start := time.Now()
		var phases []string
		inst, err := p.Create(t.Context(), platform.Spec{Image: "minimal", Network: platform.NetNone,
			Main: []string{platform.AgentPlaceholder, "agent", "hello"}, MainStdout: &out,
			Phase: func(n string, at time.Time) {
				phases = append(phases, n+"@"+at.Sub(start).Round(time.Millisecond).String())
			}})
		if err != nil {
			t.Fatal(err)
		}
		code, err := inst.Wait(t.Context())
		total := time.Since(start)
		if err != nil || code != 0 || !strings.Contains(out.String(), "hello") {
			t.Fatalf("Wait = %d, %v; stdout %q", code, err, out.String())
		}
		if err := inst.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("podman create→hello→exit %v (phases %v), with close %v", total, phases, time.Since(start))
	}
}

func TestCreateArgs(t *testing.T) {
	p, err := New(t.Context(), platform.Options{}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	p.seccompPath = "/st/podman/seccomp.json"
	args, err := p.createArgs(platform.Spec{CPUs: 1.5, Memory: 256 << 20, Network: platform.NetNone, Main: []string{platform.AgentPlaceholder, "agent", "hello"}}, "isobench-x", "localhost/isobench/minimal:abc", "/v", "/l/x.log")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(args, " ")
	for _, want := range []string{"--cpus 1.5", "--memory 268435456 --memory-swap 268435456", "--network none", "--runtime runc",
		"--volume /v:/isobench-scratch", "--log-opt path=/l/x.log", "--env ISOBENCH_SCRATCH=/isobench-scratch", "--ulimit nofile=",
		"localhost/isobench/minimal:abc /usr/local/bin/isobench agent hello",
		// Docker's confinement
		"--cap-drop all --cap-add CHOWN,DAC_OVERRIDE,FSETID,FOWNER,MKNOD,NET_RAW,SETGID,SETUID,SETFCAP,SETPCAP,NET_BIND_SERVICE,SYS_CHROOT,KILL,AUDIT_WRITE",
		"--security-opt seccomp=/st/podman/seccomp.json", "--device-cgroup-rule c 5:1 rwm"} {
		if !strings.Contains(s, want) {
			t.Errorf("create args %q lack %q", s, want)
		}
	}
	if _, err := p.createArgs(platform.Spec{Network: "weird"}, "n", "r", "", ""); err == nil {
		t.Error("unknown network accepted")
	}
	if _, err := New(t.Context(), platform.Options{Extra: map[string]string{"runtime": "youki"}}, platform.Env{}); err == nil {
		t.Error("unknown runtime accepted")
	}
	reg := platform.NewRegistry(Factory)
	if _, o, err := reg.Parse("podman:cpus=1,network=host,runtime=crun"); err != nil || o.Extra["runtime"] != "crun" {
		t.Errorf("parse: %+v, %v", o, err)
	}
	if a, b := containerName("conf a/1"), containerName("conf a/1"); a == b || !strings.HasPrefix(a, "isobench-conf-a-1-") {
		t.Errorf("container names %q %q", a, b)
	}
}

func TestWriteLogLines(t *testing.T) {
	var b strings.Builder
	rest := writeLogLines(&b, []byte("2026-11-22T03:20:30.31+00:00 stdout F bye\n"+
		"2026-11-22T03:20:30.31+00:00 stderr F noise\n"+
		"2026-11-22T03:20:30.31+00:00 stdout P part\n"+
		"2026-11-22T03:20:30.31+00:00 stdout F ial with  spaces\n"+
		"2026-11-22T03:20:30.31+00:00 stdout F\n"+
		"2026-11-22T03:20:30.31+00:00 stdout F incompl"))
	if want := "bye\npartial with  spaces\n\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
	if string(rest) != "2026-11-22T03:20:30.31+00:00 stdout F incompl" {
		t.Errorf("rest %q", rest)
	}
}
