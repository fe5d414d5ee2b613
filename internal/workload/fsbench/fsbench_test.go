package fsbench

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

func seeded() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

func TestGammaSizeMeanAndVariance(t *testing.T) {
	r := seeded()
	for _, mean := range []int64{16 << 10, 128 << 10} {
		const n = 20000
		var sum, sq float64
		for i := 0; i < n; i++ {
			v := float64(GammaSize(r, mean))
			if v < 0 {
				t.Fatalf("negative size %v", v)
			}
			sum += v
			sq += v * v
		}
		m := sum / n
		if rel := math.Abs(m-float64(mean)) / float64(mean); rel > 0.03 {
			t.Errorf("mean of %d draws = %.0f, want %d within 3%% (off by %.1f%%)", n, m, mean, rel*100)
		}
		// Gamma(shape 1.5, scale mean/1.5) has variance mean^2/1.5.
		variance := sq/n - m*m
		want := float64(mean) * float64(mean) / DefaultGamma
		if rel := math.Abs(variance-want) / want; rel > 0.1 {
			t.Errorf("variance %.3g, want %.3g within 10%%", variance, want)
		}
	}
}

func TestGammaSmallShape(t *testing.T) {
	// randomfileaccess's $fileidx: shape 0.1, scale 1, mean 0.1.
	r := seeded()
	const n = 50000
	var sum float64
	for i := 0; i < n; i++ {
		sum += Gamma(r, 0.1, 1)
	}
	if m := sum / n; math.Abs(m-0.1) > 0.01 {
		t.Errorf("mean of Gamma(0.1, 1) = %.4f, want 0.1 ± 0.01", m)
	}
}

func TestTables(t *testing.T) {
	r := seeded()
	sizes := randomFileSizes()
	if got := sizes.Mean(); math.Abs(got-26.71*1024) > 1 {
		t.Errorf("$filesize table mean = %.0f, want 26.71k", got)
	}
	const n = 50000
	var sum float64
	for i := 0; i < n; i++ {
		v := sizes.Draw(r)
		if v < 1024 || v > 1707*1024 {
			t.Fatalf("file size %d outside the table's 1k..1707k", v)
		}
		sum += float64(v)
	}
	if m := sum / n; math.Abs(m-sizes.Mean())/sizes.Mean() > 0.05 {
		t.Errorf("mean drawn file size %.0f, want %.0f within 5%%", m, sizes.Mean())
	}
	reads := randomReadSizes()
	eights := 0
	for i := 0; i < n; i++ {
		v := reads.Draw(r)
		if v < 8192 || v > 65536 || v%1024 != 0 {
			t.Fatalf("read size %d not a multiple of 1k in 8k..64k", v)
		}
		if v == 8192 {
			eights++
		}
	}
	if frac := float64(eights) / n; frac < 0.84 || frac > 0.87 {
		t.Errorf("fraction of 8k reads %.3f, want about 0.85", frac)
	}
}

func TestDirectoryTree(t *testing.T) {
	for _, tc := range []struct{ nfiles, width int }{{10000, 20}, {20000, 50}, {1000, 1000000}} {
		fs, err := PopulateFileset(seeded(), "/nonexistent", "bigfileset", tc.nfiles, tc.width,
			func(*rand.Rand) int64 { return 1 })
		if err != nil {
			t.Fatal(err)
		}
		if fs.NumFiles() != tc.nfiles || fs.Bytes != int64(tc.nfiles) {
			t.Fatalf("nfiles=%d: got %d files, %d bytes", tc.nfiles, fs.NumFiles(), fs.Bytes)
		}
		seen := map[string]bool{}
		for _, e := range fs.files {
			if seen[e.path] {
				t.Fatalf("duplicate path %s", e.path)
			}
			seen[e.path] = true
			if !strings.HasPrefix(e.path, fs.Root+"/") {
				t.Fatalf("file %s outside root %s", e.path, fs.Root)
			}
		}
		per := fs.FilesPerDir()
		last := filepath.Dir(fs.files[len(fs.files)-1].path)
		if tc.width >= tc.nfiles {
			// varmail: one leaf directory is wide enough for everything.
			if len(per) > 3 {
				t.Errorf("width %d, %d files: %d leaf directories, want nearly all in one", tc.width, tc.nfiles, len(per))
			}
			continue
		}
		// Every full leaf directory drew its width from a gamma around
		// meandirwidth (FileBench fills ceil(width) entries); the one that
		// received the last file may be cut short.
		sum, n := 0, 0
		for d, c := range per {
			if d != last {
				sum += c
				n++
			}
		}
		mean := float64(sum) / float64(n)
		if rel := math.Abs(mean-float64(tc.width)) / float64(tc.width); rel > 0.15 {
			t.Errorf("width %d: mean files per leaf directory %.1f over %d dirs (off by %.0f%%)", tc.width, mean, n, rel*100)
		}
		if fs.maxDepth < 2 || fs.maxDepth > 30 {
			t.Errorf("width %d: depth %d implausible", tc.width, fs.maxDepth)
		}
	}
}

func resolve(t *testing.T, raw map[string]string) workload.Params {
	t.Helper()
	p, err := Def.Resolve(raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsPerPersonality(t *testing.T) {
	want := map[string]Config{
		FileServer:       {NFiles: 10000, MeanDirWidth: 20, MeanFileSize: 128 << 10, NThreads: 50, IOSize: 1 << 20, MeanAppendSize: 16 << 10},
		WebServer:        {NFiles: 1000, MeanDirWidth: 20, MeanFileSize: 16 << 10, NThreads: 100, IOSize: 1 << 20, MeanAppendSize: 16 << 10},
		VarMail:          {NFiles: 1000, MeanDirWidth: 1000000, MeanFileSize: 16 << 10, NThreads: 16, IOSize: 1 << 20, MeanAppendSize: 16 << 10},
		RandomFileAccess: {NFiles: 10000, MeanDirWidth: 20, MeanFileSize: -1, NThreads: 5, IOSize: 0, MeanAppendSize: 16 << 10},
	}
	for name, w := range want {
		c, err := ConfigFrom(resolve(t, map[string]string{"personality": name}))
		if err != nil {
			t.Fatal(err)
		}
		w.Personality, w.Runtime = name, 60*time.Second
		if c != w {
			t.Errorf("%s defaults: got %+v, want %+v", name, c, w)
		}
	}
	c, err := ConfigFrom(resolve(t, map[string]string{"personality": VarMail, "nfiles": "50", "meanfilesize": "random", "iosize": "4k"}))
	if err != nil || c.NFiles != 50 || c.MeanFileSize != -1 || c.IOSize != 4096 {
		t.Errorf("overrides: %+v, %v", c, err)
	}
}

func TestParamValidation(t *testing.T) {
	for _, tc := range []struct {
		raw  map[string]string
		want []string
	}{
		{map[string]string{"nfiles": "0"}, []string{"nfiles=0"}},
		{map[string]string{"nthreads": "0"}, []string{"nthreads=0"}},
		{map[string]string{"iosize": "0"}, []string{"iosize=0"}},
		{map[string]string{"meanappendsize": "0"}, []string{"meanappendsize=0"}},
		{map[string]string{"meandirwidth": "1"}, []string{"meandirwidth=1"}},
		{map[string]string{"nfiles": "many"}, []string{`nfiles="many"`}},
		{map[string]string{"meanfilesize": "big"}, []string{"meanfilesize"}},
		{map[string]string{"iosize": "random"}, []string{"iosize=random"}},
		{map[string]string{"iosize": "1g"}, []string{"iosize=1g"}},
		{map[string]string{"personality": RandomFileAccess, "meanappendsize": "512"}, []string{"meanappendsize=512"}},
		// all problems in one message
		{map[string]string{"nfiles": "0", "nthreads": "-3", "iosize": "0"}, []string{"nfiles=0", "nthreads=-3", "iosize=0"}},
	} {
		_, err := Def.Resolve(tc.raw)
		if err == nil {
			t.Errorf("%v: accepted", tc.raw)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not mention %q", tc.raw, err, w)
			}
		}
	}
	if _, err := Def.Resolve(map[string]string{"personality": "mailserver"}); err == nil {
		t.Error("unknown personality accepted")
	}
}

func TestParamsRoundTrip(t *testing.T) {
	// The agent receives params as their canonical string; empty defaults
	// must survive it.
	p := resolve(t, map[string]string{"personality": WebServer, "nthreads": "7"})
	q, err := Def.FromString(p.String())
	if err != nil {
		t.Fatalf("FromString(%q): %v", p.String(), err)
	}
	c1, _ := ConfigFrom(p)
	c2, err := ConfigFrom(q)
	if err != nil || c1 != c2 || c2.NThreads != 7 || c2.NFiles != 1000 {
		t.Errorf("round trip: %+v vs %+v (%v)", c1, c2, err)
	}
}

func metricMap(t *testing.T, ms []sample.Metric) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Errorf("invalid metric: %v", err)
		}
		if _, dup := out[m.Name]; dup {
			t.Errorf("metric %s twice", m.Name)
		}
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || m.Value < 0 {
			t.Errorf("metric %s = %v", m.Name, m.Value)
		}
		out[m.Name] = m.Value
	}
	return out
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("scratch %s not empty after the run: %v", dir, ents)
	}
}

func TestPersonalitiesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs each personality for 1 s")
	}
	wantOps := map[string][]string{
		FileServer:       {"createfile", "writewholefile", "closefile", "openfile", "appendfilerand", "readwholefile", "deletefile", "statfile"},
		WebServer:        {"openfile", "readwholefile", "closefile", "appendfilerand"},
		VarMail:          {"deletefile", "createfile", "appendfilerand", "fsync", "closefile", "openfile", "readwholefile"},
		RandomFileAccess: {"openfile", "appendfilerand", "closefile", "readwholefile"},
	}
	for name, ops := range wantOps {
		t.Run(name, func(t *testing.T) {
			scratch := t.TempDir()
			t.Setenv(workload.ScratchEnv, scratch)
			p := resolve(t, map[string]string{"personality": name, "nfiles": "200", "nthreads": "4", "runtime": "1s"})
			readies := 0
			var setup []string
			ms, err := Def.Agent(context.Background(), p, func() error {
				readies++
				// the fileset is on disk before the timed part starts
				filepath.WalkDir(scratch, func(path string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						setup = append(setup, path)
					}
					return nil
				})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if readies != 1 {
				t.Errorf("ready called %d times", readies)
			}
			if len(setup) < 100 {
				t.Errorf("only %d files preallocated before ready", len(setup))
			}
			m := metricMap(t, ms)
			for _, k := range []string{"ops_per_sec", "mb_per_sec", "latency_mean"} {
				if m[k] <= 0 {
					t.Errorf("%s = %v, want > 0", k, m[k])
				}
			}
			for _, op := range ops {
				if m["op_count_"+op] <= 0 {
					t.Errorf("op_count_%s = %v", op, m["op_count_"+op])
				}
				if m["latency_p99_"+op] < 0 || m["latency_mean_"+op] <= 0 && op != "appendfilerand" {
					t.Errorf("%s latency mean %v p99 %v", op, m["latency_mean_"+op], m["latency_p99_"+op])
				}
			}
			var sum float64
			for _, op := range ops {
				sum += m["op_count_"+op]
			}
			// ops are counted up to the deadline, so the rate is over exactly 1 s
			if got := m["ops_per_sec"]; math.Abs(got-sum) > 0.5 {
				t.Errorf("ops_per_sec %v inconsistent with %v ops in 1 s", got, sum)
			}
			switch name {
			case WebServer:
				// ten open-read-close per log append
				loops := m["op_count_appendfilerand"]
				if r := m["op_count_readwholefile"]; r < 10*loops || r > 10*(loops+4) {
					t.Errorf("webserver: %v reads for %v appends", r, loops)
				}
			case FileServer:
				// three closes per created file, one per open
				c, o := m["op_count_createfile"], m["op_count_openfile"]
				if cl := m["op_count_closefile"]; cl < c+o-4 || cl > c+o {
					t.Errorf("fileserver: %v closes for %v creates and %v opens", cl, c, o)
				}
			}
			assertEmpty(t, scratch)
		})
	}
}

func TestCancelCleansUp(t *testing.T) {
	scratch := t.TempDir()
	t.Setenv(workload.ScratchEnv, scratch)
	p := resolve(t, map[string]string{"personality": FileServer, "nfiles": "100", "nthreads": "2", "runtime": "1h"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Def.Agent(ctx, p, func() error {
			time.AfterFunc(200*time.Millisecond, cancel)
			return nil
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("cancelled run returned no error")
		}
	case <-time.After(time.Minute):
		t.Fatal("run did not stop after cancel")
	}
	assertEmpty(t, scratch)
}

func TestPickSemantics(t *testing.T) {
	fs, err := PopulateFileset(seeded(), "/nonexistent", "set", 4, 20, func(*rand.Rand) int64 { return 1 })
	if err != nil {
		t.Fatal(err)
	}
	fs.files[1].exists, fs.files[3].exists = true, true
	// round-robin over existing files
	a, _ := fs.pick(true, -1)
	b, _ := fs.pick(true, -1)
	if a.index != 1 || b.index != 3 {
		t.Fatalf("rotor picked %d, %d; want 1, 3", a.index, b.index)
	}
	// both existing files busy: no existing file to pick, but idle ones exist
	if _, err := fs.pick(true, -1); err != errNoFile {
		t.Fatalf("want errNoFile, got %v", err)
	}
	c, err := fs.pick(false, 3) // first non-existing at or after 3 wraps to 0
	if err != nil || c.index != 0 {
		t.Fatalf("indexed pick: %v, %v", c, err)
	}
	d, _ := fs.pick(false, -1)
	if d.index != 2 {
		t.Fatalf("non-existing rotor picked %d, want 2 (0 is busy)", d.index)
	}
	// every file busy: a pick waits until one is released
	got := make(chan *entry)
	go func() {
		e, _ := fs.pick(true, -1)
		got <- e
	}()
	yes := true
	time.AfterFunc(20*time.Millisecond, func() { fs.unbusy(c, &yes, 0) })
	select {
	case e := <-got:
		if e != c {
			t.Fatalf("waiting pick got %d, want %d", e.index, c.index)
		}
	case <-time.After(time.Minute):
		t.Fatal("pick did not wake up")
	}
}
