package stream

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// ntCopy4x is implemented in copy_amd64.s.
//
//go:noescape
func ntCopy4x(dst, src unsafe.Pointer, n uintptr)

// Copy is c = a (which must not overlap), the STREAM copy kernel. With AVX, the part of c starting
// at its first page boundary is copied with non-temporal stores, as
// glibc's memcpy does for large copies (see copy_amd64.s); the rest with
// the runtime's copy.
func Copy(c, a []float64) {
	a = a[:len(c)]
	if !cpu.X86.HasAVX || len(c)*8 < 2*ntBlock {
		copy(c, a)
		return
	}
	i := 0
	for i < len(c) && uintptr(unsafe.Pointer(&c[i]))&4095 != 0 {
		i++
	}
	copy(c[:i], a[:i])
	bulk := (len(c) - i) * 8 / ntBlock * ntBlock
	if bulk > 0 {
		ntCopy4x(unsafe.Pointer(&c[i]), unsafe.Pointer(&a[i]), uintptr(bulk))
		i += bulk / 8
	}
	copy(c[i:], a[i:])
}
