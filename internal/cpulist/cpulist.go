// Package cpulist reads and writes CPU lists in the kernel's format
// ("0-3,6"), as taskset -c, cpuset.cpus and /sys/devices/system/cpu/online
// write them.
package cpulist

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxCPU bounds a CPU number in a list.
const MaxCPU = 4095

// Parse reads a list such as "0-3,6" into sorted distinct CPU numbers.
func Parse(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty CPU list")
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := num(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = num(hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("CPU range %q runs backwards", part)
			}
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

func num(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > MaxCPU {
		return 0, fmt.Errorf("%q is not a CPU number from 0 to %d", s, MaxCPU)
	}
	return n, nil
}

// Format writes sorted distinct CPU numbers as a list ("0-3,6").
func Format(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			fmt.Fprint(&b, cpus[i])
		}
		i = j + 1
	}
	return b.String()
}
