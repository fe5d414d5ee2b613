package maven

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	p, err := Repo{Dir: "/r"}.Path("com.thoughtworks.xstream:xstream:1.4.8")
	if err != nil || p != "/r/com/thoughtworks/xstream/xstream/1.4.8/xstream-1.4.8.jar" {
		t.Errorf("path %q, %v", p, err)
	}
	for _, bad := range []Artifact{"xstream", "a:b", "a:b:c:d", "a:b:1.0 -Dx=y", "../x:y:z/.."} {
		if _, err := (Repo{Dir: "/r"}).Path(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestJarFromTheLocalRepository: a jar already in the repository is
// used as it is; one missing is fetched with mvn (when mvn and Maven
// Central answer).
func TestJarFromTheLocalRepository(t *testing.T) {
	dir := t.TempDir()
	r := Repo{Dir: dir}
	want, _ := r.Path("org.example:present:1")
	os.MkdirAll(filepath.Dir(want), 0o755)
	os.WriteFile(want, []byte("jar"), 0o644)
	if got, err := r.Jar(context.Background(), "org.example:present:1"); err != nil || got != want {
		t.Errorf("present: %q, %v", got, err)
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		t.Skip("mvn is not installed")
	}
	if _, err := r.Jar(context.Background(), "org.example.isobench.none:nothing:0.0.1"); err == nil || !strings.Contains(err.Error(), "fetching org.example.isobench.none:nothing:0.0.1") {
		t.Errorf("an artifact that does not exist: %v", err)
	}
}
