package platform

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// CopyIn writes the regular host file to the absolute guestPath with mode
// by running the CopyInArgv script through exec with the file as its
// stdin (so the file also lands in a volume mounted in the instance; and
// an engine whose exec cannot close stdin, as Kubernetes', still works).
// what prefixes errors.
func CopyIn(ctx context.Context, exec func(ctx context.Context, argv []string, stdio ExecIO) error, what, hostPath, guestPath string, mode uint32) error {
	if !strings.HasPrefix(guestPath, "/") {
		return fmt.Errorf("%s: copy in: guest path %q must be absolute", what, guestPath)
	}
	f, err := os.Open(hostPath)
	if err != nil {
		return fmt.Errorf("%s: copy in: %w", what, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: copy in: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: copy in: %s is not a regular file", what, hostPath)
	}
	var errb TailBuffer
	if err := exec(ctx, CopyInArgv(guestPath, st.Size(), mode), ExecIO{Stdin: f, Stderr: &errb}); err != nil {
		return fmt.Errorf("%s: copy in %s: %w: %s", what, guestPath, err, errb.String())
	}
	return nil
}

// CopyInArgv is a busybox shell command that writes the first size bytes
// of its stdin to guest with mode, creating parent directories: into a
// temporary file first, checked for size (a short copy is an error, not a
// truncated file), then renamed over guest.
func CopyInArgv(guest string, size int64, mode uint32) []string {
	script := `set -e; mkdir -p "$(dirname "$1")"; t="$1.isobench-tmp"; head -c "$2" > "$t"; ` +
		`n=$(wc -c < "$t"); [ "$n" -eq "$2" ] || { rm -f "$t"; echo "short copy: $n of $2 bytes" >&2; exit 1; }; chmod "$3" "$t"; mv -f "$t" "$1"`
	return []string{"/bin/sh", "-c", script, "sh", guest, strconv.FormatInt(size, 10), strconv.FormatUint(uint64(mode&0o7777), 8)}
}

// TailBuffer is a concurrency-safe writer that keeps the last 4 KiB, for
// engine error messages.
type TailBuffer struct {
	mu sync.Mutex
	b  []byte
}

// Write implements io.Writer.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = append([]byte(nil), t.b[len(t.b)-4096:]...)
	}
	return len(p), nil
}

// String returns the kept text, trimmed.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
