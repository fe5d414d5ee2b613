package hostos

import (
	"os/exec"
	"syscall"
)

// OwnProcessGroup puts cmd, a process isobench starts for an instance (an
// agent, lxc-attach, nsenter, podman exec...), in a process group of its
// own. A terminal's Ctrl-C signals its foreground process group: it then
// reaches isobench alone, which stops its instances in order, instead of
// also reaching the children, whose own "context canceled" would come
// back as a failure. Cancellation must then kill the child explicitly
// (exec.CommandContext does, and KillGroup kills the whole group).
func OwnProcessGroup(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return cmd
}

// KillGroup is an exec.Cmd.Cancel for a command started with
// OwnProcessGroup: it kills the command's whole process group.
func KillGroup(cmd *exec.Cmd) func() error {
	return func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
