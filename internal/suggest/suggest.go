// Package suggest finds the "did you mean" for a mistyped name.
package suggest

import "strings"

// Closest is the name in known nearest to name: within an edit distance of
// a third of its length (at least 1, at most 3: dokcer -> docker, workload
// -> workloads, thread -> threads), or "" when none is that close.
func Closest(name string, known []string) string {
	best, bestD := "", min(3, max(1, len([]rune(name))/3))+1
	for _, k := range known {
		if d := EditDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// EditDistance is the Damerau-Levenshtein distance (optimal string
// alignment) of a and b: insertions, deletions, substitutions and swaps
// of two neighbours each cost 1.
func EditDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range y {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
