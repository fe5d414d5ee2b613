package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/builtin"
)

func TestExpandHosts(t *testing.T) {
	st := Study{Platforms: []string{"native", "docker:cpus=1", "lxc:host=ssh://root@c"}, Hosts: []string{"local", "ssh://root@a", "ssh://b:2222"}}
	if err := expandHosts(&st); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"native", "native:host=ssh://root@a", "native:host=ssh://b:2222",
		"docker:cpus=1", "docker:cpus=1,host=ssh://root@a", "docker:cpus=1,host=ssh://b:2222",
		"lxc:host=ssh://root@c",
	}
	if !slices.Equal(st.Platforms, want) {
		t.Errorf("platforms %q\nwant %q", st.Platforms, want)
	}
	for _, bad := range [][]string{{"10.0.0.1"}, {"ssh://a", "ssh://a"}} {
		st := Study{Platforms: []string{"native"}, Hosts: bad}
		if err := expandHosts(&st); err == nil {
			t.Errorf("hosts %q accepted", bad)
		}
	}
	st = Study{Platforms: []string{"native"}}
	if err := expandHosts(&st); err != nil || !slices.Equal(st.Platforms, []string{"native"}) {
		t.Errorf("no hosts: %q, %v", st.Platforms, err)
	}
}

// TestRemoteHostClientRefused: a network workload whose client would run
// on this machine is refused for a remote platform before anything is
// contacted (the host does not exist).
func TestRemoteHostClientRefused(t *testing.T) {
	st := &State{Platforms: builtin.Platforms(), Workloads: builtin.Workloads()}
	study := Study{Platforms: []string{"native"}, Hosts: []string{"ssh://root@192.0.2.1"}, Workloads: []string{"tcp-rr"}}
	_, _, err := st.plan(&study)
	if err == nil || !strings.Contains(err.Error(), "client=host") || !strings.Contains(err.Error(), "ssh://root@192.0.2.1") {
		t.Errorf("tcp-rr (client=host) on a remote platform: %v", err)
	}
	study = Study{Platforms: []string{"native"}, Hosts: []string{"ssh://root@192.0.2.1"}, Workloads: []string{"tcp-rr:client=instance"}}
	if _, _, err := st.plan(&study); err != nil {
		t.Errorf("tcp-rr with client=instance refused: %v", err)
	}
}

func TestStudyHosts(t *testing.T) {
	st, err := decodeStudy([]byte("platforms: [native, docker]\nworkloads: [cpu]\nhosts: [local, \"ssh://root@10.0.0.2\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := expandHosts(&st); err != nil {
		t.Fatal(err)
	}
	want := []string{"native", "native:host=ssh://root@10.0.0.2", "docker", "docker:host=ssh://root@10.0.0.2"}
	if !slices.Equal(st.Platforms, want) {
		t.Errorf("platforms %q, want %q", st.Platforms, want)
	}
}
