//go:build !amd64

package stream

// Scale is b = s*c.
func Scale(b, c []float64, s float64) { scaleGo(b, c, s) }

// Add is c = a + b.
func Add(c, a, b []float64) { addGo(c, a, b) }

// Triad is a = b + s*c.
func Triad(a, b, c []float64, s float64) { triadGo(a, b, c, s) }
