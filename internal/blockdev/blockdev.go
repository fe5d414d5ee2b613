// Package blockdev finds the disk a path is stored on, as the kernel's
// I/O throttles (cgroup v1 blkio.throttle.*, v2 io.max, Docker's
// --device-read-iops) name it: the whole disk's major:minor and device
// node, not a partition's.
package blockdev

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Disk is a whole block device.
type Disk struct {
	MajMin string // "254:0"
	Node   string // "/dev/vda"
}

// ErrNoDisk: the path is on no block device (tmpfs, overlayfs's upper on
// such, a network file system).
var ErrNoDisk = errors.New("not on a block device")

// SysRoot is where sysfs is mounted (a test points it elsewhere).
const SysRoot = "/sys"

// Of returns the disk holding path. A file system on a partition is
// charged to its disk; one on a device-mapper or loop device to that
// device itself.
func Of(path string) (Disk, error) {
	return of(SysRoot, path)
}

func of(sys, path string) (Disk, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Disk{}, fmt.Errorf("blockdev: %w", err)
	}
	maj, min := unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev))
	if maj == 0 {
		return Disk{}, fmt.Errorf("blockdev: %s (device %d:%d): %w", path, maj, min, ErrNoDisk)
	}
	return fromMajMin(sys, fmt.Sprintf("%d:%d", maj, min))
}

func fromMajMin(sys, mm string) (Disk, error) {
	dir, err := filepath.EvalSymlinks(filepath.Join(sys, "dev", "block", mm))
	if err != nil {
		return Disk{}, fmt.Errorf("blockdev: device %s: %w", mm, ErrNoDisk)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		dir = filepath.Dir(dir) // a partition's directory sits in its disk's
	}
	dev, err := os.ReadFile(filepath.Join(dir, "dev"))
	if err != nil {
		return Disk{}, fmt.Errorf("blockdev: %w", err)
	}
	d := Disk{MajMin: strings.TrimSpace(string(dev)), Node: "/dev/" + filepath.Base(dir)}
	if ue, err := os.ReadFile(filepath.Join(dir, "uevent")); err == nil {
		for _, l := range strings.Split(string(ue), "\n") {
			if name, ok := strings.CutPrefix(l, "DEVNAME="); ok && name != "" {
				d.Node = "/dev/" + name
			}
		}
	}
	return d, nil
}

// Throttle is a read limit on an instance's disk: the platform options
// read-iops=N and read-bps=SIZE (as Docker's --device-read-iops and
// --device-read-bps). Zero fields are no limit.
type Throttle struct {
	ReadIOPS, ReadBPS int64
}

// ThrottleKeys are the platform option keys of a Throttle.
var ThrottleKeys = []string{"read-iops", "read-bps"}

// Set says whether t limits anything.
func (t Throttle) Set() bool { return t.ReadIOPS > 0 || t.ReadBPS > 0 }

// ParseThrottle reads read-iops and read-bps from a platform's options;
// parseSize reads a size such as 50m (spec.ParseSize).
func ParseThrottle(opts map[string]string, parseSize func(string) (int64, error)) (Throttle, error) {
	var t Throttle
	if v, ok := opts["read-iops"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 1e9 {
			return Throttle{}, fmt.Errorf("read-iops=%q: want a whole number of reads per second from 1, e.g. 1000", v)
		}
		t.ReadIOPS = n
	}
	if v, ok := opts["read-bps"]; ok {
		n, err := parseSize(v)
		if err != nil || n < 4096 {
			return Throttle{}, fmt.Errorf("read-bps=%q: want a rate in bytes per second of at least 4k, e.g. 50m", v)
		}
		t.ReadBPS = n
	}
	return t, nil
}
