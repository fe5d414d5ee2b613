#include "textflag.h"

// func eventAsm(lo, hi uint64) uint64
//
// sysbench cpu's event, instruction for instruction as gcc -O2 compiles
// cpu_execute_event in Debian's sysbench 1.0.20 (objdump it: the loop
// around its sqrtsd), so that isobench and the reference execute the same
// instruction stream per event (see event.go). The only addition is one
// INCQ per prime found, on the loop's exit edge, so the event returns the
// prime count (sysbench discards it). It runs c over [lo, hi), lo >= 3,
// so an event can be run in parts (sysbench's is [3, max_prime)).
TEXT ·eventAsm(SB), NOSPLIT, $0-24
	MOVQ lo+0(FP), BX               // c
	MOVQ hi+8(FP), R8
	XORQ R9, R9                     // n, primes found
	CMPQ BX, R8
	JCC  done                       // lo >= hi: nothing to do
	MOVQ $0x4000000000000000, AX    // 2.0
	MOVQ AX, X2
	XORPS X3, X3                    // 0.0
outer:
	XORPS X0, X0
	CVTSQ2SD BX, X0
	UCOMISD X0, X3                  // sqrt's domain check (c < 0), as gcc keeps it
	JHI  done
	SQRTSD X0, X0                   // t = sqrt(c)
	COMISD X2, X0
	JCS  prime                      // t < 2: l = 2 > t
	TESTB $1, BL
	JEQ  next                       // even c: c % 2 == 0
	MOVL $2, CX                     // l
	JMP  step
loop:
	XORPS X1, X1
	CVTSQ2SD CX, X1
	COMISD X1, X0
	JCS  prime                      // l > t
	MOVQ BX, AX
	XORL DX, DX
	DIVQ CX
	TESTQ DX, DX
	JEQ  next                       // c % l == 0
step:
	ADDQ $1, CX
	JPL  loop                       // gcc's unsigned-to-double check on l (never taken: l < 2^63)
	JMP  done
prime:
	INCQ R9
next:
	ADDQ $1, BX
	CMPQ BX, R8
	JNE  outer
done:
	MOVQ R9, ret+16(FP)
	RET
