package lxd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

var _ platform.Footprinter = (*Instance)(nil)

// instanceState is the part of GET /1.0/instances/NAME/state Footprint
// reads.
type instanceState struct {
	Status string `json:"status"`
	Pid    int    `json:"pid"`
	Disk   map[string]struct {
		Usage int64 `json:"usage"`
	} `json:"disk"`
}

// Footprint reads the whole container's cgroup (lxc.payload.NAME, found
// from its init process, whose pid LXD's state gives), the disk the
// instance occupies in its storage pool plus its volume directory, and
// gives the LXD daemon and this container's [lxc monitor] as the engine.
//
// Disk: LXD reports a root disk's usage only where the pool driver can
// (btrfs, zfs, lvm, or dir with project quotas); there it is the
// instance's own usage, blocks shared with the image not counted, and is
// taken as is. A dir pool (isobench's default) reports none: there the
// instance's volume, storage-pools/POOL/containers/NAME under LXD's
// directory, is walked. That volume is a full private copy of the image
// unpacked at create (the dir driver shares nothing with the image), so
// its whole size is what creating the instance added to the host's disk
// (as study 002 counts the disk an environment needs); the image is not
// subtracted.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	var fp platform.Footprint
	var st instanceState
	if err := in.p.c.sync(ctx, http.MethodGet, "/1.0/instances/"+escape(in.id)+"/state", nil, &st); err != nil {
		return fp, fmt.Errorf("lxd %s: state: %w", in.id, err)
	}
	if st.Pid <= 0 {
		return fp, fmt.Errorf("lxd %s: no init pid (status %q): is it running?", in.id, st.Status)
	}
	mem, cpu, err := hostos.ProcessCgroups(st.Pid)
	if err != nil {
		return fp, fmt.Errorf("lxd %s: %w", in.id, err)
	}
	// a booted system's init sits in a cgroup of its own below the
	// container's (init.scope): count the whole container, its services too
	mem, cpu = payloadCgroup(mem, in.id), payloadCgroup(cpu, in.id)
	if fp.MemoryBytes, fp.CPUSeconds, err = hostos.CgroupUsage(mem, cpu); err != nil {
		return fp, fmt.Errorf("lxd %s: %w", in.id, err)
	}
	if fp.DiskBytes, err = in.rootDisk(ctx, st); err != nil {
		return fp, fmt.Errorf("lxd %s: %w", in.id, err)
	}
	if in.volume != "" {
		du, err := hostos.DiskUsage(in.volume)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fp, fmt.Errorf("lxd %s: %w", in.id, err)
		}
		fp.DiskBytes += du
	}
	daemon, err := daemonPID(in.p.c.socket)
	if err != nil {
		return fp, fmt.Errorf("lxd %s: %w", in.id, err)
	}
	monitor, err := monitorPID(st.Pid, in.id)
	if err != nil {
		return fp, fmt.Errorf("lxd %s: %w", in.id, err)
	}
	fp.EnginePIDs = []int{daemon, monitor}
	return fp, nil
}

// rootDisk is the root disk's usage: LXD's own figure when the pool driver
// reports one, else (a dir pool) the instance's volume directory walked.
func (in *Instance) rootDisk(ctx context.Context, st instanceState) (int64, error) {
	if d, ok := st.Disk["root"]; ok && d.Usage > 0 {
		return d.Usage, nil
	}
	var pool struct {
		Driver string `json:"driver"`
	}
	if err := in.p.c.sync(ctx, http.MethodGet, "/1.0/storage-pools/"+escape(in.p.pool), nil, &pool); err != nil {
		return 0, fmt.Errorf("storage pool %s: %w", in.p.pool, err)
	}
	if pool.Driver != "dir" {
		// walking a copy-on-write volume would count the blocks it shares
		// with the image as its own
		return 0, fmt.Errorf("storage pool %s (driver %s) reports no disk usage for the instance (enable the driver's quotas, or use a dir pool)", in.p.pool, pool.Driver)
	}
	// LXD mounts every pool at storage-pools/POOL in its directory, the
	// one holding its socket (/var/lib/lxd, /var/snap/lxd/common/lxd)
	dir := filepath.Join(filepath.Dir(in.p.c.socket), "storage-pools", in.p.pool, "containers", in.id)
	du, err := hostos.DiskUsage(dir)
	if err != nil {
		return 0, err
	}
	return du, nil
}

// payloadCgroup cuts a cgroup path after its lxc.payload.NAME part (LXD
// names a container's cgroup so; systemd in it makes sub-cgroups).
func payloadCgroup(path, name string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if p == "lxc.payload."+name {
			return strings.Join(parts[:i+1], "/")
		}
	}
	return path
}

// daemonPID is the pid of the process listening on LXD's socket (the
// socket's peer credentials), checked to be lxd: a socket activated by
// systemd would name systemd instead.
func daemonPID(socket string) (int, error) {
	pid, err := hostos.SocketPeerPID(socket)
	if err != nil {
		return 0, fmt.Errorf("daemon pid: %w", err)
	}
	if argv0 := hostos.ProcArgv(pid)[0]; filepath.Base(argv0) != "lxd" {
		return 0, fmt.Errorf("daemon pid: the process listening on %s is pid %d (%q), not lxd (socket activation?)", socket, pid, argv0)
	}
	return pid, nil
}

// monitorPID is the parent of the container's init, checked to be the
// [lxc monitor] of this container (LXD keeps one per container).
func monitorPID(initPID int, name string) (int, error) {
	ppid, _, err := hostos.ProcStat(initPID)
	if err != nil {
		return 0, fmt.Errorf("monitor pid: %w", err)
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ppid))
	if err != nil {
		return 0, fmt.Errorf("monitor pid: %w", err)
	}
	if !isMonitor(cmd, name) {
		return 0, fmt.Errorf("monitor pid: the parent %d of init %d is %q, not the [lxc monitor] of %s", ppid, initPID, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}), name)
	}
	return ppid, nil
}

// isMonitor says whether a /proc/PID/cmdline is that of LXC's monitor for
// container name ("[lxc monitor] LXCPATH NAME", rewritten into argv by
// the monitor itself, so NUL or space separated).
func isMonitor(cmdline []byte, name string) bool {
	f := strings.Fields(strings.ReplaceAll(string(cmdline), "\x00", " "))
	return len(f) >= 4 && f[0] == "[lxc" && f[1] == "monitor]" && f[len(f)-1] == name
}
