package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/testkit/fakeplatform"
)

// Hostile input to the CLI (issue 23): what a shared store, a shared
// study file or another local user can plant must not steer root.

// TestReportNeverWritesThroughALink: -o and --html name a file; a link
// planted there (e.g. in /tmp, to /etc/passwd) is refused, and its target
// is left as it was.
func TestReportNeverWritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	writeStore(t, db)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o600)
	link := filepath.Join(dir, "report.html")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"html", "csv", "table"} {
		st, _, errb := newTestState(t)
		code := Main(context.Background(), st, []string{"report", "--db", db, "--format", format, "-o", link})
		oneUsageLine(t, code, errb.String())
		if !strings.Contains(errb.String(), "symbolic link") {
			t.Errorf("%s: %s", format, errb)
		}
		if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
			t.Fatalf("%s: the link's target was written: %q", format, b)
		}
	}
	// A plain file is replaced (not appended to, not followed), 0644.
	plain := filepath.Join(dir, "plain.csv")
	os.WriteFile(plain, []byte("old"), 0o600)
	st, _, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"report", "--db", db, "--format", "csv", "-o", plain}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	b, _ := os.ReadFile(plain)
	if !strings.HasPrefix(string(b), "platform") && !strings.Contains(string(b), "native") {
		t.Errorf("csv report: %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestRunHTMLCannotNameTheStore: run --html naming the store is refused
// before anything runs (it would overwrite the results with a page).
func TestRunHTMLCannotNameTheStore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	st, _, errb := newTestState(t)
	code := Main(context.Background(), st, []string{"run", "--platform", "native", "--workload", "cpu:duration=100ms", "--reps", "1", "--db", db, "--html", db})
	oneUsageLine(t, code, errb.String())
	if !strings.Contains(errb.String(), "result store itself") {
		t.Errorf("stderr: %s", errb)
	}
	if fileExists(db) {
		t.Errorf("the store was created: something started")
	}
}

// TestRunsEscapesTerminalSequences: a shared store whose command line,
// status or error holds terminal escapes prints them escaped.
func TestRunsEscapesTerminalSequences(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	ctx := context.Background()
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.BeginRun(ctx, Study{}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	evil := "isobench run \x1b]0;pwned\x07\x1b[2J\x1b[1A\r\u009b31m"
	if err := s.SetCommand(ctx, id, evil); err != nil {
		t.Fatal(err)
	}
	s.EndRun(ctx, id, "failed", errors.New("boom \x1b[31mred"))
	s.Close()
	st, out, errb := newTestState(t)
	if code := Main(ctx, st, []string{"runs", "--db", db}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, bad := range []string{"\x1b", "\x07", "\r", "\u009b"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("runs printed a raw %q:\n%q", bad, out)
		}
	}
	if !strings.Contains(out.String(), `\x1b]0;pwned\x07`) || !strings.Contains(out.String(), `boom \x1b[31mred`) {
		t.Errorf("the escapes are not shown escaped:\n%s", out)
	}
}

func TestSanitizeAndTermSafeWriter(t *testing.T) {
	for in, want := range map[string]string{
		"plain é ü 日本\n\tok": "plain é ü 日本\n\tok",
		"a\x1b[0mb":          `a\x1b[0mb`,
		"\x00\x7f":           `\x00\x7f`,
		"c1 \u0085 \u009b":   `c1 \x85 \x9b`,
		"bad \xff utf8":      `bad \xff utf8`,
		"ls \u2028":          `ls \u2028`,
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	// a rune split across writes passes whole; ESC split is still caught
	var b bytes.Buffer
	w := &termSafe{w: &b}
	s := "é\x1b[1m日"
	for i := 0; i < len(s); i++ {
		w.Write([]byte{s[i]})
	}
	w.Flush()
	if b.String() != `é\x1b[1m日` {
		t.Errorf("byte by byte: %q", b.String())
	}
}

// TestStudyFileCannotNameHosts: a shared study file that names hosts
// (hosts:, or a platform's host=/key=/binary=) would connect to them with
// the operator's SSH keys; it is refused unless --host replaces them or
// --trust-hosts is given.
func TestStudyFileCannotNameHosts(t *testing.T) {
	dir := t.TempDir()
	for i, body := range []string{
		"platforms: [native]\nworkloads: [cpu]\nhosts: [\"ssh://root@192.0.2.7\"]\n",
		"platforms: [\"native:host=ssh://root@192.0.2.7,key=/root/.ssh/id_ed25519\"]\nworkloads: [cpu]\n",
		"platforms: [\"native:host=ssh://root@192.0.2.7,binary=/tmp/x\"]\nworkloads: [cpu]\n",
	} {
		path := filepath.Join(dir, "s"+itoaN(i)+".yaml")
		os.WriteFile(path, []byte(body), 0o644)
		db := filepath.Join(dir, "s"+itoaN(i)+".db")
		st, _, errb := newTestState(t)
		code := Main(context.Background(), st, []string{"run", path, "--db", db})
		oneUsageLine(t, code, errb.String())
		if !strings.Contains(errb.String(), "--trust-hosts") || !strings.Contains(errb.String(), "192.0.2.7") {
			t.Errorf("%d: %s", i, errb)
		}
		if fileExists(db) {
			t.Errorf("%d: the store was created: something started", i)
		}
	}
	st := Study{Platforms: []string{"native", "docker:host=ssh://a@b"}, Hosts: []string{"local", "ssh://x@y"}}
	if got := namedRemotes(st, false, false); len(got) != 2 {
		t.Errorf("named: %q", got)
	}
	if got := namedRemotes(st, true, true); len(got) != 0 {
		t.Errorf("flags replace the file's hosts and platforms, yet: %q", got)
	}
}

// TestResumeRefusesAnotherHost: a run begun elsewhere (a shared or merged
// store) is not finished here under its fingerprint.
func TestResumeRefusesAnotherHost(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	ctx := context.Background()
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.BeginRun(ctx, Study{Platforms: []string{"native"}, Workloads: []string{"cpu:duration=100ms"}, Reps: "1"},
		map[string]string{"hostname": "elsewhere", "kernel": "1.0"})
	s.EndRun(ctx, id, "interrupted", context.Canceled)
	s.Close()
	st, _, errb := newTestState(t)
	code := Main(ctx, st, []string{"run", "--resume", "1", "--db", db})
	oneUsageLine(t, code, errb.String())
	if !strings.Contains(errb.String(), "hostname was elsewhere") {
		t.Errorf("stderr: %s", errb)
	}
}

// TestStudyRunReportsItsOwnRun: when the run of 'study run' never begins
// (here the image cannot be prepared), the store's earlier run is not
// reported, checked or drawn as if it were this study's.
func TestStudyRunReportsItsOwnRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	writeStore(t, db) // an earlier run: native and docker, cpu
	st, out, errb := newTestState(t)
	fake := func(name string) platform.Factory {
		return platform.Factory{Name: name, New: func(context.Context, platform.Options, platform.Env) (platform.Platform, error) {
			return &unpreparable{Platform: &fakeplatform.Platform{Label: name, Workloads: builtin.Workloads()}}, nil
		}}
	}
	st.Platforms = platform.NewRegistry(fake("native"), fake("docker"))
	page := filepath.Join(dir, "page.html")
	code := Main(context.Background(), st, []string{"study", "run", "000", "--db", db, "-o", page, "--quiet"})
	if code == 0 {
		t.Fatalf("exit 0 although no image could be prepared: %s", out)
	}
	if fileExists(page) {
		t.Errorf("a report of the store's earlier run was written as the study's")
	}
	if strings.Contains(out.String(), "AGREES") || strings.Contains(out.String(), "DISAGREES") || strings.Contains(out.String(), "UNDECIDED") {
		t.Errorf("findings were checked against another run:\n%s", out)
	}
	if !strings.Contains(errb.String(), "no image here") {
		t.Errorf("the run did not stop where this test stops it (preparing the image): %s", errb)
	}
}

type unpreparable struct{ *fakeplatform.Platform }

func (unpreparable) Prepare(context.Context, string) error {
	return errors.New("no image here")
}

// TestDuetPreflight: --duet takes exactly two platforms that run on this
// host's CPUs and in-guest workloads; anything else is one usage line.
func TestDuetPreflight(t *testing.T) {
	for _, args := range [][]string{
		{"--platform", "native", "--workload", "cpu"},
		{"--platform", "native", "--platform", "qemu", "--workload", "cpu"},
		{"--platform", "native", "--platform", "gvisor", "--workload", "cpu"},
		{"--platform", "native", "--platform", "docker", "--workload", "startup"},
	} {
		db := filepath.Join(t.TempDir(), "s.db")
		st, _, errb := newTestState(t)
		code := Main(context.Background(), st, append([]string{"run", "--duet", "--db", db}, args...))
		oneUsageLine(t, code, errb.String())
		if fileExists(db) {
			t.Errorf("%v: the store was created", args)
		}
	}
}
