package cpulist

import (
	"slices"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "0-3,6": {0, 1, 2, 3, 6}, " 6,0-1,1 ": {0, 1, 6}, "2-2": {2}} {
		got, err := Parse(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "0,,1", "5000", "1-"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{"0-3,6": "0-3,6", "0,2,4": "0,2,4", "1": "1"} {
		c, _ := Parse(in)
		if got := Format(c); got != want {
			t.Errorf("Format(Parse(%q)) = %q", in, got)
		}
	}
}
