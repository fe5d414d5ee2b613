package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/hostinfo"
	"github.com/isobench/isobench/internal/store"
)

// hiddenAttacks are internal workloads (the hidden halves host-driven
// workloads start in their instances) named with parameters that would
// hand the machine to whoever wrote them: sshd with their key for root on
// every interface, an unauthenticated Redis as root, a configuration
// injected through bind.
var hiddenAttacks = []string{
	"_transfer:proto=scp,bind=0.0.0.0,authkey=7373682d,hostkey=2d2d2d",
	"_service:kind=redis,bind=0.0.0.0",
	"_service:kind=nginx,bind=127.0.0.1;include /etc/shadow",
	"_net-server:bind=0.0.0.0",
	"_spin",
}

// refusedUnknown checks that a run naming an internal workload ended as
// one for a workload never registered: a usage error, "unknown workload",
// the internal names not listed as known, nothing started.
func refusedUnknown(t *testing.T, code int, errb string, db string) {
	t.Helper()
	oneUsageLine(t, code, errb)
	if !strings.Contains(errb, "unknown workload") {
		t.Errorf("stderr %q: want unknown workload", errb)
	}
	for _, n := range []string{"_transfer", "_service-log", "_net-client", "_spark-driver"} {
		if strings.Contains(errb, n+",") || strings.Contains(errb, n+")") {
			t.Errorf("stderr lists the internal workload %s as known: %q", n, errb)
		}
	}
	if db != "" && fileExists(db) {
		t.Errorf("the store %s was created: something started", db)
	}
}

// TestHiddenWorkloadsRefusedFromCLIAndStudyFiles: --workload and a study
// file cannot name an internal workload.
func TestHiddenWorkloadsRefusedFromCLIAndStudyFiles(t *testing.T) {
	dir := t.TempDir()
	for i, w := range hiddenAttacks {
		db := filepath.Join(dir, "cli"+itoaN(i)+".db")
		st, _, errb := newTestState(t)
		code := Main(context.Background(), st, []string{"run", "--platform", "native", "--workload", w, "--reps", "1", "--db", db})
		refusedUnknown(t, code, errb.String(), db)

		file := filepath.Join(dir, "study"+itoaN(i)+".yaml")
		if err := os.WriteFile(file, []byte("platforms: [native]\nreps: 1\nworkloads: ['"+w+"']\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		db = filepath.Join(dir, "file"+itoaN(i)+".db")
		st, _, errb = newTestState(t)
		code = Main(context.Background(), st, []string{"run", file, "--db", db})
		refusedUnknown(t, code, errb.String(), db)
	}
	// nor are they listed
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"workloads"}); code != 0 {
		t.Fatalf("workloads: exit %d %s", code, errb)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "_") {
			t.Errorf("workloads lists %q", line)
		}
	}
}

// TestHiddenWorkloadsRefusedFromStoredPlans: a shared store whose run's
// plan was crafted to name an internal workload cannot start it through
// 'run --resume', also after 'merge' copied the run into another store.
func TestHiddenWorkloadsRefusedFromStoredPlans(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for i, w := range hiddenAttacks {
		db := filepath.Join(dir, "crafted"+itoaN(i)+".db")
		s, err := store.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		// the fingerprint of this host, as whoever crafted the store can copy it
		id, err := s.BeginRun(ctx, Study{Platforms: []string{"native"}, Workloads: []string{w}, Reps: "1"}, hostinfo.Fingerprint())
		if err != nil {
			t.Fatal(err)
		}
		s.EndRun(ctx, id, "interrupted", context.Canceled)
		s.Close()
		before, _ := os.ReadFile(db)

		st, _, errb := newTestState(t)
		code := Main(ctx, st, []string{"run", "--resume", "1", "--db", db})
		refusedUnknown(t, code, errb.String(), "")
		if after, _ := os.ReadFile(db); string(after) != string(before) {
			t.Errorf("%s: the store changed: something ran", w)
		}

		merged := filepath.Join(dir, "merged"+itoaN(i)+".db")
		st, _, errb = newTestState(t)
		if code := Main(ctx, st, []string{"merge", merged, db}); code != 0 {
			t.Fatalf("merge: exit %d %s", code, errb)
		}
		st, _, errb = newTestState(t)
		code = Main(ctx, st, []string{"run", "--resume", "1", "--db", merged})
		refusedUnknown(t, code, errb.String(), "")
	}
}
