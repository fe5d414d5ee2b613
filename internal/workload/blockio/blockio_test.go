package blockio

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/workload"
)

func TestParams(t *testing.T) {
	for in, want := range map[string]string{
		"block-size=1m,size=4k":                  "smaller than one block",
		"block-size=1000,direct=true":            "multiples of 512 with direct=true",
		"block-size=4k,size=1000000,direct=true": "multiples of 512 with direct=true",
		"block-size=0":                           "below its minimum",
		"fsync=sometimes":                        "true or false",
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
	if p.Size("block-size") != 1<<20 || p.Size("size") != 1<<30 || !p.Bool("fsync") || p.Bool("direct") {
		t.Errorf("defaults: %s", p)
	}
}

func TestPoolBlocksDiffer(t *testing.T) {
	p := newPool(4096, 1<<20)
	seen := map[string]bool{}
	for i := int64(0); i < p.positions; i++ {
		b := p.block(i, 4096)
		k := string(b[:32])
		if seen[k] {
			t.Fatalf("block %d repeats an earlier block", i)
		}
		seen[k] = true
	}
	if !bytes.Equal(p.block(0, 100), p.block(p.positions, 100)) {
		t.Fatalf("pool positions do not cycle")
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(workload.ScratchEnv, dir)
	for _, params := range []string{
		"block-size=64k,size=1m",
		"block-size=64k,size=1000000,fsync=false", // last block partial
		"block-size=4k,size=256k,drop-cache=true",
		"block-size=64k,size=1m,direct=true",
		"block-size=4k,size=10k,direct=true",
	} {
		p, err := Def.FromString(params)
		if err != nil {
			t.Fatal(err)
		}
		readies := 0
		ms, err := Def.Agent(context.Background(), p, func() error { readies++; return nil })
		if err != nil && strings.Contains(err.Error(), "rejects O_DIRECT") {
			t.Logf("%s: %v", params, err)
		} else if err != nil {
			t.Fatalf("%s: %v", params, err)
		} else {
			if readies != 1 {
				t.Fatalf("ready called %d times", readies)
			}
			want := map[string]bool{"write_mb_per_sec": true, "read_mb_per_sec": true}
			for _, m := range ms {
				if err := m.Validate(); err != nil {
					t.Fatal(err)
				}
				if !want[m.Name] || m.Unit != "MB/s" || m.Value <= 0 {
					t.Errorf("%s: metric %+v", params, m)
				}
				delete(want, m.Name)
			}
			if len(want) != 0 {
				t.Errorf("%s: missing %v", params, want)
			}
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			t.Errorf("%s: left behind %s", params, e.Name())
		}
	}
}

func TestCancelRemovesFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(workload.ScratchEnv, dir)
	p, err := Def.FromString("block-size=4k,size=1m")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = Def.Agent(ctx, p, func() error {
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%d files before ready, want 1", len(ents))
		}
		cancel()
		return nil
	})
	if err == nil {
		t.Fatal("cancelled run reported success")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d files left after cancel", len(ents))
	}
}

func TestIONuggetMode(t *testing.T) {
	p, err := Def.FromString("mode=ionugget")
	if err != nil {
		t.Fatal(err)
	}
	// IO-nugget's own numbers: 128 MiB file, 1 MiB writes, 512-byte reads.
	if p.Size("size") != 128<<20 || p.Size("block-size") != 1<<20 || p.Size("read-size") != 512 {
		t.Fatalf("ionugget defaults: %s", p)
	}
	if q, _ := Def.FromString(""); q.Size("size") != 1<<30 || q.Str("mode") != "stream" {
		t.Fatalf("stream defaults changed: %s", q)
	}
	for _, bad := range []string{"mode=ionugget,direct=true", "mode=ionugget,fsync=false", "mode=ionugget,size=1k,block-size=1k,read-size=4k"} {
		if _, err := Def.FromString(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	dir := t.TempDir()
	t.Setenv(workload.ScratchEnv, dir)
	p, err = Def.FromString("mode=ionugget,size=2m,block-size=256k")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Def.Agent(context.Background(), p, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		got[m.Name] = m.Value
	}
	if got["write_mb_per_sec"] <= 0 || got["read_mb_per_sec"] <= 0 || got["write_block_max"] <= 0 {
		t.Fatalf("metrics %v", got)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind %v", left)
	}
}
