package cpuidle

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeState(t *testing.T, root string, i int, name, latency, disable string) {
	t.Helper()
	d := filepath.Join(root, "cpu0", "cpuidle", fmt.Sprintf("state%d", i))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"name": name, "latency": latency, "disable": disable} {
		if err := os.WriteFile(filepath.Join(d, f), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRead(t *testing.T) {
	// the development VM's: haltpoll, a polling state and a halt
	vm := t.TempDir()
	os.MkdirAll(filepath.Join(vm, "cpuidle"), 0o755)
	os.WriteFile(filepath.Join(vm, "cpuidle", "current_driver"), []byte("haltpoll\n"), 0o644)
	writeState(t, vm, 0, "POLL", "0", "0")
	writeState(t, vm, 1, "haltpoll idle", "1", "0")
	got := Read(vm)
	if got.Driver != "haltpoll" || !got.Halts || strings.Join(got.States, ",") != "POLL:0us,haltpoll idle:1us" {
		t.Errorf("haltpoll VM: %+v", got)
	}

	// every halting state disabled: the CPUs only poll
	poll := t.TempDir()
	os.MkdirAll(filepath.Join(poll, "cpuidle"), 0o755)
	os.WriteFile(filepath.Join(poll, "cpuidle", "current_driver"), []byte("intel_idle\n"), 0o644)
	writeState(t, poll, 0, "POLL", "0", "0")
	writeState(t, poll, 1, "C1", "2", "1")
	writeState(t, poll, 10, "C10", "890", "1")
	writeState(t, poll, 2, "C6", "170", "1")
	if got := Read(poll); got.Halts || strings.Join(got.States, ",") != "POLL:0us" {
		t.Errorf("halting states disabled: %+v", got)
	}
	// states in numeric order, state10 after state2
	writeState(t, poll, 10, "C10", "890", "0")
	writeState(t, poll, 2, "C6", "170", "0")
	if got := Read(poll); !got.Halts || strings.Join(got.States, ",") != "POLL:0us,C6:170us,C10:890us" {
		t.Errorf("numeric order: %+v", got)
	}

	// no cpuidle driver: the architecture's default idle halts
	if got := Read(t.TempDir()); got.Driver != "" || !got.Halts || got.States != nil {
		t.Errorf("no driver: %+v", got)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]string{"": Host, "host": Host, "poll": Poll} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"Poll", "halt", "0", "poll,host"} {
		if _, err := ParseMode(bad); err == nil || !strings.Contains(err.Error(), "want host") {
			t.Errorf("ParseMode(%q): %v, want an error naming the modes", bad, err)
		}
	}
}

// TestHold holds the real kernel request: while held the CPUs' latency
// reads 0, after Release what it was before (another holder, such as
// tuned, may keep it at 0 too: then only the hold itself is checked).
func TestHold(t *testing.T) {
	before, err := Current(QoSPath)
	if err != nil {
		t.Skipf("no CPU latency request here: %v", err)
	}
	h, err := Hold(QoSPath)
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("needs root: %v", err)
		}
		t.Fatal(err)
	}
	if err := Check(QoSPath); err != nil {
		t.Errorf("held: %v", err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	after, err := Current(QoSPath)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("after Release the latency reads %d µs, before the hold %d", after, before)
	}
	if before != 0 {
		if err := Check(QoSPath); err == nil {
			t.Error("Check passed with no hold in force")
		}
	}
}

func TestHoldMissing(t *testing.T) {
	if _, err := Hold(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "holding the CPUs awake") {
		t.Errorf("Hold on a missing file: %v", err)
	}
}
