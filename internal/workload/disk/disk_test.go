package disk

import (
	"context"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/workload"
)

func TestParams(t *testing.T) {
	for in, want := range map[string]string{
		"bs=1000":                  "multiple of 512 with direct=true",
		"bs=1m,size=64k":           "smaller than one block",
		"fsync=4,pattern=randread": "only reads",
		"pattern=trim":             "randread|randwrite",
		"iodepth=0":                "below its minimum",
		"rwmixread=101,pattern=rw": "above its maximum",
		"direct=maybe":             "true or false",
	} {
		_, err := Def.FromString(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", in, err, want)
		}
	}
	if _, err := Def.FromString("bs=1000,direct=false"); err != nil {
		t.Errorf("unaligned bs without O_DIRECT rejected: %v", err)
	}
	p, err := Def.FromString("")
	if err != nil {
		t.Fatal(err)
	}
	if p.Str("pattern") != "randread" || p.Size("bs") != 4096 || p.Size("size") != 1<<30 || !p.Bool("direct") ||
		p.Int("iodepth") != 16 || p.Str("engine") != "aio" || p.Int("jobs") != 1 || p.Int("fsync") != 0 || p.Int("rwmixread") != 50 {
		t.Errorf("defaults: %s", p)
	}
}

func TestAlignedBuffer(t *testing.T) {
	for _, n := range []int{512, 4096, 12345} {
		b := AlignedBuffer(n, align)
		if len(b) != n || uintptr(unsafe.Pointer(&b[0]))%align != 0 {
			t.Fatalf("AlignedBuffer(%d): len %d, address %% %d = %d", n, len(b), align, uintptr(unsafe.Pointer(&b[0]))%align)
		}
	}
}

func scratchIsEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind in scratch: %s", e.Name())
	}
}

func TestRunPatterns(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(workload.ScratchEnv, dir)
	for _, engine := range []string{"aio", "threads"} {
		for _, direct := range []string{"true", "false"} {
			for _, pat := range []string{"randread", "randwrite", "read", "write", "rw", "randrw"} {
				params := "size=1m,bs=4k,iodepth=2,jobs=2,duration=50ms,direct=" + direct + ",pattern=" + pat + ",engine=" + engine
				if pat == "randwrite" || pat == "rw" {
					params += ",fsync=8"
				}
				p, err := Def.FromString(params)
				if err != nil {
					t.Fatal(err)
				}
				readies := 0
				ms, err := Def.Agent(context.Background(), p, func() error { readies++; return nil })
				if err != nil && direct == "true" && strings.Contains(err.Error(), "rejects O_DIRECT") {
					t.Logf("%s: %v", params, err)
					scratchIsEmpty(t, dir)
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", params, err)
				}
				if readies != 1 {
					t.Fatalf("ready called %d times", readies)
				}
				units := map[string]string{"iops": "IO/s", "mib_per_sec": "MiB/s", "lat_p50": "ms", "lat_p95": "ms", "lat_p99": "ms", "lat_max": "ms"}
				if pat == "rw" || pat == "randrw" {
					units["read_iops"] = "IO/s"
					units["write_iops"] = "IO/s"
				}
				got := map[string]float64{}
				for _, m := range ms {
					if err := m.Validate(); err != nil {
						t.Fatal(err)
					}
					if units[m.Name] != m.Unit || m.Value <= 0 {
						t.Errorf("%s: metric %+v", params, m)
					}
					got[m.Name] = m.Value
				}
				if len(got) != len(units) {
					t.Errorf("%s: metrics %v, want %v", params, got, units)
				}
				if r := got["mib_per_sec"] * 1024 * 1024 / 4096 / got["iops"]; r < 0.999 || r > 1.001 {
					t.Errorf("%s: MiB/s and IOPS disagree", params)
				}
				if !(got["lat_p50"] <= got["lat_p95"] && got["lat_p95"] <= got["lat_p99"] && got["lat_p99"] <= got["lat_max"]) {
					t.Errorf("%s: percentiles out of order: %v", params, got)
				}
				if pat == "rw" || pat == "randrw" {
					if s := got["read_iops"] + got["write_iops"]; s < 0.999*got["iops"] || s > 1.001*got["iops"] {
						t.Errorf("%s: read+write IOPS %v != IOPS %v", params, s, got["iops"])
					}
				}
				scratchIsEmpty(t, dir)
			}
		}
	}
}

func TestCancelRemovesFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(workload.ScratchEnv, dir)
	for _, engine := range []string{"aio", "threads"} {
		p, err := Def.FromString("size=1m,direct=false,duration=1h,jobs=2,engine=" + engine)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		_, err = Def.Agent(ctx, p, func() error {
			ents, _ := os.ReadDir(dir)
			if len(ents) != 2 {
				t.Errorf("%d files laid out before ready, want 2", len(ents))
			}
			cancel()
			return nil
		})
		if err == nil {
			t.Fatal("cancelled run reported success")
		}
		scratchIsEmpty(t, dir)
	}
}

func TestReadyErrorRemovesFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(workload.ScratchEnv, dir)
	p, err := Def.FromString("size=64k,direct=false")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Def.Agent(context.Background(), p, func() error { return os.ErrDeadlineExceeded }); err == nil {
		t.Fatal("barrier error ignored")
	}
	scratchIsEmpty(t, dir)
}

func TestLayoutIsNotSparse(t *testing.T) {
	path := t.TempDir() + "/f"
	if err := layout(context.Background(), path, 3<<20+512, 1); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 3<<20+512 {
		t.Fatalf("size %d", st.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zeros := 0
	for _, c := range b[len(b)-4096:] {
		if c == 0 {
			zeros++
		}
	}
	if zeros > 100 {
		t.Fatalf("tail of the file is mostly zeros (%d of 4096)", zeros)
	}
}

func TestPreallocateAllocatesWithoutWriting(t *testing.T) {
	path := t.TempDir() + "/f"
	const size = 3<<20 + 4096
	if err := preallocate(context.Background(), path, size, 1); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size {
		t.Fatalf("size %d, want %d", st.Size, size)
	}
	// Every block is allocated (fallocated or, without fallocate, laid
	// out): the file is not sparse.
	if st.Blocks*512 < size {
		t.Fatalf("%d bytes allocated of %d: sparse", st.Blocks*512, size)
	}
}
