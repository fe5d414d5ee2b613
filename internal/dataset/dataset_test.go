package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParse(t *testing.T) {
	s, err := Parse("tree/2500/75m", 1)
	if err != nil || s.Kind != Tree || s.Nodes != 2500 || s.Size != 75<<20 {
		t.Fatalf("%+v %v", s, err)
	}
	s, err = Parse("file/450m", 1)
	if err != nil || s.Kind != File || s.Size != 450<<20 {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []string{"", "file", "file/0", "file/x", "tree/1/1m", "tree/10", "dir/1m", "tree/10/1m/2", "file/100g"} {
		if _, err := Parse(bad, 1); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestTreeShape(t *testing.T) {
	s, _ := Parse("tree/2500/75m", 7)
	es := s.layout()
	if len(es) != 2500 {
		t.Fatalf("%d nodes, want 2500", len(es))
	}
	var total int64
	var dirs, text int
	var smallest, largest int64 = 1 << 62, 0
	for _, e := range es {
		if e.Dir {
			dirs++
			continue
		}
		total += e.Size
		smallest, largest = min(smallest, e.Size), max(largest, e.Size)
		if e.Text {
			text++
		}
	}
	if total != 75<<20 {
		t.Errorf("%d bytes, want %d", total, 75<<20)
	}
	if dirs != 250 || text == 0 || text == 2250 {
		t.Errorf("%d folders, %d text files of 2250", dirs, text)
	}
	if largest < 100*smallest {
		t.Errorf("sizes not diversified: %d..%d", smallest, largest)
	}
}

func TestGenerateVerifyDeterministic(t *testing.T) {
	s, _ := Parse("tree/60/2m", 3)
	a, b := t.TempDir(), t.TempDir()
	if err := s.Generate(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Generate(b); err != nil {
		t.Fatal(err)
	}
	n, err := s.Verify(a)
	if err != nil || n != 2<<20 {
		t.Fatalf("verify: %d bytes, %v", n, err)
	}
	for _, e := range s.Files() {
		x, _ := os.ReadFile(filepath.Join(a, e.Path))
		y, _ := os.ReadFile(filepath.Join(b, e.Path))
		if string(x) != string(y) {
			t.Fatalf("%s differs between two generations", e.Path)
		}
	}
	// another seed makes other bytes
	o, _ := Parse("tree/60/2m", 4)
	if _, err := o.Verify(a); !errors.Is(err, ErrMismatch) {
		t.Errorf("another seed's data verified: %v", err)
	}
}

func TestVerifyCatchesDamage(t *testing.T) {
	s, _ := Parse("tree/30/512k", 9)
	files := s.Files()
	damage := map[string]func(dir string) error{
		"truncated": func(dir string) error { return os.Truncate(filepath.Join(dir, files[0].Path), files[0].Size-1) },
		"flipped": func(dir string) error {
			p := filepath.Join(dir, files[1].Path)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 1
			return os.WriteFile(p, b, 0o644)
		},
		"missing": func(dir string) error { return os.Remove(filepath.Join(dir, files[2].Path)) },
		"extra":   func(dir string) error { return os.WriteFile(filepath.Join(dir, "stray"), nil, 0o644) },
	}
	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := s.Generate(dir); err != nil {
				t.Fatal(err)
			}
			if err := f(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Verify(dir); !errors.Is(err, ErrMismatch) {
				t.Fatalf("damage not caught: %v", err)
			} else {
				t.Log(err)
			}
		})
	}
}

func TestFile(t *testing.T) {
	s, _ := Parse("file/3m", 1)
	dir := t.TempDir()
	if err := s.Generate(dir); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Verify(dir); err != nil || n != 3<<20 {
		t.Fatal(n, err)
	}
}
