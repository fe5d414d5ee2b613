package hostos

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ReplaceFile replaces path, in a directory that exists, with a new
// regular file (mode 0644) holding data. Whatever was there is removed,
// never written through: a symbolic link (an image's resolv.conf often is
// one) is not followed out of an instance's root, and a hard link into a
// cached image tree is left as it was.
func ReplaceFile(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
