//go:build amd64 && !noasm

#include "textflag.h"

// The elementwise loops store an output of 1 MiB or more whose start is 32-byte aligned with
// non-temporal stores (VMOVNTPS, then SFENCE): such an output is not read back from the cache
// soon, and ordinary stores would first read every line of it from memory. The values stored are
// the same either way.

// func addAVX(dst, a, b []float32): dst[i] = a[i] add b[i]
TEXT ·addAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
	CMPQ CX, $262144 // outputs of 1 MiB or more, 32-byte aligned: non-temporal stores
	JLT  addAVX_loop
	TESTQ $31, DI
	JNZ  addAVX_loop
addAVX_ntloop:
	CMPQ AX, BX
	JGE  addAVX_ntdone
	VMOVUPS (SI)(AX*4), Y1
	VADDPS (DX)(AX*4), Y1, Y1
	VMOVNTPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  addAVX_ntloop
addAVX_ntdone:
	SFENCE
	JMP  addAVX_tail
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
	CMPQ CX, $262144 // outputs of 1 MiB or more, 32-byte aligned: non-temporal stores
	JLT  subAVX_loop
	TESTQ $31, DI
	JNZ  subAVX_loop
subAVX_ntloop:
	CMPQ AX, BX
	JGE  subAVX_ntdone
	VMOVUPS (SI)(AX*4), Y1
	VSUBPS (DX)(AX*4), Y1, Y1
	VMOVNTPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  subAVX_ntloop
subAVX_ntdone:
	SFENCE
	JMP  subAVX_tail
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
	CMPQ CX, $262144 // outputs of 1 MiB or more, 32-byte aligned: non-temporal stores
	JLT  mulAVX_loop
	TESTQ $31, DI
	JNZ  mulAVX_loop
mulAVX_ntloop:
	CMPQ AX, BX
	JGE  mulAVX_ntdone
	VMOVUPS (SI)(AX*4), Y1
	VMULPS (DX)(AX*4), Y1, Y1
	VMOVNTPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  mulAVX_ntloop
mulAVX_ntdone:
	SFENCE
	JMP  mulAVX_tail
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
	CMPQ CX, $262144 // outputs of 1 MiB or more, 32-byte aligned: non-temporal stores
	JLT  scaleAVX_loop
	TESTQ $31, DI
	JNZ  scaleAVX_loop
scaleAVX_ntloop:
	CMPQ AX, BX
	JGE  scaleAVX_ntdone
	VMULPS (SI)(AX*4), Y0, Y1
	VMOVNTPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  scaleAVX_ntloop
scaleAVX_ntdone:
	SFENCE
	JMP  scaleAVX_tail
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
	CMPQ CX, $262144 // outputs of 1 MiB or more, 32-byte aligned: non-temporal stores
	JLT  reluAVX_loop
	TESTQ $31, DI
	JNZ  reluAVX_loop
reluAVX_ntloop:
	CMPQ AX, BX
	JGE  reluAVX_ntdone
	VMOVUPS (SI)(AX*4), Y1
	VMAXPS Y0, Y1, Y1
	VMOVNTPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  reluAVX_ntloop
reluAVX_ntdone:
	SFENCE
	JMP  reluAVX_tail
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
	CMPQ CX, $262144 // outputs of 1 MiB or more, 32-byte aligned: non-temporal stores
	JLT  axpyFMA_loop
	TESTQ $31, DI
	JNZ  axpyFMA_loop
axpyFMA_ntloop:
	CMPQ AX, BX
	JGE  axpyFMA_ntdone
	VMOVUPS     (SI)(AX*4), Y1
	VFMADD231PS (DX)(AX*4), Y0, Y1
	VMOVNTPS     Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  axpyFMA_ntloop
axpyFMA_ntdone:
	SFENCE
	JMP  axpyFMA_tail

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
	CMPQ CX, $262144 // outputs of 1 MiB or more, 32-byte aligned: non-temporal stores
	JLT  sqrtAVX_loop
	TESTQ $31, DI
	JNZ  sqrtAVX_loop
sqrtAVX_ntloop:
	CMPQ AX, BX
	JGE  sqrtAVX_ntdone
	VSQRTPS (SI)(AX*4), Y1
	VMOVNTPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  sqrtAVX_ntloop
sqrtAVX_ntdone:
	SFENCE
	JMP  sqrtAVX_tail
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
	CMPQ CX, $262144 // outputs of 1 MiB or more, 32-byte aligned: non-temporal stores
	JLT  reluBwdAVX_loop
	TESTQ $31, DI
	JNZ  reluBwdAVX_loop
reluBwdAVX_ntloop:
	CMPQ AX, BX
	JGE  reluBwdAVX_ntdone
	VMOVUPS (SI)(AX*4), Y1
	VCMPPS $0x1e, Y0, Y1, Y2
	VANDPS (DX)(AX*4), Y2, Y2
	VMOVNTPS Y2, (DI)(AX*4)
	ADDQ $8, AX
	JMP  reluBwdAVX_ntloop
reluBwdAVX_ntdone:
	SFENCE
	JMP  reluBwdAVX_tail
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

// func rowAddAVX512(p *[256]float32, x *float32, chunks int)
// p[t] = p[t] + x[c*256 + t] for c = 0 .. chunks-1 ascending: the 256 partials stay in Z0-Z15.
TEXT ·rowAddAVX512(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ chunks+16(FP), CX
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VMOVUPS 640(DI), Z10
	VMOVUPS 704(DI), Z11
	VMOVUPS 768(DI), Z12
	VMOVUPS 832(DI), Z13
	VMOVUPS 896(DI), Z14
	VMOVUPS 960(DI), Z15
rowAdd_loop:
	TESTQ CX, CX
	JZ rowAdd_done
	VADDPS 0(SI), Z0, Z0
	VADDPS 64(SI), Z1, Z1
	VADDPS 128(SI), Z2, Z2
	VADDPS 192(SI), Z3, Z3
	VADDPS 256(SI), Z4, Z4
	VADDPS 320(SI), Z5, Z5
	VADDPS 384(SI), Z6, Z6
	VADDPS 448(SI), Z7, Z7
	VADDPS 512(SI), Z8, Z8
	VADDPS 576(SI), Z9, Z9
	VADDPS 640(SI), Z10, Z10
	VADDPS 704(SI), Z11, Z11
	VADDPS 768(SI), Z12, Z12
	VADDPS 832(SI), Z13, Z13
	VADDPS 896(SI), Z14, Z14
	VADDPS 960(SI), Z15, Z15
	ADDQ $1024, SI
	DECQ CX
	JMP rowAdd_loop
rowAdd_done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	VMOVUPS Z12, 768(DI)
	VMOVUPS Z13, 832(DI)
	VMOVUPS Z14, 896(DI)
	VMOVUPS Z15, 960(DI)
	VZEROUPPER
	RET

// func rowSubSqAVX512(p *[256]float32, d, x *float32, chunks int, c float32)
// For c = 0 .. chunks-1 ascending and t < 256, with i = c*256 + t: v = x[i] - c (rounded),
// d[i] = v, p[t] = p[t] + v*v (the product rounded, then the sum): SubSqAdd chunk by chunk.
TEXT ·rowSubSqAVX512(SB), NOSPLIT, $0-36
	MOVQ p+0(FP), DI
	MOVQ d+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ chunks+24(FP), CX
	VBROADCASTSS c+32(FP), Z16
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VMOVUPS 640(DI), Z10
	VMOVUPS 704(DI), Z11
	VMOVUPS 768(DI), Z12
	VMOVUPS 832(DI), Z13
	VMOVUPS 896(DI), Z14
	VMOVUPS 960(DI), Z15
rowSubSq_loop:
	TESTQ CX, CX
	JZ rowSubSq_done
	VMOVUPS 0(SI), Z17
	VMOVUPS 64(SI), Z18
	VMOVUPS 128(SI), Z19
	VMOVUPS 192(SI), Z20
	VSUBPS Z16, Z17, Z17
	VSUBPS Z16, Z18, Z18
	VSUBPS Z16, Z19, Z19
	VSUBPS Z16, Z20, Z20
	VMOVUPS Z17, 0(DX)
	VMOVUPS Z18, 64(DX)
	VMOVUPS Z19, 128(DX)
	VMOVUPS Z20, 192(DX)
	VMULPS Z17, Z17, Z17
	VMULPS Z18, Z18, Z18
	VMULPS Z19, Z19, Z19
	VMULPS Z20, Z20, Z20
	VADDPS Z17, Z0, Z0
	VADDPS Z18, Z1, Z1
	VADDPS Z19, Z2, Z2
	VADDPS Z20, Z3, Z3
	VMOVUPS 256(SI), Z17
	VMOVUPS 320(SI), Z18
	VMOVUPS 384(SI), Z19
	VMOVUPS 448(SI), Z20
	VSUBPS Z16, Z17, Z17
	VSUBPS Z16, Z18, Z18
	VSUBPS Z16, Z19, Z19
	VSUBPS Z16, Z20, Z20
	VMOVUPS Z17, 256(DX)
	VMOVUPS Z18, 320(DX)
	VMOVUPS Z19, 384(DX)
	VMOVUPS Z20, 448(DX)
	VMULPS Z17, Z17, Z17
	VMULPS Z18, Z18, Z18
	VMULPS Z19, Z19, Z19
	VMULPS Z20, Z20, Z20
	VADDPS Z17, Z4, Z4
	VADDPS Z18, Z5, Z5
	VADDPS Z19, Z6, Z6
	VADDPS Z20, Z7, Z7
	VMOVUPS 512(SI), Z17
	VMOVUPS 576(SI), Z18
	VMOVUPS 640(SI), Z19
	VMOVUPS 704(SI), Z20
	VSUBPS Z16, Z17, Z17
	VSUBPS Z16, Z18, Z18
	VSUBPS Z16, Z19, Z19
	VSUBPS Z16, Z20, Z20
	VMOVUPS Z17, 512(DX)
	VMOVUPS Z18, 576(DX)
	VMOVUPS Z19, 640(DX)
	VMOVUPS Z20, 704(DX)
	VMULPS Z17, Z17, Z17
	VMULPS Z18, Z18, Z18
	VMULPS Z19, Z19, Z19
	VMULPS Z20, Z20, Z20
	VADDPS Z17, Z8, Z8
	VADDPS Z18, Z9, Z9
	VADDPS Z19, Z10, Z10
	VADDPS Z20, Z11, Z11
	VMOVUPS 768(SI), Z17
	VMOVUPS 832(SI), Z18
	VMOVUPS 896(SI), Z19
	VMOVUPS 960(SI), Z20
	VSUBPS Z16, Z17, Z17
	VSUBPS Z16, Z18, Z18
	VSUBPS Z16, Z19, Z19
	VSUBPS Z16, Z20, Z20
	VMOVUPS Z17, 768(DX)
	VMOVUPS Z18, 832(DX)
	VMOVUPS Z19, 896(DX)
	VMOVUPS Z20, 960(DX)
	VMULPS Z17, Z17, Z17
	VMULPS Z18, Z18, Z18
	VMULPS Z19, Z19, Z19
	VMULPS Z20, Z20, Z20
	VADDPS Z17, Z12, Z12
	VADDPS Z18, Z13, Z13
	VADDPS Z19, Z14, Z14
	VADDPS Z20, Z15, Z15
	ADDQ $1024, SI
	ADDQ $1024, DX
	DECQ CX
	JMP rowSubSq_loop
rowSubSq_done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	VMOVUPS Z12, 768(DI)
	VMOVUPS Z13, 832(DI)
	VMOVUPS Z14, 896(DI)
	VMOVUPS Z15, 960(DI)
	VZEROUPPER
	RET

// func rowMaxAVX512(p *[256]float32, x *float32, chunks int)
// p[t] = Maxf(p[t], x[c*256 + t]) for c = 0 .. chunks-1 ascending (VMAXPS(p, x): p > x ? p : x,
// x when either is NaN; a NaN p is kept): the 256 partials stay in Z0-Z15. The first pass over a
// softmax row, from memory: each chunk prefetches the one two chunks ahead (+13% on row maxima of
// 4096 columns on this project's 2-core machine; none for the sums, which run mostly on cached rows).
TEXT ·rowMaxAVX512(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ chunks+16(FP), CX
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VMOVUPS 640(DI), Z10
	VMOVUPS 704(DI), Z11
	VMOVUPS 768(DI), Z12
	VMOVUPS 832(DI), Z13
	VMOVUPS 896(DI), Z14
	VMOVUPS 960(DI), Z15
rowMax_loop:
	TESTQ CX, CX
	JZ rowMax_done
	VMAXPS 0(SI), Z0, Z17
	VMAXPS 64(SI), Z1, Z18
	VMAXPS 128(SI), Z2, Z19
	VMAXPS 192(SI), Z3, Z20
	VCMPPS $0x03, Z0, Z0, K1
	VCMPPS $0x03, Z1, Z1, K2
	VCMPPS $0x03, Z2, Z2, K3
	VCMPPS $0x03, Z3, Z3, K4
	VBLENDMPS Z0, Z17, K1, Z0
	VBLENDMPS Z1, Z18, K2, Z1
	VBLENDMPS Z2, Z19, K3, Z2
	VBLENDMPS Z3, Z20, K4, Z3
	VMAXPS 256(SI), Z4, Z17
	VMAXPS 320(SI), Z5, Z18
	VMAXPS 384(SI), Z6, Z19
	VMAXPS 448(SI), Z7, Z20
	VCMPPS $0x03, Z4, Z4, K1
	VCMPPS $0x03, Z5, Z5, K2
	VCMPPS $0x03, Z6, Z6, K3
	VCMPPS $0x03, Z7, Z7, K4
	VBLENDMPS Z4, Z17, K1, Z4
	VBLENDMPS Z5, Z18, K2, Z5
	VBLENDMPS Z6, Z19, K3, Z6
	VBLENDMPS Z7, Z20, K4, Z7
	VMAXPS 512(SI), Z8, Z17
	VMAXPS 576(SI), Z9, Z18
	VMAXPS 640(SI), Z10, Z19
	VMAXPS 704(SI), Z11, Z20
	VCMPPS $0x03, Z8, Z8, K1
	VCMPPS $0x03, Z9, Z9, K2
	VCMPPS $0x03, Z10, Z10, K3
	VCMPPS $0x03, Z11, Z11, K4
	VBLENDMPS Z8, Z17, K1, Z8
	VBLENDMPS Z9, Z18, K2, Z9
	VBLENDMPS Z10, Z19, K3, Z10
	VBLENDMPS Z11, Z20, K4, Z11
	VMAXPS 768(SI), Z12, Z17
	VMAXPS 832(SI), Z13, Z18
	VMAXPS 896(SI), Z14, Z19
	VMAXPS 960(SI), Z15, Z20
	VCMPPS $0x03, Z12, Z12, K1
	VCMPPS $0x03, Z13, Z13, K2
	VCMPPS $0x03, Z14, Z14, K3
	VCMPPS $0x03, Z15, Z15, K4
	VBLENDMPS Z12, Z17, K1, Z12
	VBLENDMPS Z13, Z18, K2, Z13
	VBLENDMPS Z14, Z19, K3, Z14
	VBLENDMPS Z15, Z20, K4, Z15
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	PREFETCHT0 2496(SI)
	PREFETCHT0 2560(SI)
	PREFETCHT0 2624(SI)
	PREFETCHT0 2688(SI)
	PREFETCHT0 2752(SI)
	PREFETCHT0 2816(SI)
	PREFETCHT0 2880(SI)
	PREFETCHT0 2944(SI)
	PREFETCHT0 3008(SI)
	ADDQ $1024, SI
	DECQ CX
	JMP rowMax_loop
rowMax_done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	VMOVUPS Z12, 768(DI)
	VMOVUPS Z13, 832(DI)
	VMOVUPS Z14, 896(DI)
	VMOVUPS Z15, 960(DI)
	VZEROUPPER
	RET
