package qemu

import (
	"os"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// TestCheckStatic: a dynamically linked agent is refused with one clear
// line before it is packed as a VM's /init (the guest kernel would panic).
func TestCheckStatic(t *testing.T) {
	dyn := "/bin/sh" // Debian's dash needs its loader
	if err := checkStatic(dyn); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("checkStatic(%s) = %v, want a dynamically linked error", dyn, err)
	}
	bad := t.TempDir() + "/not-elf"
	os.WriteFile(bad, []byte("#!/bin/sh\n"), 0o755)
	if err := checkStatic(bad); err == nil {
		t.Errorf("checkStatic(a script) = nil, want an error")
	}
	if testing.Short() {
		return
	}
	if err := checkStatic(testAgent(t)); err != nil {
		t.Errorf("the static test agent: %v", err)
	}
}

func TestPartCPU(t *testing.T) {
	for opts, want := range map[string]bool{"qemu": false, "qemu:cpus=2": false, "qemu:quota=0.25": true, "qemu:cpus=2,quota=0.5": true, "qemu:quota=1": false, "qemu:quota=1.5": true} {
		o, err := platform.ParseOptions(opts, Factory.Extra...)
		if err != nil {
			t.Fatal(err)
		}
		if got := Factory.FractionalCPU(o); got != want {
			t.Errorf("%s: FractionalCPU %v, want %v", opts, got, want)
		}
	}
}
