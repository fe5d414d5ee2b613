package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/privdir"
)

// The oltp table is prepared once: after the first repetition that ran
// sysbench prepare, the server's data directory (MariaDB stopped cleanly)
// is kept as a tar on the host, keyed by the MariaDB and sysbench versions
// and the prepare arguments; later repetitions unpack it into the new
// server instance before MariaDB starts and skip prepare. Every
// repetition so starts from the same freshly prepared table (read_write
// changes it), and none waits for prepare again.

// SeedDir is where prepared data directories are kept on the host. The
// name is fixed, in a directory anyone can write to: a tar found there is
// unpacked into a server's data directory only when the directory is
// isobench's own (privdir: a real directory of this user's, mode 0700,
// that no one else can write to) and the tar a regular file of this
// user's; anything else is refused with an error naming it.
func SeedDir() string { return filepath.Join(os.TempDir(), "isobench-oltp-seeds") }

// seedCache makes (or checks) the directory holding file, a seed.
func seedCache(file string) error {
	if err := privdir.Private(filepath.Dir(file)); err != nil {
		return fmt.Errorf("prepared tables: %w", err)
	}
	return nil
}

// inScratch is a shell path to kind's directory in an instance's scratch.
func inScratch(kind string) string {
	return `"${` + guestenv.ScratchEnv + `:-` + guestenv.ScratchDir + `}/service-` + kind + `"`
}

// execOut runs argv in inst and returns its standard output.
func execOut(ctx context.Context, inst platform.Instance, argv ...string) (string, error) {
	var out, errb bytes.Buffer
	if err := inst.Exec(ctx, argv, platform.ExecIO{Stdout: &out, Stderr: &errb}); err != nil {
		return "", fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, lastLines(errb.String(), 3))
	}
	return out.String(), nil
}

// seedKey names the prepared data for the server in srv and the prepare
// command (the part that does not depend on the address) with the given
// sysbench version.
func seedKey(ctx context.Context, srv platform.Instance, prepare []string, sysbenchVersion string) (string, error) {
	v, err := execOut(ctx, srv, "mariadbd", "--version")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "format=1\nmariadb=%s\nsysbench=%s\n", strings.TrimSpace(v), strings.TrimSpace(sysbenchVersion))
	for _, a := range prepare {
		if strings.HasPrefix(a, "--mysql-host=") || strings.HasPrefix(a, "--mysql-port=") {
			continue
		}
		fmt.Fprintf(h, "arg=%s\n", a)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// importSeed unpacks the prepared data directory into srv's MariaDB
// directory (before the server starts).
func importSeed(ctx context.Context, srv platform.Instance, file string) error {
	if err := seedCache(file); err != nil {
		return err
	}
	f, err := privdir.Open(file)
	if err != nil {
		return fmt.Errorf("prepared table: %w", err)
	}
	defer f.Close()
	var errb bytes.Buffer
	script := "mkdir -p " + inScratch(MariaDB) + " && tar -C " + inScratch(MariaDB) + " -xf -"
	if err := srv.Exec(ctx, []string{"sh", "-c", script}, platform.ExecIO{Stdin: f, Stderr: &errb}); err != nil {
		return fmt.Errorf("unpacking the prepared table: %w: %s", err, lastLines(errb.String(), 3))
	}
	return nil
}

// exportSeed packs srv's (stopped) MariaDB data directory into file.
func exportSeed(ctx context.Context, srv platform.Instance, file string) error {
	if err := seedCache(file); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".seed-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	var errb bytes.Buffer
	err = srv.Exec(ctx, []string{"sh", "-c", "tar -C " + inScratch(MariaDB) + " -cf - data"}, platform.ExecIO{Stdout: tmp, Stderr: &errb})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("packing the prepared table: %w: %s", err, lastLines(errb.String(), 3))
	}
	return os.Rename(tmp.Name(), file)
}
