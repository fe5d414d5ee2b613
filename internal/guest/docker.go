package guest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ServiceDocker is the isobench.init value that makes init start dockerd
// (the guest of platform docker-in-vm; its root disk has docker.io).
const ServiceDocker = "docker"

// DockerLog is where dockerd's output goes in the guest.
const DockerLog = "/run/isobench-dockerd.log"

// DockerArgs are dockerd's arguments in the guest: its data on the scratch
// disk (when mounted: the root is a copy-on-write snapshot), no bridge and
// no iptables rules (containers use the VM's network: network=host; the
// VM is the unit on the isobench bridge).
func DockerArgs(dataRoot string) []string {
	return []string{"--data-root=" + dataRoot, "--bridge=none", "--iptables=false", "--ip6tables=false",
		"--host=unix:///var/run/docker.sock", "--log-level=warn"}
}

// startDocker starts dockerd in the background (it starts its own
// containerd); the host waits for its socket to answer. Errors go to the
// log: the exec server is up and the host sees dockerd not answer.
func startDocker(log io.Writer) {
	dataRoot := "/var/lib/docker"
	if isMountPoint(ScratchDir) {
		dataRoot = filepath.Join(ScratchDir, "docker")
	}
	out, err := os.OpenFile(DockerLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(log, "isobench vm-init: dockerd log: %v\n", err)
		return
	}
	defer out.Close()
	cmd := exec.Command("/usr/sbin/dockerd", DockerArgs(dataRoot)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append([]string(nil), DefaultEnv...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(out, "isobench vm-init: starting dockerd: %v\n", err)
		return
	}
	// reaped by init's wait loop like every orphan
	cmd.Process.Release()
}

// isMountPoint reports whether dir is a mount point (in /proc/self/mounts).
func isMountPoint(dir string) bool {
	b, _ := os.ReadFile("/proc/self/mounts")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}
