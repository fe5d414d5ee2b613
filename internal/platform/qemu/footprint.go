package qemu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/qemu/vmowner"
)

// Footprint: a VM's cost to the host is what its QEMU process costs (and
// virtiofsd's with storage=volume). Every VM runs in a cgroup of its own,
// isobench/<run dir name> (e.g. isobench/isoq-123456789), made at Create
// and removed at Close; its name is in the run dir's owner record, so a
// crashed run's cgroup is removed by the next Create's sweep and by
// `isobench clean`. The cgroup has no limits: it is for accounting (option
// quota= puts only the vCPU threads in a child group, vcpus, with a CFS
// quota; see quotaVCPUs) (the VM's -m and -smp are its
// limits; a memory limit would also have to leave room for QEMU's own
// overhead, TCG's translation cache among it).
//
// The processes start inside it through "isobench agent cgexec" (the
// agent writes its pid into the cgroup, then execs qemu), so every QEMU
// thread and every page of guest memory is charged to it from the first
// instruction. With option initrd= and no agent binary they are moved in
// right after they start instead (what they allocated before stays
// charged where isobench runs).

// command is argv to be started in the VM's cgroup (see start), in its own
// process group, killed when this process dies.
func (in *Instance) command(name string, args ...string) *exec.Cmd {
	argv := append([]string{name}, args...)
	agent := in.p.env.AgentBinary
	if in.cg != nil && agent != "" {
		w := append([]string{agent, "agent", "cgexec"}, in.cg.ProcsFiles()...)
		argv = append(append(w, "--"), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// start starts cmd from command and, when it was not wrapped by cgexec,
// moves it into the VM's cgroup.
func (in *Instance) start(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	if in.cg == nil || in.p.env.AgentBinary != "" {
		return nil
	}
	pid := []byte(strconv.Itoa(cmd.Process.Pid))
	for _, f := range in.cg.ProcsFiles() {
		if err := os.WriteFile(f, pid, 0); err != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			return fmt.Errorf("joining cgroup %s: %w", f, err)
		}
	}
	return nil
}

// Footprint is what the VM costs the host. Memory and CPU are its
// cgroup's (QEMU's and virtiofsd's: guest RAM the guest touched, QEMU's
// own heap and TCG's translation cache, the host page cache its disk
// writes fill; usage less inactive file). Disk is what the VM's files
// occupy on the host: its scratch disk image (sparse: the blocks the guest
// wrote, plus mkfs's metadata), its virtiofs volume, and its run dir,
// where the copy-on-write overlay of a shared root disk is (QEMU's
// snapshot=on temporary file; counted while QEMU holds it open even
// after it is unlinked). The shared read-only root disk image and the
// cached kernel and initramfs are not one VM's: they are left out.
//
// EnginePIDs is empty: there is no engine beside the VM. The QEMU process
// is the instance itself, already counted in MemoryBytes and CPUSeconds.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	if in.cg == nil {
		return platform.Footprint{}, fmt.Errorf("qemu: VM %s has no cgroup to account its footprint in: %v", in.id, in.cgErr)
	}
	if in.isClosed() {
		return platform.Footprint{}, fmt.Errorf("qemu: instance %s is closed", in.id)
	}
	memBytes, cpuSeconds, err := hostos.CgroupUsage(in.cg.AccountingDirs())
	if err != nil {
		return platform.Footprint{}, fmt.Errorf("qemu: %w", err)
	}
	fp := platform.Footprint{MemoryBytes: memBytes, CPUSeconds: cpuSeconds}
	if fp.DiskBytes, err = hostos.DisksUsage(in.disk, in.volume, in.runDir); err != nil {
		return platform.Footprint{}, fmt.Errorf("qemu: %w", err)
	}
	if in.cmd != nil && in.cmd.Process != nil {
		fp.DiskBytes += unlinkedUnder(in.cmd.Process.Pid, in.runDir)
	}
	return fp, nil
}

// unlinkedUnder sums the allocated size of the unlinked files under dir
// that process pid still holds open (QEMU removes its snapshot overlay's
// name but keeps using the file).
func unlinkedUnder(pid int, dir string) int64 {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	es, err := os.ReadDir(fdDir)
	if err != nil {
		return 0
	}
	var total int64
	seen := map[uint64]bool{}
	for _, e := range es {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil || !strings.HasSuffix(target, " (deleted)") || !strings.HasPrefix(target, dir+"/") {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join(fdDir, e.Name()), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || seen[st.Ino] {
			continue
		}
		seen[st.Ino] = true
		total += st.Blocks * 512
	}
	return total
}

// removeCgroup removes cgroup isobench/name on every hierarchy (what
// cgroup.New made for a VM whose process is gone), killing anything left
// in it.
func removeCgroup(name string) error {
	if !vmowner.IsName(name) {
		return fmt.Errorf("qemu: invalid cgroup name %q", name)
	}
	var dirs []string
	for _, pat := range []string{filepath.Join(cgroup.Root, "isobench", name), filepath.Join(cgroup.Root, "*", "isobench", name)} {
		m, _ := filepath.Glob(pat)
		dirs = append(dirs, m...)
	}
	var errs []error
	for _, d := range dirs {
		if err := cgroup.RemoveDir(d); err != nil {
			errs = append(errs, fmt.Errorf("qemu: %w", err))
		}
	}
	return errors.Join(errs...)
}
