package local

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/isobench/isobench/internal/privdir"
)

// ProcConfinement reads what /proc/<pid>/status says about a process's
// confinement, under the fact names the conformance suite records for a
// command inside an instance: cap_eff and cap_bnd (hex masks), seccomp (0
// none, 1 strict, 2 filter) and no_new_privs.
func ProcConfinement(pid int) (map[string]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, err
	}
	keys := map[string]string{"CapEff": "cap_eff", "CapBnd": "cap_bnd", "Seccomp": "seccomp", "NoNewPrivs": "no_new_privs"}
	f := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && keys[k] != "" {
			f[keys[k]] = strings.TrimSpace(v)
		}
	}
	if f["cap_bnd"] == "" {
		return nil, fmt.Errorf("/proc/%d/status has no CapBnd", pid)
	}
	return f, nil
}

// capNames is setpriv's list of capability names, in number order.
var capNames = sync.OnceValues(func() ([]string, error) {
	out, err := exec.Command("setpriv", "--list-caps").Output()
	if err != nil {
		return nil, fmt.Errorf("setpriv --list-caps: %w", err)
	}
	return strings.Fields(string(out)), nil
})

// SetprivArgv is the setpriv(1) command that runs what follows it with
// the capability bounding set mask (a CapBnd hex mask) and, when nnp, the
// no_new_privs bit: as root, the program it runs then has exactly those
// capabilities (effective, permitted), as a process of the container it
// is about to enter.
func SetprivArgv(mask string, nnp bool) ([]string, error) {
	m, err := strconv.ParseUint(mask, 16, 64)
	if err != nil {
		return nil, fmt.Errorf("capability mask %q: %w", mask, err)
	}
	names, err := capNames()
	if err != nil {
		return nil, err
	}
	set := "-all"
	for i, n := range names {
		if m&(1<<i) != 0 {
			set += ",+" + n
		}
	}
	argv := []string{"setpriv", "--bounding-set=" + set, "--inh-caps=-all"}
	if nnp {
		argv = append(argv, "--no-new-privs")
	}
	return argv, nil
}

// PrivateDir makes dir (mode 0700) if it does not exist, or checks the
// directory found there (privdir.Make): a real directory (not a symbolic
// link), owned by the running user, that no one else can write to, in
// directories no one else can swap it in; group and other permissions on
// it are removed. It is for fixed names (the state directory's parts);
// what is made per instance is made fresh with FreshDir.
func PrivateDir(dir string) error { return privdir.Private(dir) }

// FreshDir makes dir with mode 0700, failing when anything is there: an
// instance's directory has a random name and is never reused.
func FreshDir(dir string) error { return privdir.Fresh(dir) }
