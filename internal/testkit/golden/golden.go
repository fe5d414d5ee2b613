// Package golden helps tests compare an output with its golden file.
package golden

import (
	"strconv"
	"strings"
)

// FirstDiff names the first line where want and got differ, each cut to
// 300 bytes.
func FirstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + clip(w) + "\n  got:  " + clip(g)
		}
	}
	return "same lines, different bytes"
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
