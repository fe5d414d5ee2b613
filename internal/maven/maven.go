// Package maven finds Java artifacts the papers' tools need (JMeter's
// xstream, Hadoop's jars) in Maven's local repository, fetching what is
// missing from Maven Central with the host's mvn once: the local
// repository is the cache, outside isobench's tree, reused by every run.
package maven

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Artifact is "group:artifact:version".
type Artifact string

var reArtifact = regexp.MustCompile(`^[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+$`)

func (a Artifact) parts() (group, name, version string, err error) {
	if !reArtifact.MatchString(string(a)) {
		return "", "", "", fmt.Errorf("maven: artifact %q: want group:artifact:version", a)
	}
	f := strings.Split(string(a), ":")
	return f[0], f[1], f[2], nil
}

// Repo is a local Maven repository.
type Repo struct {
	// Dir is the repository; empty: mvn's default, ~/.m2/repository.
	Dir string
}

func (r Repo) dir() (string, error) {
	if r.Dir != "" {
		return r.Dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("maven: no home directory for the local repository: %w", err)
	}
	return filepath.Join(home, ".m2", "repository"), nil
}

// Path is where a's jar lives in the repository (present or not).
func (r Repo) Path(a Artifact) (string, error) {
	g, n, v, err := a.parts()
	if err != nil {
		return "", err
	}
	d, err := r.dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, filepath.FromSlash(strings.ReplaceAll(g, ".", "/")), n, v, n+"-"+v+".jar"), nil
}

// Jar returns the path of a's jar, fetching it (without its dependencies)
// when the repository lacks it.
func (r Repo) Jar(ctx context.Context, a Artifact) (string, error) {
	p, err := r.Path(a)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if err := r.mvn(ctx, "dependency:get", "-Dartifact="+string(a), "-Dtransitive=false"); err != nil {
		return "", fmt.Errorf("maven: fetching %s: %w", a, err)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("maven: mvn fetched %s, yet %s is missing: %w", a, p, err)
	}
	return p, nil
}

// Classpath returns the jars of the artifacts and of everything they
// depend on at run time, in mvn's order, fetching what is missing: mvn
// resolves a throw-away project in dir (which must exist) and lists them.
func (r Repo) Classpath(ctx context.Context, dir string, as ...Artifact) ([]string, error) {
	var deps strings.Builder
	for _, a := range as {
		g, n, v, err := a.parts()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&deps, "<dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>", g, n, v)
	}
	pom := `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>` +
		`<groupId>isobench</groupId><artifactId>classpath</artifactId><version>1</version><packaging>pom</packaging>` +
		`<dependencies>` + deps.String() + `</dependencies></project>`
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), []byte(pom), 0o644); err != nil {
		return nil, fmt.Errorf("maven: %w", err)
	}
	out := filepath.Join(dir, "classpath.txt")
	if err := r.mvn(ctx, "-f", filepath.Join(dir, "pom.xml"), "dependency:build-classpath", "-Dmdep.includeScope=runtime", "-Dmdep.outputFile="+out); err != nil {
		return nil, fmt.Errorf("maven: resolving %v: %w", as, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("maven: %w", err)
	}
	var jars []string
	for _, j := range strings.Split(strings.TrimSpace(string(b)), string(os.PathListSeparator)) {
		if j != "" {
			jars = append(jars, j)
		}
	}
	if len(jars) == 0 {
		return nil, fmt.Errorf("maven: %v resolved to no jar", as)
	}
	return jars, nil
}

// mvn runs the host's mvn in batch mode against the repository.
func (r Repo) mvn(ctx context.Context, args ...string) error {
	if _, err := exec.LookPath("mvn"); err != nil {
		return errors.New("mvn is not installed on the host (apt-get install maven)")
	}
	full := []string{"-q", "-B"}
	if r.Dir != "" {
		full = append(full, "-Dmaven.repo.local="+r.Dir)
	}
	cmd := exec.CommandContext(ctx, "mvn", append(full, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		return fmt.Errorf("mvn %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return nil
}
