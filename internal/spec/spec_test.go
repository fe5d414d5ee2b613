package spec

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	s, err := Parse("docker:cpus=1,memory=2g,network=host")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "docker" || s.Params["cpus"] != "1" || s.Params["memory"] != "2g" || s.Params["network"] != "host" {
		t.Fatalf("%+v", s)
	}
	if got := s.String(); got != "docker:cpus=1,memory=2g,network=host" {
		t.Fatalf("canonical form %q", got)
	}
	tool, err := Parse("tool:fio:bs=4k")
	if err != nil || tool.Name != "tool:fio" || tool.Params["bs"] != "4k" {
		t.Fatalf("tool spec: %+v %v", tool, err)
	}
	plain, err := Parse(" cpu ")
	if err != nil || plain.Name != "cpu" || len(plain.Params) != 0 {
		t.Fatalf("plain: %+v %v", plain, err)
	}
	for _, bad := range []string{"", ":a=1", "cpu:threads", "cpu:a=1,a=2", "cp u", "cpu:=3"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSizesAndDurations(t *testing.T) {
	cases := map[string]int64{"4096": 4096, "4k": 4096, "4KiB": 4096, "1m": 1 << 20, "2g": 2 << 30, "1GB": 1 << 30, "0.5k": 512}
	for in, want := range cases {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "k", "-1", "ten"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	if d, err := ParseDuration("10"); err != nil || d != 10*time.Second {
		t.Errorf("bare seconds: %v %v", d, err)
	}
	if d, err := ParseDuration("500ms"); err != nil || d != 500*time.Millisecond {
		t.Errorf("500ms: %v %v", d, err)
	}
	if _, err := ParseDuration("-3s"); err == nil {
		t.Error("negative duration accepted")
	}
	if n, err := ParseInts("1, 2,4", 1, 4096); err != nil || len(n) != 3 || n[2] != 4 {
		t.Errorf("ParseInts: %v %v", n, err)
	}
	if _, err := ParseInts("1,0", 1, 4096); err == nil {
		t.Error("0 instances accepted")
	}
}

// Impossible values are refused at parse time, and an overflow says "too
// large" (issue 12, defect 4: it used to wrap to a negative number and be
// reported as below the minimum).
func TestImpossibleValues(t *testing.T) {
	for _, bad := range []string{"nan", "NaN", "inf", "+Inf", "-inf", "1e300", "1e400", "99999999999999999999t", "2000t", "1e20k"} {
		n, err := ParseSize(bad)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, accepted", bad, n)
		}
	}
	for _, big := range []string{"1e300", "1e400", "inf", "99999999999999999999t", "2000t", "1e20k", "1048577g"} {
		if _, err := ParseSize(big); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "too large") {
			t.Errorf("ParseSize(%q): %v, want too large", big, err)
		}
	}
	if n, err := ParseSize("1024t"); err != nil || n != MaxSize {
		t.Errorf("ParseSize(1024t) = %d, %v", n, err)
	}
	for _, bad := range []string{"nan", "-inf", "-1", "ten", "1x"} {
		if d, err := ParseDuration(bad); err == nil || errors.Is(err, ErrTooLarge) {
			t.Errorf("ParseDuration(%q) = %v, %v; want an invalid-duration error", bad, d, err)
		}
	}
	for _, big := range []string{"inf", "1e300", "1e400", "99999999999999999999h", "9999999999h", "9000h"} {
		if _, err := ParseDuration(big); !errors.Is(err, ErrTooLarge) {
			t.Errorf("ParseDuration(%q): %v, want too large", big, err)
		}
	}
	if d, err := ParseDuration("8760h"); err != nil || d != 8760*time.Hour {
		t.Errorf("a year: %v %v", d, err)
	}
	for _, big := range []string{"5000", "99999999999999999999", "1,2,100000"} {
		if _, err := ParseInts(big, 1, 4096); !errors.Is(err, ErrTooLarge) {
			t.Errorf("ParseInts(%q): %v, want too large", big, err)
		}
	}
	for _, bad := range []string{"0", "-99999999999999999999", "1.5", "x"} {
		if _, err := ParseInts(bad, 1, 4096); err == nil || errors.Is(err, ErrTooLarge) {
			t.Errorf("ParseInts(%q): %v, want invalid", bad, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{64 << 20: "64m", 2 << 30: "2g", 512 << 10: "512k", 1000: "1000", 1<<40 + 0: "1t", 3<<20 + 1<<19: "3584k"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
