//go:build !amd64

package stream

// Copy is c = a, the STREAM copy kernel (the runtime's memmove, as C
// compilers turn STREAM's copy loop into memcpy).
func Copy(c, a []float64) { copy(c, a) }
