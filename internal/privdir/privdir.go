// Package privdir makes and checks the directories isobench keeps its
// state, scratch, caches and owner records in. isobench runs as root, and
// a path another local user can create first (anything with a fixed name
// under /tmp) or swap (a directory in one they can write to) is input it
// must not trust: a directory is used only when it is a real directory
// (not a symbolic link), owned by this user, writable by no one else, and
// every directory above it is owned by root or this user and writable by
// no one else unless sticky (like /tmp, where others cannot rename what is
// not theirs). It has no dependencies, so any package can use it.
package privdir

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// RunRoot is isobench's host-wide directory for what lives only while
// processes run, as root (hostnet.RunDir: the bridge's leases, run
// records, runtime state, QEMU run directories).
const RunRoot = "/run/isobench"

// RunDir is isobench's host-wide run directory for this user: RunRoot as
// root, else $XDG_RUNTIME_DIR/isobench, else $TMPDIR/isobench-UID. It is a
// path only: make what goes in it with Make, which checks it.
func RunDir() string {
	if os.Geteuid() == 0 {
		return RunRoot
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return filepath.Join(x, "isobench")
	}
	return filepath.Join(os.TempDir(), "isobench-"+strconv.Itoa(os.Geteuid()))
}

// Make makes dir with mode perm (and its missing parents with 0700), or
// checks the directory found there: a real directory owned by this user
// that no one else can write to, whose mode is then set to perm. Every
// directory above it must pass Check's test for parents. perm must not
// let group or others write.
func Make(dir string, perm fs.FileMode) error {
	if perm&0o022 != 0 {
		return fmt.Errorf("%s: mode %v lets others write", dir, perm)
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := checkParents(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, perm); err == nil {
		return os.Chmod(dir, perm) // the umask may have taken bits away
	} else if !os.IsExist(err) {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := own(dir, st, false); err != nil {
		return err
	}
	if st.Mode().Perm() != perm {
		return os.Chmod(dir, perm)
	}
	return nil
}

// Private is Make(dir, 0700): for fixed names (the state directory's
// parts); what is made per instance is made fresh with Fresh.
func Private(dir string) error { return Make(dir, 0o700) }

// Fresh makes dir with mode 0700, failing when anything is there: an
// instance's directory has a random name and is never reused.
func Fresh(dir string) error { return os.Mkdir(dir, 0o700) }

// Check reports why dir may not be trusted, or nil: it must be a real
// directory owned by root or this user that no other user can write to,
// under directories each owned by root or this user and writable by no
// other user unless sticky. It changes nothing (for directories found,
// not made: `isobench clean` reading another run's).
func Check(dir string) error {
	dir = filepath.Clean(dir)
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := own(dir, st, true); err != nil {
		return err
	}
	return checkParents(dir)
}

// Open opens file for reading when it can be trusted: a regular file (not
// a symbolic link, which is not followed) owned by root or this user that
// no one else can write to. Its directory is the caller's to check.
func Open(file string) (*os.File, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if st, lerr := os.Lstat(file); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link: refusing to read it", file)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file: refusing to read it", file)
	}
	if err == nil {
		if err = owner(file, st, true); err != nil {
			err = fmt.Errorf("%w: refusing to read it", err)
		}
	}
	if err == nil && st.Mode().Perm()&0o022 != 0 {
		err = fmt.Errorf("%s can be written by others (mode %v): refusing to read it", file, st.Mode().Perm())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// own checks a directory found at dir: not a link, a directory, owned by
// this user (or root, when rootOK), not writable by group or others.
func own(dir string, st fs.FileInfo, rootOK bool) error {
	if st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link, not a directory: refusing to use it", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory: refusing to use it", dir)
	}
	if err := owner(dir, st, rootOK); err != nil {
		return fmt.Errorf("%w: refusing to use it", err)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s can be written by others (mode %v): refusing to use it", dir, st.Mode().Perm())
	}
	return nil
}

func owner(path string, st fs.FileInfo, rootOK bool) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid := int(sys.Uid)
	if uid == os.Geteuid() || rootOK && uid == 0 {
		return nil
	}
	return fmt.Errorf("%s belongs to uid %d, not to this user (%d)", path, uid, os.Geteuid())
}

// checkParents checks every directory above dir (following links: a
// link's target is what holds dir).
func checkParents(dir string) error {
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if err := owner(p, st, true); err != nil {
			return fmt.Errorf("refusing to use %s: %w", dir, err)
		}
		if st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("refusing to use %s: %s can be written by others (mode %v, not sticky)", dir, p, st.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
