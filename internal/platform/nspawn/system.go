package nspawn

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// SystemBootTimeout bounds the wait for a booted system to finish booting.
const SystemBootTimeout = 3 * time.Minute

// MaskedUnits are the debian image's server units a booted container does
// not start: the workloads start the servers they measure; the system runs
// its usual base services (journald, D-Bus, sshd, logind...).
var MaskedUnits = []string{
	"nginx.service", "apache2.service", "apache-htcacheclean.service", "redis-server.service",
	"mariadb.service", "mysql.service", "vsftpd.service", "postfix.service", "smbd.service",
	"nmbd.service", "samba-ad-dc.service", "systemd-networkd-wait-online.service",
}

func parseBoot(v string) (bool, error) {
	switch v {
	case "", "false", "no":
		return false, nil
	case "true", "yes":
		return true, nil
	}
	return false, fmt.Errorf("nspawn: boot=%q must be true or false", v)
}

// checkBoot refuses boot=true with an image that has no init system.
func (p *Platform) checkBoot(s platform.Spec) error {
	if p.boot && s.Image != image.Debian {
		img := s.Image
		if img == "" {
			img = image.Minimal
		}
		return fmt.Errorf("nspawn: boot=true boots the image's systemd: it needs image=%s (image %s has no init system)", image.Debian, img)
	}
	return nil
}

// prepareSystem masks the server units in the container's root.
func prepareSystem(root string) error {
	dir := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("nspawn: %w", err)
	}
	for _, u := range MaskedUnits {
		os.Remove(filepath.Join(dir, u))
		if err := os.Symlink("/dev/null", filepath.Join(dir, u)); err != nil {
			return fmt.Errorf("nspawn: masking %s: %w", u, err)
		}
	}
	os.Remove(filepath.Join(root, "usr/sbin/policy-rc.d"))
	return nil
}

// awaitSystem closes Done when nspawn ended, with the main process's
// status when one ran (else nspawn's).
func (in *Instance) awaitSystem(nspawnDone <-chan struct{}) {
	<-nspawnDone
	in.MainErr = in.nspawnErr
	if in.mainExit != nil {
		select {
		case err := <-in.mainExit:
			in.MainErr = err
		default:
		}
	}
	close(in.Done)
}

// bootSystem waits for systemd to finish booting ("started" is then), and
// runs the main process (the idling agent when the spec has none) among
// the system's processes; when it ends the system is stopped.
func (in *Instance) bootSystem(ctx context.Context, s platform.Spec) error {
	if in.leader == 0 {
		return in.EndedAtOnce("")
	}
	bctx, cancel := context.WithTimeout(ctx, SystemBootTimeout)
	defer cancel()
	var last string
	for {
		var out bytes.Buffer
		in.Exec(bctx, []string{"systemctl", "is-system-running", "--wait"}, platform.ExecIO{Stdout: &out, Stderr: &out})
		last = strings.TrimSpace(out.String())
		if i := strings.LastIndexByte(last, '\n'); i >= 0 {
			last = last[i+1:]
		}
		if last == "running" || last == "degraded" {
			in.bootState = last
			break
		}
		select {
		case <-in.Done:
			return fmt.Errorf("nspawn: booted container %s stopped while booting: %s", in.ID(), in.Stderr.String())
		case <-bctx.Done():
			return fmt.Errorf("nspawn: booted container %s did not finish booting (systemctl is-system-running said %q): %w", in.ID(), last, bctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	// the main process (the idling agent when the spec has none) runs
	// among the system's processes
	in.mainExit = make(chan error, 1)
	stdout := s.MainStdout
	if stdout == nil {
		stdout = io.Discard
	}
	// as Exec runs commands, but kept as an exec.Cmd: its exit status is
	// the instance's
	drop, err := local.SetprivArgv(in.confine["cap_bnd"], in.confine["no_new_privs"] == "1")
	if err != nil {
		return fmt.Errorf("nspawn: %w", err)
	}
	enter := append(drop, in.nsenterArgv()...)
	full := in.hostArgv(append(enter, local.MainArgv(s)...))
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = local.Env()
	cmd.Stdout, cmd.Stderr = stdout, &in.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("nspawn: main process: %w", err)
	}
	go func() {
		in.mainExit <- cmd.Wait()
		syscall.Kill(in.leader, syscall.SIGKILL)
	}()
	return nil
}

// nsenterArgv enters the container's namespaces. A booted system's root
// is its own (systemd's, after nspawn's pivot): "--wd=/" would be opened
// on the host before entering and leave the command's working directory
// outside the container's root ("getcwd() failed"); -r -w take systemd's
// root and working directory (/) instead.
func (in *Instance) nsenterArgv() []string {
	if in.p.boot {
		return []string{"nsenter", "-t", strconv.Itoa(in.leader), "-a", "-r", "-w"}
	}
	return []string{"nsenter", "-t", strconv.Itoa(in.leader), "-a", "--wd=/"}
}
