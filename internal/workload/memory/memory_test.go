package memory

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestCheckRejectsImpossibleParams(t *testing.T) {
	cases := map[string]string{
		"block-size=12":               "multiple of 8",
		"block-size=1m,total-size=4k": "smaller than one block",
		"oper=copy":                   "write|read",
		"access=random":               "seq|rnd",
		"threads=0":                   "below its minimum",
		"duration=soon":               "duration",
	}
	for in, want := range cases {
		_, err := Def.FromString(in)
		if err == nil {
			t.Errorf("%s: accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not mention %q", in, err, want)
		}
	}
	p, err := Def.FromString("")
	if err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	if p.Size("block-size") != 1024 || p.Size("total-size") != 100<<30 || p.Str("oper") != "write" || p.Str("access") != "seq" || p.Int("threads") != 1 {
		t.Errorf("unexpected defaults: %s", p)
	}
}

func TestKernels(t *testing.T) {
	buf := make([]uint64, 131)
	if got := Write(buf, 7); got != 7 {
		t.Fatalf("Write returned %d", got)
	}
	for i, v := range buf {
		if v != 7 {
			t.Fatalf("word %d = %d after Write", i, v)
		}
	}
	if got := Read(buf); got != 7*131 {
		t.Fatalf("Read = %d, want %d", got, 7*131)
	}
	r := rng(1)
	for i := 0; i < 1000; i++ {
		if k := index(r.next(), 5); k < 0 || k >= 5 {
			t.Fatalf("index out of range: %d", k)
		}
	}
	Write(buf, 0)
	writeRandom(buf, &r, 1)
	if s := Read(buf); s == 0 || s > uint64(len(buf)) {
		t.Fatalf("random write touched %d words of %d", s, len(buf))
	}
	if s := readRandom(buf, &r); s == 0 {
		t.Fatalf("random read of a partly written buffer summed to 0")
	}
}

func runOnce(t *testing.T, params string) map[string]float64 {
	t.Helper()
	p, err := Def.FromString(params)
	if err != nil {
		t.Fatal(err)
	}
	readyCalls := 0
	ms, err := Def.Agent(context.Background(), p, func() error { readyCalls++; return nil })
	if err != nil {
		t.Fatalf("%s: %v", params, err)
	}
	if readyCalls != 1 {
		t.Fatalf("ready called %d times", readyCalls)
	}
	got := map[string]float64{}
	units := map[string]string{"mib_per_sec": "MiB/s", "events_per_sec": "events/s"}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		if units[m.Name] != m.Unit {
			t.Errorf("metric %s has unit %q, want %q", m.Name, m.Unit, units[m.Name])
		}
		if m.Value <= 0 {
			t.Errorf("metric %s = %v", m.Name, m.Value)
		}
		got[m.Name] = m.Value
	}
	if len(got) != len(units) {
		t.Fatalf("metrics %v, want %v", got, units)
	}
	return got
}

func TestRunsAllModes(t *testing.T) {
	for _, oper := range []string{"write", "read"} {
		for _, access := range []string{"seq", "rnd"} {
			got := runOnce(t, "duration=100ms,threads=2,block-size=4k,oper="+oper+",access="+access)
			// MiB/s and events/s describe the same events.
			if r := got["mib_per_sec"] * 1024 * 1024 / 4096 / got["events_per_sec"]; r < 0.999 || r > 1.001 {
				t.Errorf("%s/%s: MiB/s and events/s disagree (ratio %v)", oper, access, r)
			}
		}
	}
}

func TestStopsAtTotalSize(t *testing.T) {
	// 64 events of 1 KiB in total: far less than a batch, so the duration
	// must not be what ends the run.
	p, err := Def.FromString("block-size=1k,total-size=64k,threads=3,duration=1h")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ms, err := Def.Agent(ctx, p, func() error { return nil })
	if err != nil {
		t.Fatalf("run did not end at total-size: %v", err)
	}
	for _, m := range ms {
		if m.Name == "events_per_sec" && m.Value <= 0 {
			t.Fatalf("no events")
		}
	}
}

func TestCancel(t *testing.T) {
	p, err := Def.FromString("duration=1h")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Def.Agent(ctx, p, func() error { return nil }); err == nil {
		t.Fatal("cancelled run reported success")
	}
}
