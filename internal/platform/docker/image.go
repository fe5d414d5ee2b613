package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
)

// ImageRepo is the repository isobench imports a profile as; the tag is
// the builder's content digest, so an image is reused exactly when its
// content would not change.
func ImageRepo(profile string) string { return "isobench/" + profile }

// imageRef names the image for profile with the given digest.
func imageRef(profile, digest string) string { return ImageRepo(profile) + ":" + digest }

// EnsureImage makes sure the image for profile exists in the daemon,
// building and importing it from the host files if its digest is not
// there yet. It never pulls. It returns the image reference.
func (p *Platform) EnsureImage(ctx context.Context, profile string) (string, error) {
	p.imageMu.Lock()
	defer p.imageMu.Unlock()
	b := image.Builder{AgentBinary: p.env.AgentBinary, StateDir: p.env.StateDir, Log: p.env.Log}
	digest, err := b.Digest(profile)
	if err != nil {
		return "", fmt.Errorf("docker image %s: %w", profile, err)
	}
	ref := imageRef(profile, digest)
	err = p.c.do(ctx, http.MethodGet, "/images/"+ref+"/json", nil, nil, nil)
	if err == nil {
		return ref, nil
	}
	if !isNotFound(err) {
		return "", fmt.Errorf("docker image %s: %w", ref, err)
	}
	if profile == image.Debian {
		// A 650 MB Debian layer imported once per Debian content, and the
		// agent committed on top: an agent rebuild adds megabytes, not a
		// second copy of Debian.
		if err := p.layerAgent(ctx, b, profile, digest); err != nil {
			return "", err
		}
	} else if err := p.buildAndImport(ctx, b.BuildRootfs, profile, digest); err != nil {
		return "", err
	}
	p.pruneStale(ctx, profile, ref)
	return ref, nil
}

// buildAndImport builds a root file system with build and imports it as
// profile:digest.
func (p *Platform) buildAndImport(ctx context.Context, build func(context.Context, string, string) error, profile, digest string) error {
	ref := imageRef(profile, digest)
	return image.BuildInTemp(ctx, p.env.StateDir, "docker", profile, ref, build, func(tmp string) error {
		fmt.Fprintf(p.log(), "docker: importing image %s\n", ref)
		return p.importRootfs(ctx, tmp, profile, digest)
	})
}

// baseProfile names the repository of a profile's agent-less base layer.
func baseProfile(profile string) string { return profile + "-base" }

// layerAgent makes profile:digest from the profile's base image (imported
// when missing) plus one layer holding the agent.
func (p *Platform) layerAgent(ctx context.Context, b image.Builder, profile, digest string) error {
	baseDigest, err := image.DebianBaseDigest(ctx)
	if err != nil {
		return fmt.Errorf("docker image %s: %w", profile, err)
	}
	base := imageRef(baseProfile(profile), baseDigest)
	if err := p.c.do(ctx, http.MethodGet, "/images/"+base+"/json", nil, nil, nil); isNotFound(err) {
		build := func(ctx context.Context, _ string, dir string) error { return b.BuildDebianBaseRootfs(ctx, dir) }
		if err := p.buildAndImport(ctx, build, baseProfile(profile), baseDigest); err != nil {
			return err
		}
		p.pruneStale(ctx, baseProfile(profile), base)
	} else if err != nil {
		return fmt.Errorf("docker image %s: %w", base, err)
	}
	ref := imageRef(profile, digest)
	fmt.Fprintf(p.log(), "docker: adding the agent to %s as %s\n", base, ref)
	var created struct {
		ID string `json:"Id"`
	}
	body := map[string]any{"Image": base, "Cmd": []string{image.AgentPath}, "Labels": map[string]string{platform.Label: "1"}}
	if err := p.c.do(ctx, http.MethodPost, "/containers/create", nil, body, &created); err != nil {
		return fmt.Errorf("docker image %s: %w", ref, err)
	}
	defer func() {
		q := url.Values{}
		q.Set("force", "1")
		p.c.do(context.WithoutCancel(ctx), http.MethodDelete, "/containers/"+created.ID, q, nil, nil)
	}()
	f, err := os.Open(b.AgentBinary)
	if err != nil {
		return fmt.Errorf("docker image %s: %w", ref, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("docker image %s: %w", ref, err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeOneFileTar(pw, strings.TrimPrefix(image.AgentPath, "/"), 0o755, st.Size(), st.ModTime(), f))
	}()
	defer pr.Close()
	q := url.Values{}
	q.Set("path", "/")
	if err := p.c.do(ctx, http.MethodPut, "/containers/"+created.ID+"/archive", q, io.Reader(pr), nil); err != nil {
		return fmt.Errorf("docker image %s: adding the agent: %w", ref, err)
	}
	q = url.Values{}
	q.Set("container", created.ID)
	q.Set("repo", ImageRepo(profile))
	q.Set("tag", digest)
	q.Add("changes", "LABEL "+platform.ImageLabel+"=1")
	if err := p.c.do(ctx, http.MethodPost, "/commit", q, map[string]any{}, nil); err != nil {
		return fmt.Errorf("docker image %s: commit: %w", ref, err)
	}
	return nil
}

// staleAge is how old an isobench image of an earlier agent or content
// must be before a newer import removes it: a concurrent run may still be
// about to use a younger one.
const staleAge = time.Hour

// pruneStale removes profile's images other than keep that are older than
// staleAge and used by no container. Failures are not errors: the daemon
// refuses to remove an image in use, and the next import tries again.
func (p *Platform) pruneStale(ctx context.Context, profile, keep string) {
	var imgs []struct {
		RepoTags []string
		Created  int64
	}
	q := url.Values{}
	q.Set("filters", fmt.Sprintf(`{"reference":[%q]}`, ImageRepo(profile)))
	if err := p.c.do(ctx, http.MethodGet, "/images/json", q, nil, &imgs); err != nil {
		return
	}
	for _, im := range imgs {
		if time.Since(time.Unix(im.Created, 0)) < staleAge {
			continue
		}
		for _, ref := range im.RepoTags {
			if ref == keep {
				continue
			}
			if p.c.do(ctx, http.MethodDelete, "/images/"+ref, nil, nil, nil) == nil {
				fmt.Fprintf(p.log(), "docker: removed the stale image %s\n", ref)
			}
		}
	}
}

// image returns the profile's image ref, ensuring it once per platform:
// hashing the agent binary on every Create would add tens of milliseconds
// to the start-up times isobench measures.
func (p *Platform) image(ctx context.Context, profile string) (string, error) {
	p.imageMu.Lock()
	ref, ok := p.refs[profile]
	p.imageMu.Unlock()
	if ok {
		return ref, nil
	}
	ref, err := p.EnsureImage(ctx, profile)
	if err != nil {
		return "", err
	}
	p.imageMu.Lock()
	if p.refs == nil {
		p.refs = map[string]string{}
	}
	p.refs[profile] = ref
	p.imageMu.Unlock()
	return ref, nil
}

// forgetImage drops ref from the cache.
func (p *Platform) forgetImage(ref string) {
	p.imageMu.Lock()
	defer p.imageMu.Unlock()
	for k, v := range p.refs {
		if v == ref {
			delete(p.refs, k)
		}
	}
}

// Prepare implements platform.Preparer: it ensures the profile's image so
// that no image work happens inside a timed Create.
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	if profile == "" {
		profile = image.Minimal
	}
	_, err := p.image(ctx, profile)
	return err
}

var _ platform.Preparer = (*Platform)(nil)

// importQuery is the query of POST /images/create for importing a tar.
func importQuery(profile, digest string) url.Values {
	q := url.Values{}
	q.Set("fromSrc", "-")
	q.Set("repo", ImageRepo(profile))
	q.Set("tag", digest)
	q.Add("changes", "LABEL "+platform.ImageLabel+"=1")
	return q
}

// importRootfs streams dir as a tar into POST /images/create.
func (p *Platform) importRootfs(ctx context.Context, dir, profile, digest string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(image.Tar(dir, pw)) }()
	defer pr.Close()
	ref := imageRef(profile, digest)
	var progress pipeBuffer
	if err := p.c.do(ctx, http.MethodPost, "/images/create", importQuery(profile, digest), io.Reader(pr), &progress); err != nil {
		return fmt.Errorf("docker image import %s: %w", ref, err)
	}
	if err := progressError(progress.b); err != nil {
		return fmt.Errorf("docker image import %s: %w", ref, err)
	}
	// Make sure the tag is really there before anyone uses it.
	if err := p.c.do(ctx, http.MethodGet, "/images/"+ref+"/json", nil, nil, nil); err != nil {
		return fmt.Errorf("docker image import %s: not present after import: %w", ref, err)
	}
	return nil
}

// pipeBuffer collects an answer body.
type pipeBuffer struct{ b []byte }

func (p *pipeBuffer) Write(b []byte) (int, error) { p.b = append(p.b, b...); return len(b), nil }

// progressError finds an error message in a JSON progress stream (the
// daemon answers 200 and reports failures inside the stream).
func progressError(stream []byte) error {
	dec := json.NewDecoder(bytes.NewReader(stream))
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading progress: %w", err)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		if m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
	}
}

// Images lists the references (repo:tag) of profile's imported images.
func (p *Platform) Images(ctx context.Context, profile string) ([]string, error) {
	var imgs []struct{ RepoTags []string }
	q := url.Values{}
	q.Set("filters", fmt.Sprintf(`{"reference":[%q]}`, ImageRepo(profile)))
	if err := p.c.do(ctx, http.MethodGet, "/images/json", q, nil, &imgs); err != nil {
		return nil, fmt.Errorf("docker images: %w", err)
	}
	var refs []string
	for _, im := range imgs {
		refs = append(refs, im.RepoTags...)
	}
	return refs, nil
}

// RemoveImages deletes the images of profile's repository for which keep
// returns false (nil keeps none). It returns the removed references.
func (p *Platform) RemoveImages(ctx context.Context, profile string, keep func(ref string) bool) ([]string, error) {
	refs, err := p.Images(ctx, profile)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, ref := range refs {
		if keep != nil && keep(ref) {
			continue
		}
		if err := p.c.do(ctx, http.MethodDelete, "/images/"+ref, nil, nil, nil); err != nil && !isNotFound(err) {
			return removed, fmt.Errorf("docker remove image %s: %w", ref, err)
		}
		removed = append(removed, ref)
	}
	return removed, nil
}

// statePath joins parts below the state directory.
func (p *Platform) statePath(parts ...string) string {
	return filepath.Join(append([]string{p.env.StateDir}, parts...)...)
}
