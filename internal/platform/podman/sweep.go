package podman

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/platform"
)

// Sweep lists what podman instances may leave on this host
// (platform.Factory.Sweep): Podman's containers labelled isobench, with
// the run token of their isobench.run label (or their isobench.name
// label, which holds it), each with its volume directory and log file
// under the state directories (podman-volumes/<name>,
// podman-logs/<name>.log). No podman binary: nothing.
func Sweep(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
	if _, err := exec.LookPath("podman"); err != nil {
		return nil, nil
	}
	// .Labels is a map here (Docker's template would make podman ps fail)
	format := `{{.ID}}|{{.Names}}|{{index .Labels "` + platform.Label + `.run"}}|{{index .Labels "` + platform.Label + `.name"}}`
	list, err := podman(ctx, nil, "ps", "--all", "--no-trunc", "--filter", "label="+platform.Label, "--format", format)
	if err != nil {
		return nil, err
	}
	var out []platform.Leftover
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 4 || f[0] == "" {
			continue
		}
		id, name, token, specName := f[0], f[1], f[2], f[3]
		if token == "<no value>" {
			token = ""
		}
		if specName == "<no value>" {
			specName = ""
		}
		out = append(out, platform.Leftover{Kind: "podman-container", Name: name, Token: token, SpecName: specName,
			Remove: func(ctx context.Context) error { return removeContainer(ctx, id) }})
		for _, sd := range env.StateDirs {
			for _, p := range []string{filepath.Join(sd, "podman-volumes", name), filepath.Join(sd, "podman-logs", name+".log")} {
				if _, err := os.Lstat(p); err == nil {
					out = append(out, platform.Leftover{Kind: "dir", Name: p, Owner: name, Remove: func(context.Context) error { return os.RemoveAll(p) }})
				}
			}
		}
	}
	return out, nil
}

// removeContainer removes container id with its volumes; one already
// gone is no error, and one another sweep is already removing is waited
// for (up to a minute).
func removeContainer(ctx context.Context, id string) error {
	out, err := exec.CommandContext(ctx, "podman", "rm", "--force", "--volumes", id).CombinedOutput()
	msg := strings.ToLower(string(out))
	switch {
	case err == nil, strings.Contains(msg, "no such container"):
		return nil
	case !strings.Contains(msg, "already in progress"):
		return fmt.Errorf("podman rm: %v: %s", err, strings.TrimSpace(string(out)))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if exec.CommandContext(ctx, "podman", "inspect", "--format", "{{.Id}}", id).Run() != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("podman: container %s still being removed by another process: %w", id, ctx.Err())
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("podman: container %s still being removed by another process: %w", id, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
