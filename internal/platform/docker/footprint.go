package docker

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

var _ platform.Footprinter = (*Instance)(nil)

// sizeInspect is the part of GET /containers/{id}/json?size=1 used here.
type sizeInspect struct {
	SizeRw *int64
	State  struct {
		Pid int
	}
}

// Footprint reads the container's cgroup (memory, CPU), its writable
// layer's size (SizeRw, plus the volume directory with storage=volume)
// and finds the engine's processes: dockerd, containerd and this
// container's containerd-shim.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	var fp platform.Footprint
	var si sizeInspect
	q := url.Values{}
	q.Set("size", "1")
	if err := in.p.c.do(ctx, http.MethodGet, "/containers/"+in.id+"/json", q, nil, &si); err != nil {
		return fp, fmt.Errorf("docker inspect %s: %w", in.name, err)
	}
	if si.SizeRw != nil {
		fp.DiskBytes = *si.SizeRw
	}
	if in.volDir != "" {
		du, err := hostos.DiskUsage(in.volDir)
		if err != nil {
			return fp, fmt.Errorf("docker: %w", err)
		}
		fp.DiskBytes += du
	}
	memDir, cpuDir, err := containerCgroups(in.id, si.State.Pid)
	if err != nil {
		return fp, err
	}
	memBytes, cpuSeconds, err := hostos.CgroupUsage(memDir, cpuDir)
	if err != nil {
		return fp, fmt.Errorf("docker %s: %w", in.name, err)
	}
	fp.MemoryBytes, fp.CPUSeconds = memBytes, cpuSeconds
	fp.EnginePIDs = enginePIDs(in.id)
	return fp, nil
}

// containerCgroups finds the container's memory and CPU accounting cgroup
// directories: from its main process's /proc/PID/cgroup when it runs,
// else the cgroupfs driver's default places.
func containerCgroups(id string, pid int) (mem, cpu string, err error) {
	const root = "/sys/fs/cgroup"
	if pid > 0 {
		if mem, cpu, err := hostos.ProcessCgroups(pid); err == nil {
			return mem, cpu, nil
		}
	}
	for _, c := range [][2]string{
		{filepath.Join(root, "memory", "docker", id), filepath.Join(root, "cpuacct", "docker", id)},
		{filepath.Join(root, "docker", id), filepath.Join(root, "docker", id)},
		{filepath.Join(root, "system.slice", "docker-"+id+".scope"), filepath.Join(root, "system.slice", "docker-"+id+".scope")},
	} {
		if isDir(c[0]) && isDir(c[1]) {
			return c[0], c[1], nil
		}
	}
	return "", "", fmt.Errorf("docker: cannot find the cgroup of container %s (pid %d) under %s", id, pid, root)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return p != "" && err == nil && st.IsDir()
}

// enginePIDs lists dockerd, containerd and the shim serving container id.
func enginePIDs(id string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		switch c := strings.TrimSpace(string(comm)); {
		case c == "dockerd" || c == "containerd":
			out = append(out, pid)
		case strings.HasPrefix(c, "containerd-shim"):
			if shimServes(pid, id) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// shimServes reports whether the shim's command line names container id.
func shimServes(pid int, id string) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		for i, b := range data {
			if b == 0 {
				return i + 1, data[:i], nil
			}
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	prev := ""
	for sc.Scan() {
		if prev == "-id" && sc.Text() == id {
			return true
		}
		prev = sc.Text()
	}
	return false
}
