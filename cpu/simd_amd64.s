//go:build amd64 && !noasm

#include "textflag.h"

// func addAVX(dst, a, b []float32): dst[i] = a[i] add b[i]
TEXT ·addAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
addAVX_loop:
	CMPQ AX, BX
	JGE  addAVX_tail
	VMOVUPS (SI)(AX*4), Y1
	VADDPS (DX)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  addAVX_loop
addAVX_tail:
	CMPQ AX, CX
	JGE  addAVX_done
	VMOVSS (SI)(AX*4), X1
	VADDSS (DX)(AX*4), X1, X1
	VMOVSS X1, (DI)(AX*4)
	INCQ AX
	JMP  addAVX_tail
addAVX_done:
	VZEROUPPER
	RET

// func subAVX(dst, a, b []float32): dst[i] = a[i] sub b[i]
TEXT ·subAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
subAVX_loop:
	CMPQ AX, BX
	JGE  subAVX_tail
	VMOVUPS (SI)(AX*4), Y1
	VSUBPS (DX)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  subAVX_loop
subAVX_tail:
	CMPQ AX, CX
	JGE  subAVX_done
	VMOVSS (SI)(AX*4), X1
	VSUBSS (DX)(AX*4), X1, X1
	VMOVSS X1, (DI)(AX*4)
	INCQ AX
	JMP  subAVX_tail
subAVX_done:
	VZEROUPPER
	RET

// func mulAVX(dst, a, b []float32): dst[i] = a[i] mul b[i]
TEXT ·mulAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
mulAVX_loop:
	CMPQ AX, BX
	JGE  mulAVX_tail
	VMOVUPS (SI)(AX*4), Y1
	VMULPS (DX)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  mulAVX_loop
mulAVX_tail:
	CMPQ AX, CX
	JGE  mulAVX_done
	VMOVSS (SI)(AX*4), X1
	VMULSS (DX)(AX*4), X1, X1
	VMOVSS X1, (DI)(AX*4)
	INCQ AX
	JMP  mulAVX_tail
mulAVX_done:
	VZEROUPPER
	RET

// func scaleAVX(dst, x []float32, c float32): dst[i] = x[i] * c
TEXT ·scaleAVX(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	VBROADCASTSS c+48(FP), Y0
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
scaleAVX_loop:
	CMPQ AX, BX
	JGE  scaleAVX_tail
	VMULPS (SI)(AX*4), Y0, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  scaleAVX_loop
scaleAVX_tail:
	CMPQ AX, CX
	JGE  scaleAVX_done
	VMULSS (SI)(AX*4), X0, X1
	VMOVSS X1, (DI)(AX*4)
	INCQ AX
	JMP  scaleAVX_tail
scaleAVX_done:
	VZEROUPPER
	RET

// func reluAVX(dst, x []float32): dst[i] = x[i] > 0 ? x[i] : +0 (VMAXPS returns its second
// operand, +0, when x is NaN or a zero)
TEXT ·reluAVX(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	VXORPS Y0, Y0, Y0
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
reluAVX_loop:
	CMPQ AX, BX
	JGE  reluAVX_tail
	VMOVUPS (SI)(AX*4), Y1
	VMAXPS Y0, Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  reluAVX_loop
reluAVX_tail:
	CMPQ AX, CX
	JGE  reluAVX_done
	VMOVSS (SI)(AX*4), X1
	VMAXSS X0, X1, X1
	VMOVSS X1, (DI)(AX*4)
	INCQ AX
	JMP  reluAVX_tail
reluAVX_done:
	VZEROUPPER
	RET


// func axpyFMA(dst, a, b []float32, c float32)
// dst[i] = fma(c, b[i], a[i]) with one rounding (VFMADD231PS / VFMADD231SS); len(a), len(b) >= len(dst).
TEXT ·axpyFMA(SB), NOSPLIT, $0-76
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	VBROADCASTSS c+72(FP), Y0
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX

axpyFMA_loop:
	CMPQ AX, BX
	JGE  axpyFMA_tail
	VMOVUPS     (SI)(AX*4), Y1
	VFMADD231PS (DX)(AX*4), Y0, Y1
	VMOVUPS     Y1, (DI)(AX*4)
	ADDQ        $8, AX
	JMP         axpyFMA_loop

axpyFMA_tail:
	CMPQ AX, CX
	JGE  axpyFMA_done
	VMOVSS      (SI)(AX*4), X1
	VFMADD231SS (DX)(AX*4), X0, X1
	VMOVSS      X1, (DI)(AX*4)
	INCQ        AX
	JMP         axpyFMA_tail

axpyFMA_done:
	VZEROUPPER
	RET

// func sqrtAVX(dst, x []float32): dst[i] = sqrt(x[i]) (VSQRTPS is correctly rounded)
TEXT ·sqrtAVX(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
sqrtAVX_loop:
	CMPQ AX, BX
	JGE  sqrtAVX_tail
	VSQRTPS (SI)(AX*4), Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  sqrtAVX_loop
sqrtAVX_tail:
	CMPQ AX, CX
	JGE  sqrtAVX_done
	VMOVSS (SI)(AX*4), X1
	VSQRTSS X1, X1, X1
	VMOVSS X1, (DI)(AX*4)
	INCQ AX
	JMP  sqrtAVX_tail
sqrtAVX_done:
	VZEROUPPER
	RET

// func reluBwdAVX(dx, x, g []float32): dx[i] = x[i] > 0 ? g[i] : +0 (ordered compare: NaN gives 0)
TEXT ·reluBwdAVX(SB), NOSPLIT, $0-72
	MOVQ dx_base+0(FP), DI
	MOVQ dx_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ g_base+48(FP), DX
	VXORPS Y0, Y0, Y0
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
reluBwdAVX_loop:
	CMPQ AX, BX
	JGE  reluBwdAVX_tail
	VMOVUPS (SI)(AX*4), Y1
	VCMPPS $0x1e, Y0, Y1, Y2
	VANDPS (DX)(AX*4), Y2, Y2
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ $8, AX
	JMP  reluBwdAVX_loop
reluBwdAVX_tail:
	CMPQ AX, CX
	JGE  reluBwdAVX_done
	VMOVSS (SI)(AX*4), X1
	VCMPSS $0x1e, X0, X1, X2
	VMOVSS (DX)(AX*4), X3
	VANDPS X3, X2, X2
	VMOVSS X2, (DI)(AX*4)
	INCQ AX
	JMP  reluBwdAVX_tail
reluBwdAVX_done:
	VZEROUPPER
	RET

// func transpose8x8AVX(dst *float32, dstStride int, src *float32, srcStride int)
// dst[c*dstStride + r] = src[r*srcStride + c] for r, c < 8: eight rows loaded, transposed in
// registers (unpack, shuffle, 128-bit lane permute), eight rows stored. Strides in floats.
TEXT ·transpose8x8AVX(SB), NOSPLIT, $0-32
	MOVQ src+16(FP), SI
	MOVQ srcStride+24(FP), BX
	SHLQ $2, BX
	LEAQ (BX)(BX*2), CX
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y1
	VMOVUPS (SI)(BX*2), Y2
	VMOVUPS (SI)(CX*1), Y3
	LEAQ (SI)(BX*4), SI
	VMOVUPS (SI), Y4
	VMOVUPS (SI)(BX*1), Y5
	VMOVUPS (SI)(BX*2), Y6
	VMOVUPS (SI)(CX*1), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), CX
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(DX*1)
	VMOVUPS Y10, (DI)(DX*2)
	VMOVUPS Y11, (DI)(CX*1)
	LEAQ (DI)(DX*4), DI
	VMOVUPS Y12, (DI)
	VMOVUPS Y13, (DI)(DX*1)
	VMOVUPS Y14, (DI)(DX*2)
	VMOVUPS Y15, (DI)(CX*1)
	VZEROUPPER
	RET
