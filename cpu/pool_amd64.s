//go:build amd64 && !noasm

#include "textflag.h"

// Max pooling 2x2 with stride 2 on AVX-512, 16 windows per iteration (see pool_amd64.go). The
// two input rows of 16 windows are 32 floats each; VPERMI2PS splits them into the windows'
// cells a, b (top row) and c, d (bottom row), and puts the backward's values back in row order.

// Lane indices over two tables of 16 floats: the even and odd elements of 32, and the low and
// high halves of the interleave of two vectors.
DATA poolEven<>+0(SB)/4, $0
DATA poolEven<>+4(SB)/4, $2
DATA poolEven<>+8(SB)/4, $4
DATA poolEven<>+12(SB)/4, $6
DATA poolEven<>+16(SB)/4, $8
DATA poolEven<>+20(SB)/4, $10
DATA poolEven<>+24(SB)/4, $12
DATA poolEven<>+28(SB)/4, $14
DATA poolEven<>+32(SB)/4, $16
DATA poolEven<>+36(SB)/4, $18
DATA poolEven<>+40(SB)/4, $20
DATA poolEven<>+44(SB)/4, $22
DATA poolEven<>+48(SB)/4, $24
DATA poolEven<>+52(SB)/4, $26
DATA poolEven<>+56(SB)/4, $28
DATA poolEven<>+60(SB)/4, $30
GLOBL poolEven<>(SB), RODATA|NOPTR, $64
DATA poolOdd<>+0(SB)/4, $1
DATA poolOdd<>+4(SB)/4, $3
DATA poolOdd<>+8(SB)/4, $5
DATA poolOdd<>+12(SB)/4, $7
DATA poolOdd<>+16(SB)/4, $9
DATA poolOdd<>+20(SB)/4, $11
DATA poolOdd<>+24(SB)/4, $13
DATA poolOdd<>+28(SB)/4, $15
DATA poolOdd<>+32(SB)/4, $17
DATA poolOdd<>+36(SB)/4, $19
DATA poolOdd<>+40(SB)/4, $21
DATA poolOdd<>+44(SB)/4, $23
DATA poolOdd<>+48(SB)/4, $25
DATA poolOdd<>+52(SB)/4, $27
DATA poolOdd<>+56(SB)/4, $29
DATA poolOdd<>+60(SB)/4, $31
GLOBL poolOdd<>(SB), RODATA|NOPTR, $64
DATA poolZipLo<>+0(SB)/4, $0
DATA poolZipLo<>+4(SB)/4, $16
DATA poolZipLo<>+8(SB)/4, $1
DATA poolZipLo<>+12(SB)/4, $17
DATA poolZipLo<>+16(SB)/4, $2
DATA poolZipLo<>+20(SB)/4, $18
DATA poolZipLo<>+24(SB)/4, $3
DATA poolZipLo<>+28(SB)/4, $19
DATA poolZipLo<>+32(SB)/4, $4
DATA poolZipLo<>+36(SB)/4, $20
DATA poolZipLo<>+40(SB)/4, $5
DATA poolZipLo<>+44(SB)/4, $21
DATA poolZipLo<>+48(SB)/4, $6
DATA poolZipLo<>+52(SB)/4, $22
DATA poolZipLo<>+56(SB)/4, $7
DATA poolZipLo<>+60(SB)/4, $23
GLOBL poolZipLo<>(SB), RODATA|NOPTR, $64
DATA poolZipHi<>+0(SB)/4, $8
DATA poolZipHi<>+4(SB)/4, $24
DATA poolZipHi<>+8(SB)/4, $9
DATA poolZipHi<>+12(SB)/4, $25
DATA poolZipHi<>+16(SB)/4, $10
DATA poolZipHi<>+20(SB)/4, $26
DATA poolZipHi<>+24(SB)/4, $11
DATA poolZipHi<>+28(SB)/4, $27
DATA poolZipHi<>+32(SB)/4, $12
DATA poolZipHi<>+36(SB)/4, $28
DATA poolZipHi<>+40(SB)/4, $13
DATA poolZipHi<>+44(SB)/4, $29
DATA poolZipHi<>+48(SB)/4, $14
DATA poolZipHi<>+52(SB)/4, $30
DATA poolZipHi<>+56(SB)/4, $15
DATA poolZipHi<>+60(SB)/4, $31
GLOBL poolZipHi<>(SB), RODATA|NOPTR, $64

// POOL_STEP is one step of a window's scan for 16 windows: the cell v (offset t) replaces the
// best so far (Z4, offset Z8) where v > best (ordered: neither NaN), or where v is NaN and the
// best is not (the first NaN is the maximum); ties keep the first.
#define POOL_STEP(v, t) \
	VCMPPS  $0x1e, Z4, v, K1; \
	VCMPPS  $3, v, v, K2; \
	VCMPPS  $3, Z4, Z4, K3; \
	KANDNW  K2, K3, K2; \
	KORW    K1, K2, K1; \
	VMOVAPS v, K1, Z4; \
	VMOVAPS t, K1, Z8

// POOL_FWD computes 16 windows from the top cells in Z0, Z1 and the bottom ones in Z2, Z3:
// the maxima into Z4, their offsets into Z8.
#define POOL_FWD \
	VMOVAPS   Z20, Z4; \
	VPERMI2PS Z1, Z0, Z4; \
	VMOVAPS   Z21, Z5; \
	VPERMI2PS Z1, Z0, Z5; \
	VMOVAPS   Z20, Z6; \
	VPERMI2PS Z3, Z2, Z6; \
	VMOVAPS   Z21, Z7; \
	VPERMI2PS Z3, Z2, Z7; \
	VPXORD    Z8, Z8, Z8; \
	POOL_STEP(Z5, Z22); \
	POOL_STEP(Z6, Z23); \
	POOL_STEP(Z7, Z24)

// POOL_CONSTS loads the lane indices and the offsets 1, 2 and 3 (as floats) into Z20-Z26.
#define POOL_CONSTS \
	VMOVUPS      poolEven<>(SB), Z20; \
	VMOVUPS      poolOdd<>(SB), Z21; \
	MOVL         $0x3f800000, R8; \
	VPBROADCASTD R8, Z22; \
	MOVL         $0x40000000, R8; \
	VPBROADCASTD R8, Z23; \
	MOVL         $0x40400000, R8; \
	VPBROADCASTD R8, Z24; \
	VMOVUPS      poolZipLo<>(SB), Z25; \
	VMOVUPS      poolZipHi<>(SB), Z26

// func max2x2s2AVX512(y, idx, top, bottom *float32, n int, in0, in1, out uint16)
// n windows: n/16 whole blocks, then the n%16 left under the masks in0, in1 (their input
// cells in the first and second vector of a row) and out (their outputs).
TEXT ·max2x2s2AVX512(SB), NOSPLIT, $0-46
	MOVQ  y+0(FP), DI
	MOVQ  idx+8(FP), SI
	MOVQ  top+16(FP), AX
	MOVQ  bottom+24(FP), BX
	MOVQ  n+32(FP), CX
	POOL_CONSTS
	SHRQ  $4, CX
	JZ    mx_tail

mx_loop:
	VMOVUPS (AX), Z0
	VMOVUPS 64(AX), Z1
	VMOVUPS (BX), Z2
	VMOVUPS 64(BX), Z3
	POOL_FWD
	TESTQ   DI, DI
	JZ      mx_noy
	VMOVUPS Z4, (DI)
	ADDQ    $64, DI

mx_noy:
	TESTQ   SI, SI
	JZ      mx_noidx
	VMOVUPS Z8, (SI)
	ADDQ    $64, SI

mx_noidx:
	ADDQ $128, AX
	ADDQ $128, BX
	DECQ CX
	JNZ  mx_loop

mx_tail:
	KMOVW     in0+40(FP), K5
	KMOVW     in1+42(FP), K6
	KMOVW     out+44(FP), K7
	KORTESTW  K7, K7
	JZ        mx_done
	VMOVUPS.Z (AX), K5, Z0
	VMOVUPS.Z 64(AX), K6, Z1
	VMOVUPS.Z (BX), K5, Z2
	VMOVUPS.Z 64(BX), K6, Z3
	POOL_FWD
	TESTQ     DI, DI
	JZ        mx_tnoy
	VMOVUPS   Z4, K7, (DI)

mx_tnoy:
	TESTQ   SI, SI
	JZ      mx_done
	VMOVUPS Z8, K7, (SI)

mx_done:
	VZEROUPPER
	RET

// POOL_BWD computes the rows of 16 windows from their gradients Z0 and offsets Z1: the top
// row's two vectors into Z6, Z7, the bottom row's into Z10, Z11.
#define POOL_BWD \
	VADDPS    Z0, Z31, Z0; \
	VCMPPS    $0, Z31, Z1, K1; \
	VCMPPS    $0, Z22, Z1, K2; \
	VCMPPS    $0, Z23, Z1, K3; \
	VCMPPS    $0, Z24, Z1, K4; \
	VMOVAPS.Z Z0, K1, Z2; \
	VMOVAPS.Z Z0, K2, Z3; \
	VMOVAPS.Z Z0, K3, Z4; \
	VMOVAPS.Z Z0, K4, Z5; \
	VMOVAPS   Z25, Z6; \
	VPERMI2PS Z3, Z2, Z6; \
	VMOVAPS   Z26, Z7; \
	VPERMI2PS Z3, Z2, Z7; \
	VMOVAPS   Z25, Z10; \
	VPERMI2PS Z5, Z4, Z10; \
	VMOVAPS   Z26, Z11; \
	VPERMI2PS Z5, Z4, Z11

// func max2x2s2BwdAVX512(top, bottom, grad, idx *float32, n int, in0, in1, out uint16)
// n windows as in max2x2s2AVX512: out masks the tail's gradients and offsets, in0 and in1 the
// tail's cells of each row.
TEXT ·max2x2s2BwdAVX512(SB), NOSPLIT, $0-46
	MOVQ   top+0(FP), DI
	MOVQ   bottom+8(FP), SI
	MOVQ   grad+16(FP), AX
	MOVQ   idx+24(FP), BX
	MOVQ   n+32(FP), CX
	VPXORD Z31, Z31, Z31
	POOL_CONSTS
	SHRQ   $4, CX
	JZ     mb_tail

mb_loop:
	VMOVUPS (AX), Z0
	VMOVUPS (BX), Z1
	POOL_BWD
	VMOVUPS Z6, (DI)
	VMOVUPS Z7, 64(DI)
	VMOVUPS Z10, (SI)
	VMOVUPS Z11, 64(SI)
	ADDQ    $64, AX
	ADDQ    $64, BX
	ADDQ    $128, DI
	ADDQ    $128, SI
	DECQ    CX
	JNZ     mb_loop

mb_tail:
	KMOVW     in0+40(FP), K5
	KMOVW     in1+42(FP), K6
	KMOVW     out+44(FP), K7
	KORTESTW  K7, K7
	JZ        mb_done
	VMOVUPS.Z (AX), K7, Z0
	VMOVUPS.Z (BX), K7, Z1
	POOL_BWD
	VMOVUPS   Z6, K5, (DI)
	VMOVUPS   Z7, K6, 64(DI)
	VMOVUPS   Z10, K5, (SI)
	VMOVUPS   Z11, K6, 64(SI)

mb_done:
	VZEROUPPER
	RET

// AVG_CONSTS loads the lane indices, +0 (Z31) and 4.0 (Z27), the 2x2 window's divisor.
#define AVG_CONSTS \
	VMOVUPS      poolEven<>(SB), Z20; \
	VMOVUPS      poolOdd<>(SB), Z21; \
	VMOVUPS      poolZipLo<>(SB), Z25; \
	VMOVUPS      poolZipHi<>(SB), Z26; \
	VPXORD       Z31, Z31, Z31; \
	MOVL         $0x40800000, R8; \
	VPBROADCASTD R8, Z27

// AVG_FWD computes 16 averages from the top cells in Z0, Z1 and the bottom ones in Z2, Z3 into
// Z8: ((((0 + a) + b) + c) + d) / 4, the sum's left operand first as in avgPool.
#define AVG_FWD \
	VMOVAPS   Z20, Z4; \
	VPERMI2PS Z1, Z0, Z4; \
	VMOVAPS   Z21, Z5; \
	VPERMI2PS Z1, Z0, Z5; \
	VMOVAPS   Z20, Z6; \
	VPERMI2PS Z3, Z2, Z6; \
	VMOVAPS   Z21, Z7; \
	VPERMI2PS Z3, Z2, Z7; \
	VADDPS    Z4, Z31, Z8; \
	VADDPS    Z5, Z8, Z8; \
	VADDPS    Z6, Z8, Z8; \
	VADDPS    Z7, Z8, Z8; \
	VDIVPS    Z27, Z8, Z8

// func avg2x2s2AVX512(y, top, bottom *float32, n int, in0, in1, out uint16)
// n windows as in max2x2s2AVX512.
TEXT ·avg2x2s2AVX512(SB), NOSPLIT, $0-38
	MOVQ y+0(FP), DI
	MOVQ top+8(FP), AX
	MOVQ bottom+16(FP), BX
	MOVQ n+24(FP), CX
	AVG_CONSTS
	SHRQ $4, CX
	JZ   av_tail

av_loop:
	VMOVUPS (AX), Z0
	VMOVUPS 64(AX), Z1
	VMOVUPS (BX), Z2
	VMOVUPS 64(BX), Z3
	AVG_FWD
	VMOVUPS Z8, (DI)
	ADDQ    $64, DI
	ADDQ    $128, AX
	ADDQ    $128, BX
	DECQ    CX
	JNZ     av_loop

av_tail:
	KMOVW     in0+32(FP), K5
	KMOVW     in1+34(FP), K6
	KMOVW     out+36(FP), K7
	KORTESTW  K7, K7
	JZ        av_done
	VMOVUPS.Z (AX), K5, Z0
	VMOVUPS.Z 64(AX), K6, Z1
	VMOVUPS.Z (BX), K5, Z2
	VMOVUPS.Z 64(BX), K6, Z3
	AVG_FWD
	VMOVUPS   Z8, K7, (DI)

av_done:
	VZEROUPPER
	RET

// AVG_BWD computes the rows of 16 windows from their gradients Z0: each cell 0 + g/4, the top
// row's two vectors (equal to the bottom row's) into Z6, Z7.
#define AVG_BWD \
	VDIVPS    Z27, Z0, Z0; \
	VADDPS    Z0, Z31, Z0; \
	VMOVAPS   Z25, Z6; \
	VPERMI2PS Z0, Z0, Z6; \
	VMOVAPS   Z26, Z7; \
	VPERMI2PS Z0, Z0, Z7

// func avg2x2s2BwdAVX512(top, bottom, grad *float32, n int, in0, in1, out uint16)
// n windows as in max2x2s2BwdAVX512.
TEXT ·avg2x2s2BwdAVX512(SB), NOSPLIT, $0-38
	MOVQ top+0(FP), DI
	MOVQ bottom+8(FP), SI
	MOVQ grad+16(FP), AX
	MOVQ n+24(FP), CX
	AVG_CONSTS
	SHRQ $4, CX
	JZ   ab_tail

ab_loop:
	VMOVUPS (AX), Z0
	AVG_BWD
	VMOVUPS Z6, (DI)
	VMOVUPS Z7, 64(DI)
	VMOVUPS Z6, (SI)
	VMOVUPS Z7, 64(SI)
	ADDQ    $64, AX
	ADDQ    $128, DI
	ADDQ    $128, SI
	DECQ    CX
	JNZ     ab_loop

ab_tail:
	KMOVW     in0+32(FP), K5
	KMOVW     in1+34(FP), K6
	KMOVW     out+36(FP), K7
	KORTESTW  K7, K7
	JZ        ab_done
	VMOVUPS.Z (AX), K7, Z0
	AVG_BWD
	VMOVUPS   Z6, K5, (DI)
	VMOVUPS   Z7, K6, 64(DI)
	VMOVUPS   Z6, K5, (SI)
	VMOVUPS   Z7, K6, 64(SI)

ab_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------------------------
// The same kernels on AVX2, 8 windows per iteration (see pool_amd64.go): VSHUFPS and VPERMPD
// split a row's 16 cells into the windows' cells, VUNPCKLPS, VUNPCKHPS and VPERM2F128 put the
// backward's values back in row order; the tail's loads and stores go through VMASKMOVPS with
// lane masks read from poolMask8 (8 set lanes, then 8 clear: the mask of r lanes starts at
// poolMask8 + 4*(8-r)).
DATA poolMask8<>+0(SB)/4, $0xffffffff
DATA poolMask8<>+4(SB)/4, $0xffffffff
DATA poolMask8<>+8(SB)/4, $0xffffffff
DATA poolMask8<>+12(SB)/4, $0xffffffff
DATA poolMask8<>+16(SB)/4, $0xffffffff
DATA poolMask8<>+20(SB)/4, $0xffffffff
DATA poolMask8<>+24(SB)/4, $0xffffffff
DATA poolMask8<>+28(SB)/4, $0xffffffff
DATA poolMask8<>+32(SB)/4, $0
DATA poolMask8<>+36(SB)/4, $0
DATA poolMask8<>+40(SB)/4, $0
DATA poolMask8<>+44(SB)/4, $0
DATA poolMask8<>+48(SB)/4, $0
DATA poolMask8<>+52(SB)/4, $0
DATA poolMask8<>+56(SB)/4, $0
DATA poolMask8<>+60(SB)/4, $0
GLOBL poolMask8<>(SB), RODATA|NOPTR, $64

// Y_MASK loads the mask of the first r lanes (r from the frame at off) into dst (R9, R10
// clobbered).
#define Y_MASK(off, dst) \
	MOVQ    off(FP), R10; \
	SHLQ    $2, R10; \
	LEAQ    poolMask8<>+32(SB), R9; \
	SUBQ    R10, R9; \
	VMOVDQU (R9), dst

// Y_SPLIT puts the even cells of lo:hi (16 cells) into ev and the odd ones into od.
#define Y_SPLIT(lo, hi, ev, od) \
	VSHUFPS $0x88, hi, lo, ev; \
	VPERMPD $0xd8, ev, ev; \
	VSHUFPS $0xdd, hi, lo, od; \
	VPERMPD $0xd8, od, od

// Y_ZIP puts the interleave of a and b (a0 b0 a1 b1 ...) into lo (cells 0..7) and hi (8..15),
// through t.
#define Y_ZIP(a, b, lo, hi, t) \
	VUNPCKLPS  b, a, t; \
	VUNPCKHPS  b, a, hi; \
	VPERM2F128 $0x20, hi, t, lo; \
	VPERM2F128 $0x31, hi, t, hi

// Y_CONSTS sets Y11 = +0, Y12 = 1, Y13 = 2, Y14 = 3 (as floats) and Y10 = 4.
#define Y_CONSTS \
	VXORPS       Y11, Y11, Y11; \
	MOVL         $0x3f800000, R8; \
	VMOVD        R8, X12; \
	VPBROADCASTD X12, Y12; \
	MOVL         $0x40000000, R8; \
	VMOVD        R8, X13; \
	VPBROADCASTD X13, Y13; \
	MOVL         $0x40400000, R8; \
	VMOVD        R8, X14; \
	VPBROADCASTD X14, Y14; \
	MOVL         $0x40800000, R8; \
	VMOVD        R8, X10; \
	VPBROADCASTD X10, Y10

// YP_STEP is POOL_STEP on 8 windows (best Y4, offset Y8; Y3, Y9 and Y15 clobbered).
#define YP_STEP(v, t) \
	VCMPPS    $0x1e, Y4, v, Y9; \
	VCMPPS    $3, v, v, Y15; \
	VCMPPS    $3, Y4, Y4, Y3; \
	VANDNPS   Y15, Y3, Y3; \
	VORPS     Y3, Y9, Y9; \
	VBLENDVPS Y9, v, Y4, Y4; \
	VBLENDVPS Y9, t, Y8, Y8

// YP_FWD computes 8 windows from the top cells in Y0, Y1 and the bottom ones in Y2, Y3: the
// maxima into Y4, their offsets into Y8 (Y5-Y7, Y9, Y15 clobbered).
#define YP_FWD \
	Y_SPLIT(Y0, Y1, Y4, Y5); \
	Y_SPLIT(Y2, Y3, Y6, Y7); \
	VXORPS Y8, Y8, Y8; \
	YP_STEP(Y5, Y12); \
	YP_STEP(Y6, Y13); \
	YP_STEP(Y7, Y14)

// func max2x2s2AVX2(y, idx, top, bottom *float32, n, in0, in1, out int)
// n windows: n/8 whole blocks, then the n%8 left, whose input cells are the first in0 and in1
// lanes of a row's two vectors and whose outputs the first out lanes.
TEXT ·max2x2s2AVX2(SB), NOSPLIT, $0-64
	MOVQ y+0(FP), DI
	MOVQ idx+8(FP), SI
	MOVQ top+16(FP), AX
	MOVQ bottom+24(FP), BX
	MOVQ n+32(FP), CX
	Y_CONSTS
	SHRQ $3, CX
	JZ   ym_tail

ym_loop:
	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS (BX), Y2
	VMOVUPS 32(BX), Y3
	YP_FWD
	TESTQ   DI, DI
	JZ      ym_noy
	VMOVUPS Y4, (DI)
	ADDQ    $32, DI

ym_noy:
	TESTQ   SI, SI
	JZ      ym_noidx
	VMOVUPS Y8, (SI)
	ADDQ    $32, SI

ym_noidx:
	ADDQ $64, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  ym_loop

ym_tail:
	MOVQ       out+56(FP), R10
	TESTQ      R10, R10
	JZ         ym_done
	Y_MASK(in0+40, Y15)
	VMASKMOVPS (AX), Y15, Y0
	VMASKMOVPS (BX), Y15, Y2
	Y_MASK(in1+48, Y15)
	VMASKMOVPS 32(AX), Y15, Y1
	VMASKMOVPS 32(BX), Y15, Y3
	YP_FWD
	Y_MASK(out+56, Y15)
	TESTQ      DI, DI
	JZ         ym_tnoy
	VMASKMOVPS Y4, Y15, (DI)

ym_tnoy:
	TESTQ      SI, SI
	JZ         ym_done
	VMASKMOVPS Y8, Y15, (SI)

ym_done:
	VZEROUPPER
	RET

// YP_BWD computes the rows of 8 windows from their gradients Y0 and offsets Y1: the top row's
// two vectors into Y6, Y7, the bottom row's into Y8, Y9 (Y2-Y5 clobbered).
#define YP_BWD \
	VADDPS Y0, Y11, Y0; \
	VCMPPS $0, Y11, Y1, Y2; \
	VANDPS Y0, Y2, Y2; \
	VCMPPS $0, Y12, Y1, Y3; \
	VANDPS Y0, Y3, Y3; \
	VCMPPS $0, Y13, Y1, Y4; \
	VANDPS Y0, Y4, Y4; \
	VCMPPS $0, Y14, Y1, Y5; \
	VANDPS Y0, Y5, Y5; \
	Y_ZIP(Y2, Y3, Y6, Y7, Y1); \
	Y_ZIP(Y4, Y5, Y8, Y9, Y1)

// func max2x2s2BwdAVX2(top, bottom, grad, idx *float32, n, in0, in1, out int)
TEXT ·max2x2s2BwdAVX2(SB), NOSPLIT, $0-64
	MOVQ top+0(FP), DI
	MOVQ bottom+8(FP), SI
	MOVQ grad+16(FP), AX
	MOVQ idx+24(FP), BX
	MOVQ n+32(FP), CX
	Y_CONSTS
	SHRQ $3, CX
	JZ   yb_tail

yb_loop:
	VMOVUPS (AX), Y0
	VMOVUPS (BX), Y1
	YP_BWD
	VMOVUPS Y6, (DI)
	VMOVUPS Y7, 32(DI)
	VMOVUPS Y8, (SI)
	VMOVUPS Y9, 32(SI)
	ADDQ    $32, AX
	ADDQ    $32, BX
	ADDQ    $64, DI
	ADDQ    $64, SI
	DECQ    CX
	JNZ     yb_loop

yb_tail:
	MOVQ       out+56(FP), R10
	TESTQ      R10, R10
	JZ         yb_done
	Y_MASK(out+56, Y15)
	VMASKMOVPS (AX), Y15, Y0
	VMASKMOVPS (BX), Y15, Y1
	YP_BWD
	Y_MASK(in0+40, Y15)
	VMASKMOVPS Y6, Y15, (DI)
	VMASKMOVPS Y8, Y15, (SI)
	Y_MASK(in1+48, Y15)
	VMASKMOVPS Y7, Y15, 32(DI)
	VMASKMOVPS Y9, Y15, 32(SI)

yb_done:
	VZEROUPPER
	RET

// YA_FWD computes 8 averages from the top cells in Y0, Y1 and the bottom ones in Y2, Y3 into
// Y8: ((((0 + a) + b) + c) + d) / 4 (Y4-Y7 clobbered).
#define YA_FWD \
	Y_SPLIT(Y0, Y1, Y4, Y5); \
	Y_SPLIT(Y2, Y3, Y6, Y7); \
	VADDPS Y4, Y11, Y8; \
	VADDPS Y5, Y8, Y8; \
	VADDPS Y6, Y8, Y8; \
	VADDPS Y7, Y8, Y8; \
	VDIVPS Y10, Y8, Y8

// func avg2x2s2AVX2(y, top, bottom *float32, n, in0, in1, out int)
TEXT ·avg2x2s2AVX2(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ top+8(FP), AX
	MOVQ bottom+16(FP), BX
	MOVQ n+24(FP), CX
	Y_CONSTS
	SHRQ $3, CX
	JZ   ya_tail

ya_loop:
	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS (BX), Y2
	VMOVUPS 32(BX), Y3
	YA_FWD
	VMOVUPS Y8, (DI)
	ADDQ    $32, DI
	ADDQ    $64, AX
	ADDQ    $64, BX
	DECQ    CX
	JNZ     ya_loop

ya_tail:
	MOVQ       out+48(FP), R10
	TESTQ      R10, R10
	JZ         ya_done
	Y_MASK(in0+32, Y15)
	VMASKMOVPS (AX), Y15, Y0
	VMASKMOVPS (BX), Y15, Y2
	Y_MASK(in1+40, Y15)
	VMASKMOVPS 32(AX), Y15, Y1
	VMASKMOVPS 32(BX), Y15, Y3
	YA_FWD
	Y_MASK(out+48, Y15)
	VMASKMOVPS Y8, Y15, (DI)

ya_done:
	VZEROUPPER
	RET

// YA_BWD computes the rows of 8 windows from their gradients Y0: each cell 0 + g/4, the row's
// two vectors (the same for both rows) into Y6, Y7 (Y1 clobbered).
#define YA_BWD \
	VDIVPS Y10, Y0, Y0; \
	VADDPS Y0, Y11, Y0; \
	Y_ZIP(Y0, Y0, Y6, Y7, Y1)

// func avg2x2s2BwdAVX2(top, bottom, grad *float32, n, in0, in1, out int)
TEXT ·avg2x2s2BwdAVX2(SB), NOSPLIT, $0-56
	MOVQ top+0(FP), DI
	MOVQ bottom+8(FP), SI
	MOVQ grad+16(FP), AX
	MOVQ n+24(FP), CX
	Y_CONSTS
	SHRQ $3, CX
	JZ   yab_tail

yab_loop:
	VMOVUPS (AX), Y0
	YA_BWD
	VMOVUPS Y6, (DI)
	VMOVUPS Y7, 32(DI)
	VMOVUPS Y6, (SI)
	VMOVUPS Y7, 32(SI)
	ADDQ    $32, AX
	ADDQ    $64, DI
	ADDQ    $64, SI
	DECQ    CX
	JNZ     yab_loop

yab_tail:
	MOVQ       out+48(FP), R10
	TESTQ      R10, R10
	JZ         yab_done
	Y_MASK(out+48, Y15)
	VMASKMOVPS (AX), Y15, Y0
	YA_BWD
	Y_MASK(in0+32, Y15)
	VMASKMOVPS Y6, Y15, (DI)
	VMASKMOVPS Y6, Y15, (SI)
	Y_MASK(in1+40, Y15)
	VMASKMOVPS Y7, Y15, 32(DI)
	VMASKMOVPS Y7, Y15, 32(SI)

yab_done:
	VZEROUPPER
	RET
