package lxd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// TestSweepListsVolumes: with no LXD to ask, Sweep still lists the volume
// directories of lxd instances in every state directory (each owned by
// its instance), and not other platforms' names; Remove removes one. The
// Factory declares it, so 'isobench clean' and Leftovers use one list.
func TestSweepListsVolumes(t *testing.T) {
	if _, err := os.Stat(snapSocket); err == nil {
		t.Skip("the snap's LXD is here: Sweep would ask it")
	}
	t.Setenv("LXD_SOCKET", filepath.Join(t.TempDir(), "no.socket"))
	a, b := t.TempDir(), t.TempDir()
	mine := filepath.Join(a, "lxd-volumes", "isob-x0000abcd")
	for _, d := range []string{mine, filepath.Join(b, "lxd-volumes", "isob-t0000abcd"), filepath.Join(b, "instances", "isob-x00001234")} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	found, err := Factory.Sweep(context.Background(), platform.SweepEnv{StateDirs: []string{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Kind != "dir" || found[0].Name != mine || found[0].Owner != "isob-x0000abcd" {
		t.Fatalf("found %+v, want the one volume directory %s", found, mine)
	}
	if err := found[0].Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", mine, err)
	}
	if _, err := Leftovers(context.Background(), a); err == nil || !strings.Contains(err.Error(), "no LXD") {
		t.Errorf("Leftovers without LXD: %v, want an error", err)
	}
}
