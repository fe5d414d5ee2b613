// Package vmowner is the owner record of a QEMU VM's run directory
// (Base()/isoq-<digits>): which isobench process started the VM and what
// the VM uses on the host (its tap, scratch disk, virtiofs volume and
// cgroup). The qemu platform writes it; its own stale sweep and its
// Factory's Sweep (what `isobench clean` and its tests' leftover checks
// list) read it. It depends only on package privdir.
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
// before the cgroup key existed read as having no cgroup), but every
// record is checked before anything in it is believed: the run directories
// are in a directory of root's own (privdir), and a record is read only
// from a run directory named DirPrefix and digits, from a regular file of
// this user's; its pid must be a number, its tap and cgroup must have the
// names the platform gives them (the cgroup is named like the run
// directory), and its disk and volume must be where the platform puts
// them, under a state directory: STATE/qemu/disks/<VM id>.img and
// STATE/qemu/volumes/<VM id>. Which state directories are isobench's is
// for the reader to say (Record.StateDir).
package vmowner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/privdir"
)

// DirPrefix starts the name of every run directory (os.MkdirTemp pattern
// DirPrefix+"*" in Base, which puts digits after it) and of its cgroup.
const DirPrefix = "isoq-"

// File is the owner record's name in a run directory.
const File = "owner"

// maxSize bounds what Read reads of a record.
const maxSize = 4096

var (
	nameRE = regexp.MustCompile(`^isoq-[0-9]+$`)
	tapRE  = regexp.MustCompile(`^isq[0-9a-f]{10}$`)
	vmIDRE = regexp.MustCompile(`^isobench-[A-Za-z0-9_-]+$`)
	pidRE  = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)
)

// IsName reports whether name is a run directory's (and so a VM cgroup's)
// name: DirPrefix and at least one digit, nothing else.
func IsName(name string) bool { return nameRE.MatchString(name) }

// Base is the directory every run directory is in: qemu under isobench's
// host-wide run directory (privdir.RunDir; /run/isobench as root), which
// only its owner can write to. Unix socket paths are short there.
func Base() string { return filepath.Join(privdir.RunDir(), "qemu") }

// MakeBase makes base (Base() when empty) or checks the one found
// (privdir.Private), and returns it.
func MakeBase(base string) (string, error) {
	if base == "" {
		base = Base()
	}
	if err := privdir.Private(base); err != nil {
		return "", fmt.Errorf("qemu run directories: %w", err)
	}
	return base, nil
}

// List returns the run directories in base (Base() when empty), sorted:
// the real directories named like one (IsName). What else is there is
// returned as skipped, each with why. A base that is missing lists
// nothing; one that fails privdir.Check is an error: nothing in it is
// believed.
func List(base string) (dirs []string, skipped map[string]string, err error) {
	if base == "" {
		base = Base()
	}
	if _, err := os.Lstat(base); os.IsNotExist(err) {
		return nil, nil, nil
	}
	if err := privdir.Check(base); err != nil {
		return nil, nil, fmt.Errorf("qemu run directories: %w", err)
	}
	es, err := os.ReadDir(base)
	if err != nil {
		return nil, nil, fmt.Errorf("qemu run directories: %w", err)
	}
	skipped = map[string]string{}
	for _, e := range es {
		d := filepath.Join(base, e.Name())
		switch {
		case !IsName(e.Name()):
			skipped[d] = "not named " + DirPrefix + "<digits>"
		case e.Type()&os.ModeSymlink != 0 || !e.IsDir():
			skipped[d] = "not a directory"
		default:
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs, skipped, nil
}

// Record is one owner record.
type Record struct {
	PID    int    // the isobench process that started the VM
	Tap    string // tap device name, "" with no network
	Disk   string // scratch disk image path, "" if none
	Volume string // virtiofs host directory, "" if none
	Cgroup string // cgroup name under isobench/ (package cgroup), "" if none
}

// Parse reads a record's text and checks every field (Check).
func Parse(b []byte) (Record, error) {
	rec := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			rec[k] = v
		}
	}
	r := Record{Tap: rec["tap"], Disk: rec["disk"], Volume: rec["volume"], Cgroup: rec["cgroup"]}
	switch p := rec["pid"]; {
	case p == "":
		return Record{}, errors.New("owner record: no pid")
	case !pidRE.MatchString(p):
		return Record{}, fmt.Errorf("owner record: pid=%q is not a process id", p)
	default:
		r.PID, _ = strconv.Atoi(p)
	}
	if err := r.Check(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// Check reports which field of the record is not what the platform
// writes: a pid that is not positive, a tap not named isq<10 hex digits>,
// a cgroup not named like a run directory, a disk not <state>/qemu/disks/
// <VM id>.img, a volume not <state>/qemu/volumes/<VM id>.
func (r Record) Check() error {
	if r.PID <= 0 {
		return fmt.Errorf("owner record: pid=%d is not a process id", r.PID)
	}
	if r.Tap != "" && !tapRE.MatchString(r.Tap) {
		return fmt.Errorf("owner record: tap=%q is not a VM's tap (isq<10 hex digits>)", r.Tap)
	}
	if r.Cgroup != "" && !IsName(r.Cgroup) {
		return fmt.Errorf("owner record: cgroup=%q is not a VM's cgroup (%s<digits>)", r.Cgroup, DirPrefix)
	}
	_, err := r.StateDir()
	return err
}

// DiskPath is where the scratch disk of VM id is kept in state dir sd.
func DiskPath(sd, id string) string { return filepath.Join(sd, "qemu", "disks", id+".img") }

// OverlayDir is where QEMU writes the snapshot overlay of the root disk of
// the VM whose run dir is named run (isoq-<digits>) in state dir sd: on the
// state dir's disk, as the VM's scratch disk is, never in the run dir,
// which /run usually keeps in RAM (a guest's root-disk writes would then be
// RAM-fast and measure nothing of a disk). QEMU unlinks the file at once;
// the directory is removed with the VM.
func OverlayDir(sd, run string) string { return filepath.Join(sd, "qemu", "overlays", run) }

// VolumePath is where the virtiofs volume of VM id is kept in state dir sd.
func VolumePath(sd, id string) string { return filepath.Join(sd, "qemu", "volumes", id) }

// StateDir is the state directory the record's disk and volume are in,
// "" when it names neither; an error when either is not where DiskPath or
// VolumePath puts one, or they are in two state directories. Whether that
// directory is isobench's is for the caller to say.
func (r Record) StateDir() (string, error) {
	sd := ""
	for _, f := range []struct{ key, val, sub, suffix string }{
		{"disk", r.Disk, "disks", ".img"},
		{"volume", r.Volume, "volumes", ""},
	} {
		if f.val == "" {
			continue
		}
		bad := fmt.Errorf("owner record: %s=%q is not a VM's %s (STATE/qemu/%s/isobench-<name>%s)", f.key, f.val, f.key, f.sub, f.suffix)
		if !filepath.IsAbs(f.val) || filepath.Clean(f.val) != f.val {
			return "", bad
		}
		name, ok := strings.CutSuffix(filepath.Base(f.val), f.suffix)
		dir := filepath.Dir(f.val)
		if !ok || !vmIDRE.MatchString(name) || filepath.Base(dir) != f.sub || filepath.Base(filepath.Dir(dir)) != "qemu" {
			return "", bad
		}
		s := filepath.Dir(filepath.Dir(dir))
		if sd != "" && s != sd {
			return "", fmt.Errorf("owner record: disk=%q and volume=%q are in two state directories", r.Disk, r.Volume)
		}
		sd = s
	}
	return sd, nil
}

// Read reads and checks the record in run directory dir: dir must be
// named like one (IsName), the file must be a regular file of this user's
// (privdir.Open; no link is followed), every field must pass Check, and a
// cgroup must be named like dir. dir's parent is the caller's to check
// (List).
func Read(dir string) (Record, error) {
	if !IsName(filepath.Base(dir)) {
		return Record{}, fmt.Errorf("owner record: %s is not a run directory (%s<digits>)", dir, DirPrefix)
	}
	f, err := privdir.Open(filepath.Join(dir, File))
	if err != nil {
		return Record{}, fmt.Errorf("owner record: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return Record{}, fmt.Errorf("owner record %s: %w", f.Name(), err)
	}
	if len(b) > maxSize {
		return Record{}, fmt.Errorf("owner record %s: longer than %d bytes", f.Name(), maxSize)
	}
	r, err := Parse(b)
	if err != nil {
		return Record{}, fmt.Errorf("%s: %w", dir, err)
	}
	if r.Cgroup != "" && r.Cgroup != filepath.Base(dir) {
		return Record{}, fmt.Errorf("%s: owner record: cgroup=%q is not its run directory's", dir, r.Cgroup)
	}
	return r, nil
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
