//go:build amd64 && !noasm

#include "textflag.h"

// func adamStep16(param, m, v, grad *float32, n int, s *[9]float32, wd bool)
// AdamStep's body on 16 lanes (see cpu/optim.go), one IEEE operation per Go operation, in the
// same order: g += wd*p (when wd); p *= decay; mi = beta1*m + omb1*g; vi = beta2*v + (omb2*g)*g;
// den = sqrt(vi)/bc2Sqrt + eps; p -= stepSize*(mi/den).
TEXT ·adamStep16(SB), NOSPLIT, $0-49
	MOVQ    param+0(FP), DI
	MOVQ    m+8(FP), SI
	MOVQ    v+16(FP), DX
	MOVQ    grad+24(FP), BX
	MOVQ    n+32(FP), CX
	MOVQ    s+40(FP), AX
	MOVBLZX wd+48(FP), R8
	VBROADCASTSS 0(AX), Z20  // beta1
	VBROADCASTSS 4(AX), Z21  // omb1
	VBROADCASTSS 8(AX), Z22  // beta2
	VBROADCASTSS 12(AX), Z23 // omb2
	VBROADCASTSS 16(AX), Z24 // stepSize
	VBROADCASTSS 20(AX), Z25 // bc2Sqrt
	VBROADCASTSS 24(AX), Z26 // eps
	VBROADCASTSS 28(AX), Z27 // wd
	VBROADCASTSS 32(AX), Z28 // decay
	SHLQ    $2, CX
	XORQ    R9, R9

loop:
	CMPQ    R9, CX
	JGE     done
	VMOVUPS (DI)(R9*1), Z0 // p
	VMOVUPS (BX)(R9*1), Z1 // g
	TESTQ   R8, R8
	JZ      nowd
	VMULPS  Z27, Z0, Z2 // wd*p
	VADDPS  Z2, Z1, Z1  // g + wd*p

nowd:
	VMULPS  Z28, Z0, Z0    // p*decay
	VMOVUPS (SI)(R9*1), Z3 // m
	VMULPS  Z20, Z3, Z3    // beta1*m
	VMULPS  Z21, Z1, Z4    // omb1*g
	VADDPS  Z4, Z3, Z3     // mi
	VMOVUPS (DX)(R9*1), Z5 // v
	VMULPS  Z22, Z5, Z5    // beta2*v
	VMULPS  Z23, Z1, Z6    // omb2*g
	VMULPS  Z1, Z6, Z6     // (omb2*g)*g
	VADDPS  Z6, Z5, Z5     // vi
	VSQRTPS Z5, Z7         // sqrt(vi)
	VDIVPS  Z25, Z7, Z7    // sqrt(vi)/bc2Sqrt
	VADDPS  Z26, Z7, Z7    // den
	VDIVPS  Z7, Z3, Z8     // mi/den
	VMULPS  Z24, Z8, Z8    // stepSize*(mi/den)
	VSUBPS  Z8, Z0, Z0     // p - stepSize*(mi/den)
	VMOVUPS Z0, (DI)(R9*1)
	VMOVUPS Z3, (SI)(R9*1)
	VMOVUPS Z5, (DX)(R9*1)
	ADDQ    $64, R9
	JMP     loop

done:
	VZEROUPPER
	RET
