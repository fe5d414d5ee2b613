package qemu

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The console lines of the boot that hung in CI (trimmed), and of a
// healthy boot.
const (
	hungConsole = "[    1.812345] smp: Bringing up secondary CPUs ...\n" +
		"[   27.401234] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [swapper/0:1]\n" +
		"[   48.123456] rcu: INFO: rcu_sched self-detected stall on CPU\n"
	rcuConsole     = "[   60.000001] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:\n"
	healthyConsole = "[    0.000000] Linux version 6.1.0-57-cloud-amd64\n[    1.200000] Run /init as init process\n"
)

func TestConsoleStall(t *testing.T) {
	for in, want := range map[string]string{
		hungConsole:    "[   27.401234] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [swapper/0:1]",
		rcuConsole:     "[   60.000001] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
		healthyConsole: "",
		"":             "",
		"[    9.1] Kernel panic - not syncing: Attempted to kill init!\n": "[    9.1] Kernel panic - not syncing: Attempted to kill init!",
	} {
		if got := consoleStall([]byte(in)); got != want {
			t.Errorf("consoleStall(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWatchConsole: the watcher says nothing while the console is healthy
// (or not there yet) and reports the stall once it is written.
func TestWatchConsole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stalled := watchConsole(ctx, path, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // no file yet
	if err := os.WriteFile(path, []byte(healthyConsole), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-stalled:
		t.Fatalf("healthy console reported as stalled: %q", line)
	case <-time.After(100 * time.Millisecond):
	}
	if err := os.WriteFile(path, []byte(healthyConsole+hungConsole), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-stalled:
		if line != consoleStall([]byte(hungConsole)) {
			t.Errorf("reported %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stall was never reported")
	}
}
