// Package vmowner is the owner record of a QEMU VM's run directory
// ($TMPDIR/isoq-*): which isobench process started the VM and what the VM
// uses on the host (its tap, scratch disk, virtiofs volume and cgroup).
// The qemu platform writes it; its own stale sweep, its tests' leftover
// checks and `isobench clean` (package cleanup) read it. It has no
// dependencies, so cleanup can read the record without importing the
// platform.
//
// The file is "owner" in the run directory, one key=value per line:
//
//	pid=1234
//	tap=isq0123456789
//	disk=/var/lib/isobench/qemu/disks/isobench-x-abcdef.img
//	volume=
//	cgroup=isoq-123456789
//
// Unknown keys are ignored and missing ones are empty (records written
// before the cgroup key existed read as having no cgroup).
package vmowner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DirPrefix starts the name of every run directory (os.MkdirTemp pattern
// DirPrefix+"*" in the temp dir).
const DirPrefix = "isoq-"

// File is the owner record's name in a run directory.
const File = "owner"

// Record is one owner record.
type Record struct {
	PID    int    // the isobench process that started the VM
	Tap    string // tap device name, "" with no network
	Disk   string // scratch disk image path, "" if none
	Volume string // virtiofs host directory, "" if none
	Cgroup string // cgroup name under isobench/ (package cgroup), "" if none
}

// Parse reads a record's text; a pid that is not a number is 0.
func Parse(b []byte) Record {
	rec := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			rec[k] = v
		}
	}
	pid, _ := strconv.Atoi(rec["pid"])
	return Record{PID: pid, Tap: rec["tap"], Disk: rec["disk"], Volume: rec["volume"], Cgroup: rec["cgroup"]}
}

// Read reads the record in run directory dir.
func Read(dir string) (Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return Record{}, err
	}
	return Parse(b), nil
}

// String is the record's text.
func (r Record) String() string {
	return fmt.Sprintf("pid=%d\ntap=%s\ndisk=%s\nvolume=%s\ncgroup=%s\n", r.PID, r.Tap, r.Disk, r.Volume, r.Cgroup)
}

// Write writes the record into run directory dir atomically (a reader sees
// the old record or the new one).
func (r Record) Write(dir string) error {
	tmp := filepath.Join(dir, "."+File)
	if err := os.WriteFile(tmp, []byte(r.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, File))
}
