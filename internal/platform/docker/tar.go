package docker

import (
	"archive/tar"
	"fmt"
	"io"
	"time"
)

// writeOneFileTar writes a tar holding one regular file, root-owned, read
// from r (exactly size bytes).
func writeOneFileTar(w io.Writer, name string, mode, size int64, mtime time.Time, r io.Reader) error {
	tw := tar.NewWriter(w)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     mode,
		Size:     size,
		ModTime:  mtime,
		Uname:    "root",
		Gname:    "root",
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar %s: %w", name, err)
	}
	n, err := io.CopyN(tw, r, size)
	if err != nil {
		return fmt.Errorf("tar %s: copied %d of %d bytes: %w", name, n, size, err)
	}
	return tw.Close()
}
