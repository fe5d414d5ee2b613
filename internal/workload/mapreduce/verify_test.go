package mapreduce

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func output(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644)
	for n, c := range files {
		os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644)
	}
	return dir
}

// TestCheckCounts: wordcount's output must count every word of the
// generated text exactly; a wrong count, a missing word or no _SUCCESS
// is a failure saying which.
func TestCheckCounts(t *testing.T) {
	want, n, err := writeText(filepath.Join(t.TempDir(), "in", "part-0"), 4096, 7)
	if err != nil || n < 4096 {
		t.Fatalf("%d bytes, %v", n, err)
	}
	var words []string
	for w := range want {
		words = append(words, w)
	}
	sort.Strings(words)
	var good, bad strings.Builder
	for i, w := range words {
		fmt.Fprintf(&good, "%s\t%d\n", w, want[w])
		c := want[w]
		if i == 0 {
			c++
		}
		fmt.Fprintf(&bad, "%s\t%d\n", w, c)
	}
	if err := checkCounts(output(t, map[string]string{"part-r-00000": good.String()}), want); err != nil {
		t.Errorf("the right counts: %v", err)
	}
	if err := checkCounts(output(t, map[string]string{"part-r-00000": bad.String()}), want); err == nil || !strings.Contains(err.Error(), "wordcount counted") {
		t.Errorf("a wrong count: %v", err)
	}
	if err := checkCounts(output(t, map[string]string{"part-r-00000": "oops\n"}), want); err == nil {
		t.Error("a malformed line passed")
	}
	empty := t.TempDir()
	if err := checkCounts(empty, want); err == nil || !strings.Contains(err.Error(), "_SUCCESS") {
		t.Errorf("no _SUCCESS: %v", err)
	}
}

// TestRecordSum: TeraSort's output must hold its input's records, in key
// order across the part files.
func TestRecordSum(t *testing.T) {
	rec := func(key string) string { return key + strings.Repeat("x", 90) }
	in := output(t, map[string]string{"part-m-00000": rec("bbbbbbbbbb") + rec("aaaaaaaaaa") + rec("cccccccccc")})
	sorted := output(t, map[string]string{"part-r-00000": rec("aaaaaaaaaa") + rec("bbbbbbbbbb"), "part-r-00001": rec("cccccccccc")})
	a, err := recordSum(in, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := recordSum(sorted, true)
	if err != nil || a != b || a.n != 3 {
		t.Errorf("input %+v, sorted %+v, %v", a, b, err)
	}
	if _, err := recordSum(in, true); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Errorf("unsorted: %v", err)
	}
	lost := output(t, map[string]string{"part-r-00000": rec("aaaaaaaaaa") + rec("cccccccccc")})
	if c, _ := recordSum(lost, true); c == a {
		t.Error("a lost record went unseen")
	}
	if _, err := recordSum(output(t, map[string]string{"part-r-00000": "short"}), true); err == nil {
		t.Error("a partial record passed")
	}
}
