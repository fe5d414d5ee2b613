// Package cpuidle reads how this host's idle CPUs wait (their cpuidle
// driver and states) and can hold them awake for a run.
//
// An idle CPU that halts (on a VM: hands its core back to the hypervisor)
// comes back slower: on the development VM a TCG vCPU under a quarter-CPU
// quota, idle 75 ms of every 100, did 0.86-0.94 of its unlimited guest
// work per CPU-second, and 0.99 with the CPUs held polling. Holding them
// is the kernel's own PM QoS request (/dev/cpu_dma_latency): while a
// process keeps 0 written there, no CPU enters an idle state with an exit
// latency above 0, which leaves only polling. It costs power, and lasts
// only while the file is open.
package cpuidle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The modes of a run's idle CPUs (isobench run --cpu-idle).
const (
	// Host leaves the host's idle states as they are (the default).
	Host = "host"
	// Poll holds every CPU polling while the run lasts.
	Poll = "poll"
)

// QoSPath is the kernel's CPU latency request file.
const QoSPath = "/dev/cpu_dma_latency"

// SysfsPath is where the kernel describes the CPUs' idle states.
const SysfsPath = "/sys/devices/system/cpu"

// ParseMode checks a --cpu-idle value; "" is Host.
func ParseMode(s string) (string, error) {
	switch s {
	case "", Host:
		return Host, nil
	case Poll:
		return Poll, nil
	}
	return "", fmt.Errorf("cpu idle mode %q: want %s (leave the host's idle states) or %s (hold every CPU polling for the run)", s, Host, Poll)
}

// Info is how the CPUs wait when idle.
type Info struct {
	// Driver is the cpuidle driver ("haltpoll", "intel_idle", "acpi_idle"),
	// "" when the kernel has none.
	Driver string
	// States are cpu0's idle states as "NAME:LATENCYus", shallowest first.
	States []string
	// Halts is whether cpu0 has an idle state deeper than polling (an exit
	// latency above 0), or no cpuidle driver at all (the architecture's
	// default idle, a halt).
	Halts bool
}

// Read describes the idle states under sysfs (SysfsPath on a real host).
func Read(sysfs string) Info {
	var in Info
	in.Driver = readTrim(filepath.Join(sysfs, "cpuidle", "current_driver"))
	if in.Driver == "" || in.Driver == "none" {
		in.Driver = ""
		in.Halts = true
		return in
	}
	states, _ := filepath.Glob(filepath.Join(sysfs, "cpu0", "cpuidle", "state*"))
	for _, s := range sortStates(states) {
		name := readTrim(filepath.Join(s, "name"))
		lat, err := strconv.Atoi(readTrim(filepath.Join(s, "latency")))
		if name == "" || err != nil {
			continue
		}
		if readTrim(filepath.Join(s, "disable")) == "1" {
			continue
		}
		in.States = append(in.States, fmt.Sprintf("%s:%dus", name, lat))
		if lat > 0 {
			in.Halts = true
		}
	}
	if len(in.States) == 0 {
		in.Halts = true
	}
	return in
}

// sortStates orders state0, state1, ... state10 numerically.
func sortStates(paths []string) []string {
	num := func(p string) int {
		n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "state"))
		return n
	}
	slices.SortFunc(paths, func(a, b string) int { return num(a) - num(b) })
	return paths
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Holder keeps a CPU latency request open; Release drops it.
type Holder struct {
	f *os.File
}

// Hold asks the kernel, through path (QoSPath on a real host), that no
// CPU take longer than 0 µs to leave idle, until Release or this process
// exits.
func Hold(path string) (*Holder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("holding the CPUs awake: %w", err)
	}
	var b [4]byte // a native-endian s32, as the kernel reads it
	binary.NativeEndian.PutUint32(b[:], 0)
	if _, err := f.Write(b[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("holding the CPUs awake: writing %s: %w", path, err)
	}
	return &Holder{f: f}, nil
}

// Release drops the request; it is safe to call more than once.
func (h *Holder) Release() error {
	if h == nil || h.f == nil {
		return nil
	}
	err := h.f.Close()
	h.f = nil
	return err
}

// Current reads the latency every CPU is held to now, in µs (the
// smallest of all requests, or the kernel's default when none is open).
func Current(path string) (int32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return int32(binary.NativeEndian.Uint32(b[:])), nil
}

// ErrNotHeld is returned by Check when a hold did not take.
var ErrNotHeld = errors.New("the CPU latency request did not take")

// Check confirms that path's aggregated request is 0 (a hold in force).
func Check(path string) error {
	v, err := Current(path)
	if err != nil {
		return err
	}
	if v != 0 {
		return fmt.Errorf("%w: %s reads %d µs", ErrNotHeld, path, v)
	}
	return nil
}
