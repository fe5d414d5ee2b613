#include "textflag.h"

// The scale, add and triad kernels with 256-bit AVX, one vector of four
// float64 per step: the loops gcc -O3 -march=native emits for STREAM's C
// kernels on heap arrays (bench/stream/stream.c; `gcc -S` shows
// vmovupd / vfmadd213pd / vmovupd / addq / cmpq / jne for triad). Go's
// compiler emits scalar SSE2 (one element and eight instructions per
// step, reloading the scalar each time), measured at 0.83-0.93 of the C
// kernel. n is the byte count, a positive multiple of 32; the callers do
// the rest in Go. Ordinary stores, as gcc uses for these kernels.

// func triadFMA(a, b, c unsafe.Pointer, n uintptr, s float64)
// a = b + s*c, with a fused multiply-add as gcc contracts it.
TEXT ·triadFMA(SB), NOSPLIT, $0-40
	MOVQ	a+0(FP), DI
	MOVQ	b+8(FP), SI
	MOVQ	c+16(FP), DX
	MOVQ	n+24(FP), CX
	VBROADCASTSD	s+32(FP), Y1
	XORQ	AX, AX
triad:
	VMOVUPD	(DX)(AX*1), Y0
	VFMADD213PD	(SI)(AX*1), Y1, Y0	// Y0 = Y1*Y0 + b
	VMOVUPD	Y0, (DI)(AX*1)
	ADDQ	$32, AX
	CMPQ	AX, CX
	JNE	triad
	VZEROUPPER
	RET

// func scaleAVX(b, c unsafe.Pointer, n uintptr, s float64)
// b = s*c.
TEXT ·scaleAVX(SB), NOSPLIT, $0-32
	MOVQ	b+0(FP), DI
	MOVQ	c+8(FP), SI
	MOVQ	n+16(FP), CX
	VBROADCASTSD	s+24(FP), Y1
	XORQ	AX, AX
scale:
	VMULPD	(SI)(AX*1), Y1, Y0
	VMOVUPD	Y0, (DI)(AX*1)
	ADDQ	$32, AX
	CMPQ	AX, CX
	JNE	scale
	VZEROUPPER
	RET

// func addAVX(c, a, b unsafe.Pointer, n uintptr)
// c = a + b.
TEXT ·addAVX(SB), NOSPLIT, $0-32
	MOVQ	c+0(FP), DI
	MOVQ	a+8(FP), SI
	MOVQ	b+16(FP), DX
	MOVQ	n+24(FP), CX
	XORQ	AX, AX
add:
	VMOVUPD	(SI)(AX*1), Y0
	VADDPD	(DX)(AX*1), Y0, Y0
	VMOVUPD	Y0, (DI)(AX*1)
	ADDQ	$32, AX
	CMPQ	AX, CX
	JNE	add
	VZEROUPPER
	RET
