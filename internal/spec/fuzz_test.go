package spec

import (
	"reflect"
	"strings"
	"testing"
)

// go test -run=^$ -fuzz=FuzzParse -fuzztime=10s ./internal/spec
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"cpu", " cpu ", "cpu:threads=2,max-prime=10000,duration=10s", "docker:cpus=1,memory=2g,network=host,storage=volume",
		"tool:fio:pattern=randread,bs=4k,iodepth=16", "tool:fio", "tool:", "cpu:", "cpu:a=1,a=2", "cpu:threads", ":a=1", "",
		"cpu:a=b=c", "cpu:a=b:c", "cpu:a b=1", "cpu:=3", "docker:cpus=nan", "cpu:threads=1|2|4", "lxc:note=<b>&\"x\"|y", "a:b:c:d",
		"cpu:k=\x00", "ünï:k=v", "cpu:,", "cpu: , k=v",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		if sp.Name == "" || sp.Params == nil {
			t.Fatalf("Parse(%q) = %+v", s, sp)
		}
		// The canonical form reads back as the same spec.
		back, err := Parse(sp.String())
		if err != nil {
			t.Fatalf("Parse(%q) ok but its canonical form %q fails: %v", s, sp.String(), err)
		}
		if back.Name != sp.Name || !reflect.DeepEqual(back.Params, sp.Params) {
			t.Fatalf("round trip of %q: %+v -> %q -> %+v", s, sp, sp.String(), back)
		}
	})
}

// go test -run=^$ -fuzz=FuzzValues -fuzztime=10s ./internal/spec
func FuzzValues(f *testing.F) {
	for _, s := range []string{"4096", "4k", "4KiB", "1m", "2g", "1GB", "0.5k", "1024t", "1025t", "nan", "inf", "-inf", "1e300", "1e400",
		"99999999999999999999t", "-1", "", "k", "10s", "500ms", "2m", "10", "8760h", "9000h", "-3s", "1e-400", "0x10", "1_000", "1,2,4", "1,0", "5000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && (n < 0 || n > MaxSize) {
			t.Fatalf("ParseSize(%q) = %d, outside [0, MaxSize]", s, n)
		}
		if d, err := ParseDuration(s); err == nil && (d < 0 || d > MaxDuration) {
			t.Fatalf("ParseDuration(%q) = %v, outside [0, MaxDuration]", s, d)
		}
		if ns, err := ParseInts(s, 1, 4096); err == nil {
			if len(ns) == 0 {
				t.Fatalf("ParseInts(%q): no counts and no error", s)
			}
			for _, n := range ns {
				if n < 1 || n > 4096 {
					t.Fatalf("ParseInts(%q) = %v, outside [1, 4096]", s, ns)
				}
			}
		}
	})
}
