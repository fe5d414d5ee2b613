package podman

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
)

// baseProfile names the repository of a profile's agent-less base image.
func baseProfile(profile string) string { return profile + "-base" }

// staleAge is how old an isobench image that is no longer current must be
// before it is removed: a run started just before may be about to use a
// younger one (as for Docker).
const staleAge = time.Hour

// podmanImage is the part of `podman images --format json` used here.
type podmanImage struct {
	Names   []string
	Created int64
}

// staleImages picks from imgs the references other than keep of images
// created at least staleAge before now.
func staleImages(imgs []podmanImage, keep string, now time.Time) []string {
	var out []string
	for _, im := range imgs {
		if now.Sub(time.Unix(im.Created, 0)) < staleAge {
			continue
		}
		for _, ref := range im.Names {
			if ref != keep {
				out = append(out, ref)
			}
		}
	}
	return out
}

// pruneStale removes profile's images other than keep that are older than
// staleAge. Without --force podman refuses to remove an image a container
// uses; failures are not errors (the next new image tries again). Every
// agent rebuild used to leave a whole Debian image (~670 MB) behind.
func (p *Platform) pruneStale(ctx context.Context, profile, keep string) {
	out, err := podman(ctx, nil, "images", "--format", "json", "--filter", "reference="+ImageRepo(profile))
	if err != nil {
		return
	}
	var imgs []podmanImage
	if json.Unmarshal([]byte(out), &imgs) != nil {
		return
	}
	for _, ref := range staleImages(imgs, keep, time.Now()) {
		if _, err := podman(ctx, nil, "rmi", ref); err == nil {
			fmt.Fprintf(p.log(), "podman: removed the stale image %s\n", ref)
		}
	}
}

// imageExists reports whether podman has the image ref.
func imageExists(ctx context.Context, ref string) bool {
	return exec.CommandContext(ctx, "podman", "image", "exists", ref).Run() == nil
}

// layerAgent makes ref (the debian profile with this agent) from the
// profile's base image, the Debian tree without the agent (imported when
// its content digest is missing), plus one layer holding the agent: a
// container of the base gets the agent copied in and is committed.
func (p *Platform) layerAgent(ctx context.Context, b image.Builder, profile, ref string) error {
	baseDigest, err := image.DebianBaseDigest(ctx)
	if err != nil {
		return fmt.Errorf("podman image %s: %w", profile, err)
	}
	base := ImageRepo(baseProfile(profile)) + ":" + baseDigest
	if !imageExists(ctx, base) {
		build := func(ctx context.Context, _, dir string) error { return b.BuildDebianBaseRootfs(ctx, dir) }
		if err := p.importImage(ctx, build, baseProfile(profile), base); err != nil {
			return err
		}
		p.pruneStale(ctx, baseProfile(profile), base)
	}
	fmt.Fprintf(p.log(), "podman: adding the agent to %s as %s\n", base, ref)
	name := containerName("agent-layer")
	out, err := podman(ctx, nil, "create", "--name", name, "--label", platform.Label+"=1", base, image.AgentPath)
	if err != nil {
		return fmt.Errorf("podman image %s: %w", ref, err)
	}
	id := strings.TrimSpace(out)
	defer podman(context.WithoutCancel(ctx), nil, "rm", "--force", id)
	f, err := os.Open(b.AgentBinary)
	if err != nil {
		return fmt.Errorf("podman image %s: %w", ref, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("podman image %s: %w", ref, err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(oneFileTar(pw, strings.TrimPrefix(image.AgentPath, "/"), 0o755, st, f))
	}()
	defer pr.Close()
	// a tar on stdin: root-owned and executable whatever the host file is
	if _, err := podman(ctx, pr, "cp", "-", id+":/"); err != nil {
		return fmt.Errorf("podman image %s: adding the agent: %w", ref, err)
	}
	if _, err := podman(ctx, nil, "commit", "--quiet", "--change", "LABEL "+platform.ImageLabel+"=1", id, ref); err != nil {
		return fmt.Errorf("podman image %s: commit: %w", ref, err)
	}
	return nil
}

// oneFileTar writes a tar holding one regular file at name (owned by
// root, with mode), its content read from r.
func oneFileTar(w io.Writer, name string, mode int64, st os.FileInfo, r io.Reader) error {
	tw := tar.NewWriter(w)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: st.Size(), ModTime: st.ModTime(), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if n, err := io.Copy(tw, r); err != nil {
		return err
	} else if n != st.Size() {
		return fmt.Errorf("agent binary changed while copying (%d of %d bytes)", n, st.Size())
	}
	return tw.Close()
}
