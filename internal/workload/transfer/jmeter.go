package transfer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/maven"
	"github.com/isobench/isobench/internal/tools/jmeter"
)

// jmeterFTPJar is the FTP sampler Debian's jmeter-ftp installs.
const jmeterFTPJar = "/usr/share/jmeter/lib/ext/ApacheJMeter_ftp.jar"

// needJMeter checks that the host has JMeter with its FTP sampler.
func needJMeter() error {
	if _, err := exec.LookPath(jmeter.Binary); err != nil {
		return fmt.Errorf("transfer ftp: client=jmeter: JMeter is not installed on the host (apt-get install %s)", strings.Join(jmeter.Packages, " "))
	}
	if _, err := os.Stat(jmeterFTPJar); err != nil {
		return fmt.Errorf("transfer ftp: client=jmeter: JMeter has no FTP sampler (%s; apt-get install jmeter-ftp)", jmeterFTPJar)
	}
	return nil
}

// jmeterEnv is the environment JMeter 2.13 needs to load a plan here
// (jmeter.Env): xstream 1.4.8 from the local Maven repository, fetched
// once with mvn.
func jmeterEnv(ctx context.Context) ([]string, error) {
	x, err := maven.Repo{}.Jar(ctx, jmeter.XStreamArtifact)
	if err != nil {
		return nil, fmt.Errorf("transfer ftp: client=jmeter needs %s for Debian's JMeter 2.13: %w", jmeter.XStreamArtifact, err)
	}
	return append(os.Environ(), jmeter.Env(x, jmeter.XPP3Jar)...), nil
}

// jmeterClient prepares one JMeter download of the data set from s into
// dir/data (its folders made first; one FTP request per file, written to
// its place) and returns the timed part: JMeter's run, whose results file
// gives the client's metrics (cr.ms). JMeter exits 0 whatever happened:
// its output and every request's result are checked.
func (r *run) jmeterClient(s *server, dir string, cr *clientResult) (func(context.Context) error, error) {
	for _, e := range r.ds.Dirs() {
		if err := os.MkdirAll(filepath.Join(dir, "data", filepath.FromSlash(e.Path)), 0o755); err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	plan := jmeter.Plan{Server: s.host, Port: s.port, User: "anonymous", Password: "isobench", Threads: 1, Loops: 1}
	for _, e := range r.ds.Files() {
		plan.Requests = append(plan.Requests, jmeter.Request{Remote: "data/" + e.Path, Local: filepath.Join(dir, "data", filepath.FromSlash(e.Path))})
	}
	b, err := plan.JMX()
	if err != nil {
		return nil, err
	}
	work := dir + ".jmeter"
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	planFile, jtl := filepath.Join(work, "plan.jmx"), filepath.Join(work, "results.jtl")
	if err := os.WriteFile(planFile, b, 0o644); err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	return func(ctx context.Context) error {
		defer os.RemoveAll(work)
		env, err := jmeterEnv(ctx)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		cmd := r.command(ctx, append([]string{jmeter.Binary}, jmeter.Args(planFile, jtl, filepath.Join(work, "jmeter.log"))...)...)
		cmd.Env = env
		cmd.Dir = work
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("jmeter: %w: %s", err, lastLines(out.String(), 4))
		}
		if err := jmeter.CheckOutput(out.String()); err != nil {
			return err
		}
		f, err := os.Open(jtl)
		if err != nil {
			return fmt.Errorf("jmeter wrote no results (%w): %s", err, lastLines(out.String(), 4))
		}
		defer f.Close()
		ms, err := jmeter.Parse(f)
		if err != nil {
			return fmt.Errorf("against %s:%s: %w", s.host, strconv.Itoa(s.port), err)
		}
		if cr != nil {
			cr.ms = ms
		}
		return nil
	}, nil
}
