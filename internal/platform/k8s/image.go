package k8s

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/image"
)

// ImageRepo is the repository isobench's profiles are imported under.
func ImageRepo(profile string) string { return "isobench/" + profile }

// containerdRef is how containerd names a short reference.
func containerdRef(ref string) string {
	if strings.Count(strings.SplitN(ref, "/", 2)[0], ".") == 0 && !strings.HasPrefix(ref, "localhost/") {
		return "docker.io/" + ref
	}
	return ref
}

// ctrBinary finds ctr: the one scripts/build-k8s.sh built (it matches the
// cluster's containerd), else $PATH's.
func ctrBinary() (string, error) {
	const built = "/var/cache/isobench/k8s/bin/current/ctr"
	if _, err := os.Stat(built); err == nil {
		return built, nil
	}
	p, err := exec.LookPath("ctr")
	if err != nil {
		return "", fmt.Errorf("k8s: ctr not found (scripts/build-k8s.sh builds it): %w", err)
	}
	return p, nil
}

// containerdSocket is the node's containerd socket images are imported
// through, or "" when there is none on this host (a remote cluster: the
// image must already be on its nodes).
func (p *Platform) containerdSocket() string {
	if s := p.opts.Extra["containerd"]; s != "" {
		return s
	}
	if _, err := os.Stat(DefaultContainerd); err == nil {
		return DefaultContainerd
	}
	return ""
}

// ctr runs ctr against the node's containerd in the k8s.io namespace.
func (p *Platform) ctr(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	bin, err := ctrBinary()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"-a", p.containerdSocket(), "-n", "k8s.io"}, args...)...)
	cmd.Stdin = stdin
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// hasImage says whether the node's containerd has ref.
func (p *Platform) hasImage(ctx context.Context, ref string) (bool, error) {
	out, err := p.ctr(ctx, nil, "images", "ls", "-q")
	if err != nil {
		return false, err
	}
	want := containerdRef(ref)
	for _, l := range strings.Fields(out) {
		if l == want {
			return true, nil
		}
	}
	return false, nil
}

// Prepare implements platform.Preparer: it imports the profile's image
// into the node's containerd (once per content digest).
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	if profile == "" {
		profile = image.Minimal
	}
	_, err := p.image(ctx, profile)
	return err
}

// image returns the reference of the profile's image, importing it into
// the node's containerd when it is not there.
func (p *Platform) image(ctx context.Context, profile string) (string, error) {
	b := image.Builder{AgentBinary: p.env.AgentBinary, StateDir: p.env.StateDir, Log: p.env.Log}
	digest, err := b.Digest(profile)
	if err != nil {
		return "", fmt.Errorf("k8s: image %s: %w", profile, err)
	}
	ref := ImageRepo(profile) + ":" + digest
	p.imageMu.Lock()
	defer p.imageMu.Unlock()
	if p.refs[profile] == ref {
		return ref, nil
	}
	if p.containerdSocket() == "" {
		// a cluster elsewhere: the image must have been imported on its nodes
		fmt.Fprintf(p.log(), "k8s: no local containerd (%s): assuming image %s is on the nodes\n", DefaultContainerd, ref)
		p.refs[profile] = ref
		return ref, nil
	}
	ok, err := p.hasImage(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("k8s: %w", err)
	}
	if !ok {
		fmt.Fprintf(p.log(), "k8s: importing image %s into containerd (%s)\n", ref, p.containerdSocket())
		if err := p.importImage(ctx, b, profile, ref); err != nil {
			return "", err
		}
	}
	p.refs[profile] = ref
	return ref, nil
}

// importImage builds the profile's root file system and imports it with
// `ctr images import` as a one-layer docker-archive image.
func (p *Platform) importImage(ctx context.Context, b image.Builder, profile, ref string) error {
	tmpBase := p.env.StateDir
	if tmpBase != "" {
		if err := os.MkdirAll(tmpBase, 0o700); err != nil {
			return fmt.Errorf("k8s: %w", err)
		}
	}
	tmp, err := os.MkdirTemp(tmpBase, "k8s-image-")
	if err != nil {
		return fmt.Errorf("k8s: %w", err)
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "rootfs")
	if err := b.BuildRootfs(ctx, profile, root); err != nil {
		return fmt.Errorf("k8s: building image %s: %w", profile, err)
	}
	archive := filepath.Join(tmp, "image.tar")
	if err := writeDockerArchive(root, archive, ref); err != nil {
		return fmt.Errorf("k8s: image archive: %w", err)
	}
	f, err := os.Open(archive)
	if err != nil {
		return fmt.Errorf("k8s: %w", err)
	}
	defer f.Close()
	if _, err := p.ctr(ctx, f, "images", "import", "-"); err != nil {
		return fmt.Errorf("k8s: importing %s: %w", ref, err)
	}
	return nil
}

// writeDockerArchive writes the tree at root as a `docker save` archive
// (manifest.json, the image config, one layer) tagged ref.
func writeDockerArchive(root, path, ref string) error {
	layerPath := path + ".layer"
	lf, err := os.Create(layerPath)
	if err != nil {
		return err
	}
	defer os.Remove(layerPath)
	h := sha256.New()
	if err := image.Tar(root, io.MultiWriter(lf, h)); err != nil {
		lf.Close()
		return err
	}
	if err := lf.Close(); err != nil {
		return err
	}
	diffID := hex.EncodeToString(h.Sum(nil))
	cfg, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"config":       map[string]any{"Cmd": []string{image.AgentPath, "agent", "idle"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + diffID}},
	})
	if err != nil {
		return err
	}
	cfgSum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	layerName := diffID + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{ref}, "Layers": []string{layerName}}})
	if err != nil {
		return err
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	addBytes := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	err = func() error {
		st, err := os.Stat(layerPath)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: diffID + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: layerName, Mode: 0o644, Size: st.Size(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		l, err := os.Open(layerPath)
		if err != nil {
			return err
		}
		defer l.Close()
		if _, err := io.Copy(tw, l); err != nil {
			return err
		}
		if err := addBytes(cfgName, cfg); err != nil {
			return err
		}
		if err := addBytes("manifest.json", manifest); err != nil {
			return err
		}
		return tw.Close()
	}()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
