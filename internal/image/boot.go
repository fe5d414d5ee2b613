package image

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// BootTimeout bounds the wait for a system container's boot (the debian
// image's systemd as its init: LXC and LXD with init=system, nspawn with
// boot=true) to finish.
const BootTimeout = 3 * time.Minute

// MaskedUnits are the debian image's server units a booting system does not
// start: the workloads start the servers they measure (with their own
// configuration), so the system runs its usual base services (journald,
// D-Bus, sshd, logind...) and not a second copy of each.
var MaskedUnits = []string{
	"nginx.service", "apache2.service", "apache-htcacheclean.service", "redis-server.service",
	"mariadb.service", "mysql.service", "vsftpd.service", "postfix.service", "smbd.service",
	"nmbd.service", "samba-ad-dc.service", "systemd-networkd-wait-online.service",
}

// CheckBootable says why an instance of profile cannot boot its own init:
// only the debian image has an init system.
func CheckBootable(profile string) error {
	if profile == Debian {
		return nil
	}
	if profile == "" {
		profile = Minimal
	}
	return fmt.Errorf("it needs image=%s (image %s has no init system)", Debian, profile)
}

// PrepareBoot readies the debian root file system at root for booting its
// systemd: the server units are masked (linked to /dev/null), and the
// policy-rc.d that keeps package scripts from starting daemons is removed,
// so the system is as a system administrator would have it.
func PrepareBoot(root string) error {
	dir := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, u := range MaskedUnits {
		os.Remove(filepath.Join(dir, u))
		if err := os.Symlink("/dev/null", filepath.Join(dir, u)); err != nil {
			return fmt.Errorf("masking %s: %w", u, err)
		}
	}
	os.Remove(filepath.Join(root, "usr/sbin/policy-rc.d"))
	return nil
}
