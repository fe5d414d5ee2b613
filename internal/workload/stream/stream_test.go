package stream

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParams(t *testing.T) {
	for in, want := range map[string]string{
		"array-size=lots":        "positive number of elements",
		"array-size=0":           "positive number of elements",
		"array-size=3,threads=4": "smaller than threads",
		"passes=0":               "below its minimum",
	} {
		_, err := Def.FromString(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", in, err, want)
		}
	}
	p, err := Def.FromString("")
	if err != nil {
		t.Fatal(err)
	}
	if p.Str("array-size") != "auto" || p.Int("passes") != 10 || p.Int("threads") != 1 {
		t.Errorf("defaults: %s", p)
	}
	if Def.Timeout(p) <= 0 {
		t.Errorf("no timeout for defaults")
	}
}

func TestArraySize(t *testing.T) {
	dir := t.TempDir()
	write := func(idx, size string) {
		d := filepath.Join(dir, idx)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "size"), []byte(size+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// No cache information: STREAM's default.
	if n, err := arraySize("auto", dir); err != nil || n != DefaultElements {
		t.Fatalf("auto without caches = %d, %v", n, err)
	}
	write("index0", "48K")
	write("index2", "2048K")
	write("index3", "491520K")
	llc, err := LastLevelCache(dir)
	if err != nil || llc != 491520<<10 {
		t.Fatalf("LastLevelCache = %d, %v", llc, err)
	}
	n, err := arraySize("auto", dir)
	if err != nil || n*8 < 4*llc {
		t.Fatalf("auto = %d elements (%d bytes), want >= 4x %d", n, n*8, llc)
	}
	if n, err := arraySize("1m", dir); err != nil || n != 1<<20 {
		t.Fatalf("1m = %d, %v", n, err)
	}
	if n, err := arraySize("123456", dir); err != nil || n != 123456 {
		t.Fatalf("123456 = %d, %v", n, err)
	}
}

func TestKernels(t *testing.T) {
	a := []float64{1, 2, 3}
	b := []float64{4, 5, 6}
	c := make([]float64, 3)
	Copy(c, a)
	Scale(b, c, 2)
	if b[2] != 6 {
		t.Fatalf("scale: %v", b)
	}
	Add(c, a, b)
	if c[1] != 2+4 {
		t.Fatalf("add: %v", c)
	}
	Triad(a, b, c, 3)
	if a[0] != 2+3*3 {
		t.Fatalf("triad: %v", a)
	}
	for _, k := range []int{1, 3, 7} {
		parts := chunks(10, k)
		if parts[0][0] != 0 || parts[k-1][1] != 10 {
			t.Fatalf("chunks(10,%d) = %v", k, parts)
		}
		for i := 1; i < k; i++ {
			if parts[i][0] != parts[i-1][1] {
				t.Fatalf("chunks(10,%d) not contiguous: %v", k, parts)
			}
		}
	}
}

func TestRun(t *testing.T) {
	for _, threads := range []string{"1", "3"} {
		p, err := Def.FromString("array-size=200000,passes=3,threads=" + threads)
		if err != nil {
			t.Fatal(err)
		}
		readies := 0
		ms, err := Def.Agent(context.Background(), p, func() error { readies++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if readies != 1 {
			t.Fatalf("ready called %d times", readies)
		}
		want := map[string]bool{"stream_copy": true, "stream_scale": true, "stream_add": true, "stream_triad": true, AvgMetric: true}
		byName := map[string]float64{}
		for _, m := range ms {
			byName[m.Name] = m.Value
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			if !want[m.Name] || m.Unit != "MB/s" || m.Value <= 0 {
				t.Errorf("unexpected metric %+v", m)
			}
			delete(want, m.Name)
		}
		if len(want) != 0 {
			t.Errorf("missing metrics %v", want)
		}
		if avg := (byName["stream_copy"] + byName["stream_scale"] + byName["stream_add"] + byName["stream_triad"]) / 4; math.Abs(byName[AvgMetric]-avg) > 1e-9*avg {
			t.Errorf("%s = %v, want the kernels' mean %v", AvgMetric, byName[AvgMetric], avg)
		}
	}
}

func TestValidateCatchesWrongResult(t *testing.T) {
	a := []float64{1, 1, 1, 1}
	b := []float64{2, 2, 2, 2}
	c := []float64{0, 0, 0, 0}
	parts := chunks(4, 2)
	if err := validate(a, b, c, parts, 0); err != nil {
		t.Fatalf("initial arrays rejected: %v", err)
	}
	c[3] = 1
	if err := validate(a, b, c, parts, 0); err == nil || !strings.Contains(err.Error(), "element 3") {
		t.Fatalf("corrupted element not reported: %v", err)
	}
}

func TestCancel(t *testing.T) {
	p, err := Def.FromString("array-size=1000")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Def.Agent(ctx, p, func() error { return nil }); err == nil {
		t.Fatal("cancelled run reported success")
	}
}

func TestCopyMatchesBuiltin(t *testing.T) {
	const n = 3*ntBlock/8 + 1000
	src := make([]float64, n)
	for i := range src {
		src[i] = float64(i)*1.5 + 0.25
	}
	// Offsets move the destination off page boundaries; lengths cover
	// below, at and above the size the non-temporal path starts at.
	for _, off := range []int{0, 1, 7, 513} {
		for _, ln := range []int{0, 1, 100, 2*ntBlock/8 - 1, 2 * ntBlock / 8, 2*ntBlock/8 + 3, n - 513} {
			dst := make([]float64, n)
			Copy(dst[off:off+ln], src[off:off+ln])
			for i := range dst {
				want := 0.0
				if i >= off && i < off+ln {
					want = src[i]
				}
				if dst[i] != want {
					t.Fatalf("off %d len %d: dst[%d] = %v, want %v", off, ln, i, dst[i], want)
				}
			}
		}
	}
}

func TestKernelsMatchGoLoops(t *testing.T) {
	// The vector kernels (amd64) against the plain Go loops, at lengths
	// around the vector width so the tails are exercised, on offset
	// slices so unaligned starts are too.
	for n := 0; n <= 37; n++ {
		for off := 0; off < 2; off++ {
			a, b, c := make([]float64, n+off), make([]float64, n+off), make([]float64, n+off)
			for i := range a {
				a[i], b[i], c[i] = float64(i)+0.5, float64(3*i)+0.25, float64(i*i)+1
			}
			wantS, wantA, wantT := make([]float64, n), make([]float64, n), make([]float64, n)
			scaleGo(wantS, c[off:], 3)
			addGo(wantA, a[off:], b[off:])
			triadGo(wantT, b[off:], c[off:], 3)
			gotS, gotA, gotT := make([]float64, n), make([]float64, n), make([]float64, n)
			Scale(gotS, c[off:], 3)
			Add(gotA, a[off:], b[off:])
			Triad(gotT, b[off:], c[off:], 3)
			for i := 0; i < n; i++ {
				// Triad may be fused (one rounding instead of two): exact here,
				// since every value is a small binary fraction.
				if gotS[i] != wantS[i] || gotA[i] != wantA[i] || gotT[i] != wantT[i] {
					t.Fatalf("n=%d off=%d i=%d: scale %g/%g add %g/%g triad %g/%g", n, off, i, gotS[i], wantS[i], gotA[i], wantA[i], gotT[i], wantT[i])
				}
			}
		}
	}
}
