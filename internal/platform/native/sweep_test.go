package native

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// TestSweep: native's Sweep lists each scratch directory of the temporary
// directories it is given as an instance carrying its run's token, keeps
// what is not a directory, and leaves an isobench-native that is not
// isobench's own unsearched (one kept item).
func TestSweep(t *testing.T) {
	good, bad := t.TempDir(), t.TempDir()
	base := filepath.Join(good, "isobench-native")
	os.Mkdir(base, 0o711)
	os.Mkdir(filepath.Join(base, "r12abcdef-3-xyz"), 0o700)
	os.Mkdir(filepath.Join(base, "plain-123"), 0o700)
	os.WriteFile(filepath.Join(base, "file"), nil, 0o600)
	os.Symlink(good, filepath.Join(bad, "isobench-native"))
	found, err := Sweep(context.Background(), platform.SweepEnv{TempDirs: []string{good, bad}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]platform.Leftover{}
	for _, l := range found {
		got[l.String()] = l
	}
	if l, ok := got["dir "+filepath.Join(base, "r12abcdef-3-xyz")]; !ok || l.Token != "abcdef" || l.Remove == nil || l.Owner != "" {
		t.Errorf("the run's scratch directory: %+v (found %v)", l, found)
	}
	if l, ok := got["dir "+filepath.Join(base, "plain-123")]; !ok || l.Token != "" {
		t.Errorf("a directory without a token: %+v", l)
	}
	for _, name := range []string{filepath.Join(base, "file"), filepath.Join(bad, "isobench-native")} {
		l, ok := got["native-dir "+name]
		if !ok || l.Judge == nil || l.Remove != nil {
			t.Errorf("%s: %+v, want kept", name, l)
			continue
		}
		if dead, why := l.Judge(); dead || why == "" {
			t.Errorf("%s: judged %v %q", name, dead, why)
		}
	}
	if len(found) != 4 {
		var s []string
		for _, l := range found {
			s = append(s, l.String())
		}
		t.Errorf("found %d:\n%s", len(found), strings.Join(s, "\n"))
	}
}
