package stream

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Implemented in kernels_amd64.s; n is a positive multiple of 32 bytes.
//
//go:noescape
func triadFMA(a, b, c unsafe.Pointer, n uintptr, s float64)

//go:noescape
func scaleAVX(b, c unsafe.Pointer, n uintptr, s float64)

//go:noescape
func addAVX(c, a, b unsafe.Pointer, n uintptr)

var (
	hasAVX = cpu.X86.HasAVX
	hasFMA = cpu.X86.HasAVX && cpu.X86.HasFMA
)

// Scale is b = s*c.
func Scale(b, c []float64, s float64) {
	b = b[:len(c)]
	v := len(c) &^ 3
	if hasAVX && v > 0 {
		scaleAVX(unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), uintptr(v)*8, s)
	} else {
		v = 0
	}
	scaleGo(b[v:], c[v:], s)
}

// Add is c = a + b.
func Add(c, a, b []float64) {
	a = a[:len(c)]
	b = b[:len(c)]
	v := len(c) &^ 3
	if hasAVX && v > 0 {
		addAVX(unsafe.Pointer(&c[0]), unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), uintptr(v)*8)
	} else {
		v = 0
	}
	addGo(c[v:], a[v:], b[v:])
}

// Triad is a = b + s*c.
func Triad(a, b, c []float64, s float64) {
	b = b[:len(a)]
	c = c[:len(a)]
	v := len(a) &^ 3
	if hasFMA && v > 0 {
		triadFMA(unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), uintptr(v)*8, s)
	} else {
		v = 0
	}
	triadGo(a[v:], b[v:], c[v:], s)
}
