package jail

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/platform"
)

// This file reports a jail's footprint through FreeBSD's own accounting:
// rctl(8) -u for memory and CPU, du(1) for disk, run through the
// platform's Runner like every other jail command. Like the rest of the
// package it has NOT run against a real FreeBSD host here (none is
// reachable): the command lines and the parsing of output in rctl's and
// du's documented formats are what the unit tests check.

var _ platform.Footprinter = (*instance)(nil)

// UsageArgs is the rctl(8) command printing jail name's resource usage,
// one resource=amount a line, amounts as plain numbers (no -h).
func UsageArgs(name string) []string {
	return []string{"rctl", "-u", "jail:" + name}
}

// DiskArgs is the du(1) command measuring dir in KiB without crossing
// mount points: a jail's devfs and its nullfs mounts (the host's /rescue,
// a volume mounted at the scratch directory) are not its own files; the
// volume is counted at its host directory, which lies inside dir.
func DiskArgs(dir string) []string {
	return []string{"du", "-s", "-k", "-x", dir}
}

// errRacctDisabled is returned when the kernel has RACCT/RCTL but it was
// not enabled at boot, or has none.
var errRacctDisabled = errors.New("jail: footprint needs FreeBSD's resource accounting, which is off: add kern.racct.enable=1 to /boot/loader.conf and reboot (rctl -u needs it)")

// Footprint reads the jail's usage from `rctl -u jail:NAME`: memoryuse
// (the resident memory of the jail's processes, bytes) and cputime (CPU
// seconds of its processes, living and dead; rctl reports whole seconds,
// so differences are coarse), and its disk from `du -skx` of the jail's
// directory (its root, the agent copied into it and the scratch directory
// or volume). Jails have no engine process: the kernel is the engine, so
// EnginePIDs is empty. Untested against a real FreeBSD (see above).
func (in *instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	var fp platform.Footprint
	in.mu.Lock()
	closed := in.closed
	in.mu.Unlock()
	if closed {
		return fp, fmt.Errorf("jail %s: closed", in.name)
	}
	var out, errb strings.Builder
	if err := in.p.run.Run(ctx, UsageArgs(in.name), nil, platform.ExecIO{Stdout: &out, Stderr: &errb}); err != nil {
		return fp, rctlError(in.name, err, errb.String())
	}
	u, err := ParseRctlUsage(out.String())
	if err != nil {
		return fp, fmt.Errorf("jail %s: %w", in.name, err)
	}
	mem, ok1 := u["memoryuse"]
	cpu, ok2 := u["cputime"]
	if !ok1 || !ok2 {
		return fp, fmt.Errorf("jail %s: rctl -u printed no memoryuse or cputime: %q", in.name, out.String())
	}
	fp.MemoryBytes, fp.CPUSeconds = mem, float64(cpu)

	out.Reset()
	errb.Reset()
	if err := in.p.run.Run(ctx, DiskArgs(in.dir), nil, platform.ExecIO{Stdout: &out, Stderr: &errb}); err != nil {
		return fp, fmt.Errorf("jail %s: du %s: %w: %s", in.name, in.dir, err, strings.TrimSpace(errb.String()))
	}
	if fp.DiskBytes, err = ParseDuKiB(out.String()); err != nil {
		return fp, fmt.Errorf("jail %s: %w", in.name, err)
	}
	return fp, nil
}

// rctlError explains a failed rctl -u: resource accounting off (or not in
// the kernel) gets the fix; anything else its message.
func rctlError(name string, err error, stderr string) error {
	stderr = strings.TrimSpace(stderr)
	if strings.Contains(stderr, "kern.racct.enable") || strings.Contains(stderr, "RACCT/RCTL support not present") {
		return fmt.Errorf("%w (rctl: %s)", errRacctDisabled, stderr)
	}
	if stderr != "" {
		return fmt.Errorf("jail %s: rctl -u: %w: %s", name, err, stderr)
	}
	return fmt.Errorf("jail %s: rctl -u: %w", name, err)
}

// ParseRctlUsage parses `rctl -u` output: one resource=amount a line,
// amounts plain integers (bytes, seconds, counts). A line in another form
// (e.g. -h output's "4040K") is an error rather than a wrong number.
func ParseRctlUsage(s string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("rctl -u: line %q is not resource=amount", line)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("rctl -u: %s=%q is not a plain number", k, v)
		}
		out[k] = n
	}
	if len(out) == 0 {
		return nil, errors.New("rctl -u: no output")
	}
	return out, nil
}

// ParseDuKiB parses `du -s -k` output ("KiB<TAB>path" a line) into bytes,
// summing the lines.
func ParseDuKiB(s string) (int64, error) {
	var total int64
	lines := 0
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 || len(f) < 2 {
			return 0, fmt.Errorf("du: line %q is not KiB and a path", line)
		}
		total += n << 10
		lines++
	}
	if lines == 0 {
		return 0, errors.New("du: no output")
	}
	return total, nil
}
