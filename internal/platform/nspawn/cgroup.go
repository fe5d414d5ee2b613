package nspawn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/cgroup"
)

// group is an instance's cgroup: cgroup.New's cpu/memory directories, and on
// cgroup v1 also directories in the name=systemd and (hybrid) unified
// hierarchies, where nspawn creates its "payload" and "supervisor"
// sub-cgroups next to the cgroup it starts in.
type group struct {
	g    *cgroup.Group
	dirs []string // all directories, cgroup.New's first
}

func newGroup(name string, l cgroup.Limits) (*group, error) {
	g, err := cgroup.New(name, l)
	if err != nil {
		return nil, err
	}
	out := &group{g: g, dirs: g.Dirs()}
	if cgroup.Version() == 1 {
		for _, h := range []string{"systemd", "unified"} {
			base := filepath.Join(cgroup.Root, h)
			var st syscall.Statfs_t
			if syscall.Statfs(base, &st) != nil || (st.Type != 0x27e0eb && st.Type != 0x63677270) { // cgroup, cgroup2
				continue
			}
			dir := filepath.Join(base, "isobench", name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				out.remove()
				return nil, fmt.Errorf("cgroup: %w", err)
			}
			out.dirs = append(out.dirs, dir)
		}
	}
	return out, nil
}

func (g *group) procsFiles() []string {
	var out []string
	for _, d := range g.dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// remove kills every process in the group's trees and removes them,
// deepest directories first.
func (g *group) remove() error {
	if g == nil {
		return nil
	}
	var trees [][]string
	for _, d := range g.dirs {
		var sub []string
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				sub = append(sub, p)
			}
			return nil
		})
		trees = append(trees, sub)
	}
	for attempt := 0; attempt < 100; attempt++ {
		n := 0
		for _, sub := range trees {
			for _, d := range sub {
				b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
						n++
					}
				}
			}
		}
		if n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var errs []error
	for _, sub := range trees {
		for i := len(sub) - 1; i >= 0; i-- {
			var err error
			for attempt := 0; attempt < 50; attempt++ {
				if err = os.Remove(sub[i]); err == nil || errors.Is(err, os.ErrNotExist) {
					err = nil
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("cgroup: remove %s: %w", sub[i], err))
			}
		}
	}
	if err := g.g.Remove(); err != nil {
		errs = append(errs, err)
	}
	g.dirs = nil
	return errors.Join(errs...)
}
