//go:build amd64 && !noasm

#include "textflag.h"

// func attnDots16AVX512(out, xt, y *float32, n, d int)
// out[t*16 + e] = ((0 + xt[0*16+e]*y[t*d+0]) + xt[1*16+e]*y[t*d+1]) + ... over c < d ascending,
// VMULPS then VADDPS per step (no fma). Eight rows t at a time (accumulators Z0-Z7, the products
// in Z16-Z23), then one at a time.
TEXT ·attnDots16AVX512(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ xt+8(FP), SI
	MOVQ y+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ d+32(FP), DX
	MOVQ DX, BX
	SHLQ $2, BX              // row stride of y in bytes
	SHLQ $6, DX
	ADDQ SI, DX              // end of xt
	LEAQ (BX)(BX*2), R9      // 3 rows
	LEAQ (BX)(BX*4), R10     // 5 rows
	LEAQ (R9)(R9*1), R11     // 6 rows
	LEAQ (R11)(BX*1), R12    // 7 rows
	MOVQ BX, R13
	SHLQ $3, R13             // 8 rows

rows8:
	CMPQ CX, $8
	JLT  rows1
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	MOVQ SI, AX
	MOVQ R8, R14

col8:
	VMOVUPS     (AX), Z8
	VMULPS.BCST (R14), Z8, Z16
	VMULPS.BCST (R14)(BX*1), Z8, Z17
	VMULPS.BCST (R14)(BX*2), Z8, Z18
	VMULPS.BCST (R14)(R9*1), Z8, Z19
	VMULPS.BCST (R14)(BX*4), Z8, Z20
	VMULPS.BCST (R14)(R10*1), Z8, Z21
	VMULPS.BCST (R14)(R11*1), Z8, Z22
	VMULPS.BCST (R14)(R12*1), Z8, Z23
	VADDPS      Z16, Z0, Z0
	VADDPS      Z17, Z1, Z1
	VADDPS      Z18, Z2, Z2
	VADDPS      Z19, Z3, Z3
	VADDPS      Z20, Z4, Z4
	VADDPS      Z21, Z5, Z5
	VADDPS      Z22, Z6, Z6
	VADDPS      Z23, Z7, Z7
	ADDQ        $64, AX
	ADDQ        $4, R14
	CMPQ        AX, DX
	JNE         col8

	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	ADDQ    $512, DI
	ADDQ    R13, R8
	SUBQ    $8, CX
	JMP     rows8

rows1:
	TESTQ CX, CX
	JZ    done
	VXORPS Z0, Z0, Z0
	MOVQ SI, AX
	MOVQ R8, R14

col1:
	VMOVUPS     (AX), Z8
	VMULPS.BCST (R14), Z8, Z16
	VADDPS      Z16, Z0, Z0
	ADDQ        $64, AX
	ADDQ        $4, R14
	CMPQ        AX, DX
	JNE         col1

	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	ADDQ    BX, R8
	DECQ    CX
	JMP     rows1

done:
	VZEROUPPER
	RET

// func attnAxpy16AVX512(acc, alpha, p *float32, masks *uint16, y *float32, n, d int)
// acc[c*16 + e] = acc * alpha[e] (when alpha is not nil), then for t < n ascending, in the lanes
// of masks[t] only (merge masking): acc[c*16 + e] = acc + p[t*16 + e]*y[t*d + c], VMULPS then
// VADDPS. Eight columns c at a time (Z0-Z7 held over all t), then one at a time.
TEXT ·attnAxpy16AVX512(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ alpha+8(FP), SI
	MOVQ p+16(FP), R8
	MOVQ masks+24(FP), R9
	MOVQ y+32(FP), R10
	MOVQ n+40(FP), CX
	MOVQ d+48(FP), DX
	MOVQ DX, BX
	SHLQ $2, BX              // row stride of y in bytes
	XORQ R13, R13
	TESTQ SI, SI
	JZ   cols8
	VMOVUPS (SI), Z31
	MOVQ $1, R13

cols8:
	CMPQ DX, $8
	JLT  cols1
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	TESTQ R13, R13
	JZ   noscale8
	VMULPS Z31, Z0, Z0
	VMULPS Z31, Z1, Z1
	VMULPS Z31, Z2, Z2
	VMULPS Z31, Z3, Z3
	VMULPS Z31, Z4, Z4
	VMULPS Z31, Z5, Z5
	VMULPS Z31, Z6, Z6
	VMULPS Z31, Z7, Z7

noscale8:
	MOVQ  R8, AX
	MOVQ  R9, R11
	MOVQ  R10, R12
	MOVQ  CX, R14
	TESTQ R14, R14
	JZ    store8

row8:
	KMOVW       (R11), K1
	VMOVUPS     (AX), Z8
	VMULPS.BCST 0(R12), Z8, Z16
	VMULPS.BCST 4(R12), Z8, Z17
	VMULPS.BCST 8(R12), Z8, Z18
	VMULPS.BCST 12(R12), Z8, Z19
	VMULPS.BCST 16(R12), Z8, Z20
	VMULPS.BCST 20(R12), Z8, Z21
	VMULPS.BCST 24(R12), Z8, Z22
	VMULPS.BCST 28(R12), Z8, Z23
	VADDPS      Z16, Z0, K1, Z0
	VADDPS      Z17, Z1, K1, Z1
	VADDPS      Z18, Z2, K1, Z2
	VADDPS      Z19, Z3, K1, Z3
	VADDPS      Z20, Z4, K1, Z4
	VADDPS      Z21, Z5, K1, Z5
	VADDPS      Z22, Z6, K1, Z6
	VADDPS      Z23, Z7, K1, Z7
	ADDQ        $64, AX
	ADDQ        $2, R11
	ADDQ        BX, R12
	DECQ        R14
	JNZ         row8

store8:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	ADDQ    $512, DI
	ADDQ    $32, R10
	SUBQ    $8, DX
	JMP     cols8

cols1:
	TESTQ DX, DX
	JZ    done
	VMOVUPS (DI), Z0
	TESTQ R13, R13
	JZ   noscale1
	VMULPS Z31, Z0, Z0

noscale1:
	MOVQ  R8, AX
	MOVQ  R9, R11
	MOVQ  R10, R12
	MOVQ  CX, R14
	TESTQ R14, R14
	JZ    store1

row1:
	KMOVW       (R11), K1
	VMOVUPS     (AX), Z8
	VMULPS.BCST (R12), Z8, Z16
	VADDPS      Z16, Z0, K1, Z0
	ADDQ        $64, AX
	ADDQ        $2, R11
	ADDQ        BX, R12
	DECQ        R14
	JNZ         row1

store1:
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $4, R10
	DECQ    DX
	JMP     cols1

done:
	VZEROUPPER
	RET
