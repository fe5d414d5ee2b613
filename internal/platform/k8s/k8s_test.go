package k8s

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// TestConformance runs the shared platform suite against a real cluster
// (scripts/start-k8s.sh) with the runc and gvisor RuntimeClasses.
func TestConformance(t *testing.T) {
	for _, rc := range []string{"runc", "gvisor"} {
		t.Run(rc, func(t *testing.T) {
			opts := "k8s:runtime=" + rc
			probe, err := NewPlatform(mustParse(t, opts), platform.Env{})
			if err != nil {
				t.Fatal(err)
			}
			// no agent build when there is no cluster
			if _, err := probe.Version(t.Context()); err != nil {
				conformance.SkipUnlessRequired(t, "k8s", err)
			}
			agent := conformance.BuildAgent(t)
			state := t.TempDir()
			var p *Platform
			newPlatform := func(t *testing.T) platform.Platform {
				p, err = NewPlatform(mustParse(t, opts), platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			conformance.Run(t, newPlatform, conformance.Opts{
				NoNetworks: []string{platform.NetNone},
				Leftovers:  func(ctx context.Context) ([]string, error) { return leftovers(ctx, p) },
				// the gVisor sandbox reports the limits of its own cgroup
				// in the same files; the check is the same
			})
		})
	}
}

func mustParse(t *testing.T, s string) platform.Options {
	t.Helper()
	o, err := platform.ParseOptions(s, Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// leftovers lists the suite's pods (label isobench.test=conformance) and
// the veths on the test cluster's bridge.
func leftovers(ctx context.Context, p *Platform) ([]string, error) {
	q := url.Values{}
	q.Set("labelSelector", "isobench=1,isobench.test=conformance")
	var l struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := p.c.do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(p.ns())+"/pods", q, nil, &l); err != nil {
		return nil, err
	}
	var out []string
	for _, it := range l.Items {
		out = append(out, "pod "+it.Metadata.Name)
	}
	links, _ := filepath.Glob("/sys/class/net/*/master")
	for _, m := range links {
		if dst, err := os.Readlink(m); err == nil && filepath.Base(dst) == "cni-isob0" {
			out = append(out, "veth "+filepath.Base(filepath.Dir(m)))
		}
	}
	sort.Strings(out)
	return out, nil
}

// TestImport imports the minimal image into the test cluster's containerd
// (no apiserver needed) and checks that containerd lists it and that a
// second Prepare reuses it.
func TestImport(t *testing.T) {
	if _, err := os.Stat(DefaultContainerd); err != nil {
		conformance.SkipUnlessRequired(t, "k8s", err)
	}
	agent := conformance.BuildAgent(t)
	p, err := NewPlatform(mustParse(t, "k8s"), platform.Env{AgentBinary: agent, StateDir: t.TempDir(), Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := p.image(t.Context(), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	ok, err := p.hasImage(t.Context(), ref)
	if err != nil || !ok {
		t.Fatalf("after the import containerd lists %s: %v, %v", ref, ok, err)
	}
	if err := p.Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	if err := p.Prepare(t.Context(), "no-such-profile"); err == nil {
		t.Error("Prepare of an unknown profile succeeded")
	}
}
