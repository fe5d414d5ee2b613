package lxd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// snapSocket is the snap's LXD socket, searched by Sweep besides
// SocketPath (a run may have been given $LXD_DIR that 'isobench clean'
// is not).
const snapSocket = "/var/snap/lxd/common/lxd/unix.socket"

// Sweep lists what lxd instances may leave on this host
// (platform.Factory.Sweep): LXD instances named with Code (with the run
// token of their isobench.run label), each with its veth, and the volume
// directories under the state directories (lxd-volumes/<instance>). What
// every local platform leaves (leases, cgroups named Prefix+Code...)
// package cleanup finds by itself, and Leftovers adds for the tests.
func Sweep(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
	var out []platform.Leftover
	mine := local.Prefix + Code
	if sock := sweepSocket(); sock != "" {
		c := newClient(sock)
		var list []struct {
			Name   string            `json:"name"`
			Config map[string]string `json:"config"`
		}
		if err := c.sync(ctx, http.MethodGet, "/1.0/instances?recursion=1", nil, &list); err != nil {
			return nil, fmt.Errorf("lxd: list instances: %w", err)
		}
		for _, in := range list {
			if !strings.HasPrefix(in.Name, mine) {
				continue
			}
			name := in.Name
			out = append(out, platform.Leftover{Kind: "lxd-instance", Name: name,
				Token: in.Config["user.isobench.run"], SpecName: in.Config["user.isobench.name"],
				Remove: func(ctx context.Context) error { return deleteInstance(ctx, c, name) }})
			veth := local.VethName(name)
			if _, err := os.Stat("/sys/class/net/" + veth); err == nil {
				out = append(out, platform.Leftover{Kind: "veth", Name: veth, Owner: name, Remove: func(ctx context.Context) error {
					err := hostnet.DeleteLink(ctx, veth)
					if _, serr := os.Stat("/sys/class/net/" + veth); err != nil && serr == nil {
						return err
					}
					return nil // gone with its container, or a concurrent sweep
				}})
			}
		}
	}
	for _, sd := range env.StateDirs {
		dir := filepath.Join(sd, "lxd-volumes")
		es, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range es {
			if !strings.HasPrefix(e.Name(), mine) {
				continue
			}
			d := filepath.Join(dir, e.Name())
			out = append(out, platform.Leftover{Kind: "dir", Name: d, Owner: e.Name(), Remove: func(context.Context) error { return os.RemoveAll(d) }})
		}
	}
	return out, nil
}

// sweepSocket is the first LXD socket that exists: SocketPath's, then the
// snap's; "" for none (no LXD here: no instances).
func sweepSocket() string {
	for _, s := range []string{SocketPath(), snapSocket} {
		if _, err := os.Stat(s); err == nil {
			return s
		}
	}
	return ""
}

// deleteInstance stops and deletes instance name; one already gone is no
// error.
func deleteInstance(ctx context.Context, c *client, name string) error {
	path := "/1.0/instances/" + name
	if _, err := c.async(ctx, http.MethodPut, path+"/state", map[string]any{"action": "stop", "force": true, "timeout": 30}, nil); err != nil &&
		!isNotFound(err) && !strings.Contains(err.Error(), "already stopped") && !strings.Contains(err.Error(), "not running") {
		return fmt.Errorf("lxd: stop %s: %w", name, err)
	}
	if _, err := c.async(ctx, http.MethodDelete, path, nil, nil); err != nil && !isNotFound(err) {
		return fmt.Errorf("lxd: delete %s: %w", name, err)
	}
	return nil
}

// Leftovers lists what lxd instances may leave on the host, for the
// tests: what Sweep lists (instances, their veths, volume directories),
// what every local platform leaves (local.Leftovers: veths, leases...)
// and LXC's cgroups of the instances.
func Leftovers(ctx context.Context, stateDir string) ([]string, error) {
	if sweepSocket() == "" {
		return nil, errors.New("lxd: no LXD socket (" + SocketPath() + ")")
	}
	found, err := Sweep(ctx, platform.SweepEnv{StateDirs: []string{stateDir}})
	if err != nil {
		return nil, err
	}
	out := local.Leftovers(stateDir, Code)
	seen := map[string]bool{}
	for _, s := range out {
		seen[s] = true
	}
	for _, l := range found {
		if s := l.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	mine := local.Prefix + Code
	for _, pat := range []string{"/sys/fs/cgroup/*/lxc.payload." + mine + "*", "/sys/fs/cgroup/*/lxc.monitor." + mine + "*"} {
		m, _ := filepath.Glob(pat)
		for _, x := range m {
			out = append(out, "cgroup "+x)
		}
	}
	return out, nil
}
