// Package fstree walks a directory tree for the archive writers (the tar
// stream Docker and Podman import, the cpio initramfs QEMU boots): each
// entry comes with its path relative to the root, its lstat information and,
// for a symbolic link, its target, so a writer only decides how to encode it.
package fstree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Entry is one file, directory, link or device below the root.
type Entry struct {
	Path string      // host path
	Rel  string      // path relative to the root, with slashes
	Info fs.FileInfo // from lstat: links are not followed
	Link string      // symlink target; "" for other kinds
}

// Walk calls fn for every entry below root (not root itself), parents
// before children, in lexical order. An error from fn or from reading the
// tree stops the walk and is returned wrapped with root.
func Walk(root string, fn func(Entry) error) error {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := Entry{Path: path, Rel: filepath.ToSlash(rel), Info: info}
		if info.Mode()&os.ModeSymlink != 0 {
			if e.Link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		return fn(e)
	})
	if err != nil {
		return fmt.Errorf("walk %s: %w", root, err)
	}
	return nil
}
