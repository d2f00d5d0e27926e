//go:build amd64 && !noasm

#include "textflag.h"

// SGEMM micro-kernels: func(kc int, ap, bp, c *float32, ldc int, load bool), see gemmKernel in
// matmul.go. Per step k: load the nr floats of B, then for each row i broadcast A(i, k) and
// VFMADD231PS it into the row's accumulators (acc = fma(a_ik, b_kj, acc), one rounding). The
// step loop is unrolled by 4. The tile is stored with NaN lanes replaced by 0x7fffffff
// (CanonicalNaN). Registers: AX = ap, BX = bp, DI = c, R8 = ldc*4, CX/R11 = step counters,
// DX = row pointer.

// ---------------------------------------------------------------------------------------------
// AVX-512, 14 x 32: accumulators Z0..Z27 (row r in Z(2r), Z(2r+1)), B in Z28, Z29, A broadcast
// alternately into Z30, Z31. One step reads 56 bytes of ap and 128 bytes of bp.

#define Z_ROW(off, r0, r1, bc) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS  Z28, bc, r0; \
	VFMADD231PS  Z29, bc, r1

// Z_ROWS takes one step's fma for the 14 rows, A(i, k) at ao + 4i from AX, B in Z28, Z29.
#define Z_ROWS(ao) \
	Z_ROW(ao+0, Z0, Z1, Z30); \
	Z_ROW(ao+4, Z2, Z3, Z31); \
	Z_ROW(ao+8, Z4, Z5, Z30); \
	Z_ROW(ao+12, Z6, Z7, Z31); \
	Z_ROW(ao+16, Z8, Z9, Z30); \
	Z_ROW(ao+20, Z10, Z11, Z31); \
	Z_ROW(ao+24, Z12, Z13, Z30); \
	Z_ROW(ao+28, Z14, Z15, Z31); \
	Z_ROW(ao+32, Z16, Z17, Z30); \
	Z_ROW(ao+36, Z18, Z19, Z31); \
	Z_ROW(ao+40, Z20, Z21, Z30); \
	Z_ROW(ao+44, Z22, Z23, Z31); \
	Z_ROW(ao+48, Z24, Z25, Z30); \
	Z_ROW(ao+52, Z26, Z27, Z31)

#define Z_STEP(ao, bo) \
	VMOVUPS bo(BX), Z28; \
	VMOVUPS bo+64(BX), Z29; \
	Z_ROWS(ao)

// Z_LOAD loads one row of C and advances DX; Z_ZERO sets one row to +0.
#define Z_LOAD(r0, r1) \
	VMOVUPS (DX), r0; \
	VMOVUPS 64(DX), r1; \
	ADDQ    R8, DX

#define Z_ZERO(r0, r1) \
	VPXORD r0, r0, r0; \
	VPXORD r1, r1, r1

// Z_STORE stores one row (NaN lanes from Z28 = CanonicalNaN) and advances DX.
#define Z_STORE(r0, r1) \
	VCMPPS  $3, r0, r0, K1; \
	VCMPPS  $3, r1, r1, K2; \
	VMOVAPS Z28, K1, r0; \
	VMOVAPS Z28, K2, r1; \
	VMOVUPS r0, (DX); \
	VMOVUPS r1, 64(DX); \
	ADDQ    R8, DX

// Z_PREF prefetches one row of the next tile down and advances R10.
#define Z_PREF \
	PREFETCHT0 (R10); \
	PREFETCHT0 64(R10); \
	ADDQ       R8, R10

// The whole 14 x 32 tile (Z0..Z27): Z_LOAD_TILE loads it from C (DX = c, R8 = ldc*4),
// Z_ZERO_TILE sets it to +0, Z_PREF_TILE prefetches the next tile down (rows 14..27 from c =
// DI, most often the next call's C: prefetching past the end of C is harmless) and
// Z_STORE_TILE stores it to c = DI with NaN lanes made CanonicalNaN (Z28, R9 and DX clobbered).
#define Z_LOAD_TILE \
	Z_LOAD(Z0, Z1); \
	Z_LOAD(Z2, Z3); \
	Z_LOAD(Z4, Z5); \
	Z_LOAD(Z6, Z7); \
	Z_LOAD(Z8, Z9); \
	Z_LOAD(Z10, Z11); \
	Z_LOAD(Z12, Z13); \
	Z_LOAD(Z14, Z15); \
	Z_LOAD(Z16, Z17); \
	Z_LOAD(Z18, Z19); \
	Z_LOAD(Z20, Z21); \
	Z_LOAD(Z22, Z23); \
	Z_LOAD(Z24, Z25); \
	Z_LOAD(Z26, Z27)

#define Z_ZERO_TILE \
	Z_ZERO(Z0, Z1); \
	Z_ZERO(Z2, Z3); \
	Z_ZERO(Z4, Z5); \
	Z_ZERO(Z6, Z7); \
	Z_ZERO(Z8, Z9); \
	Z_ZERO(Z10, Z11); \
	Z_ZERO(Z12, Z13); \
	Z_ZERO(Z14, Z15); \
	Z_ZERO(Z16, Z17); \
	Z_ZERO(Z18, Z19); \
	Z_ZERO(Z20, Z21); \
	Z_ZERO(Z22, Z23); \
	Z_ZERO(Z24, Z25); \
	Z_ZERO(Z26, Z27)

#define Z_PREF_TILE \
	MOVQ   DI, R10; \
	IMUL3Q $14, R8, R9; \
	ADDQ   R9, R10; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF; \
	Z_PREF

#define Z_STORE_TILE \
	MOVL         $0x7fffffff, R9; \
	VPBROADCASTD R9, Z28; \
	MOVQ         DI, DX; \
	Z_STORE(Z0, Z1); \
	Z_STORE(Z2, Z3); \
	Z_STORE(Z4, Z5); \
	Z_STORE(Z6, Z7); \
	Z_STORE(Z8, Z9); \
	Z_STORE(Z10, Z11); \
	Z_STORE(Z12, Z13); \
	Z_STORE(Z14, Z15); \
	Z_STORE(Z16, Z17); \
	Z_STORE(Z18, Z19); \
	Z_STORE(Z20, Z21); \
	Z_STORE(Z22, Z23); \
	Z_STORE(Z24, Z25); \
	Z_STORE(Z26, Z27)

// func gemmAVX512(kc int, ap, bp, c *float32, ldc int, load bool)
TEXT ·gemmAVX512(SB), NOSPLIT, $0-41
	MOVQ    kc+0(FP), CX
	MOVQ    ap+8(FP), AX
	MOVQ    bp+16(FP), BX
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), R8
	SHLQ    $2, R8
	MOVBQZX load+40(FP), R9
	MOVQ    DI, DX
	TESTQ   R9, R9
	JZ      z_zero

	Z_LOAD_TILE
	JMP z_pref

z_zero:
	Z_ZERO_TILE

z_pref:
	Z_PREF_TILE

	MOVQ  CX, R11
	ANDQ  $3, R11
	SHRQ  $2, CX
	JZ    z_tail

z_loop4:
	Z_STEP(0, 0)
	Z_STEP(56, 128)
	Z_STEP(112, 256)
	Z_STEP(168, 384)
	ADDQ $224, AX
	ADDQ $512, BX
	DECQ CX
	JNZ  z_loop4

z_tail:
	TESTQ R11, R11
	JZ    z_store

z_loop1:
	Z_STEP(0, 0)
	ADDQ $56, AX
	ADDQ $128, BX
	DECQ R11
	JNZ  z_loop1

z_store:
	Z_STORE_TILE
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------------------------
// AVX2 + FMA, 6 x 16: accumulators Y0..Y11 (row r in Y(2r), Y(2r+1)), B in Y12, Y13, A
// broadcast alternately into Y14, Y15. One step reads 24 bytes of ap and 64 bytes of bp.

#define Y_ROW(off, r0, r1, bc) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS  Y12, bc, r0; \
	VFMADD231PS  Y13, bc, r1

// Y_ROWS takes one step's fma for the 6 rows, A(i, k) at ao + 4i from AX, B in Y12, Y13.
#define Y_ROWS(ao) \
	Y_ROW(ao+0, Y0, Y1, Y14); \
	Y_ROW(ao+4, Y2, Y3, Y15); \
	Y_ROW(ao+8, Y4, Y5, Y14); \
	Y_ROW(ao+12, Y6, Y7, Y15); \
	Y_ROW(ao+16, Y8, Y9, Y14); \
	Y_ROW(ao+20, Y10, Y11, Y15)

#define Y_STEP(ao, bo) \
	VMOVUPS bo(BX), Y12; \
	VMOVUPS bo+32(BX), Y13; \
	Y_ROWS(ao)

#define Y_LOAD(r0, r1) \
	VMOVUPS (DX), r0; \
	VMOVUPS 32(DX), r1; \
	ADDQ    R8, DX

#define Y_ZERO(r0, r1) \
	VXORPS r0, r0, r0; \
	VXORPS r1, r1, r1

// Y_STORE stores one row (NaN lanes from Y12 = CanonicalNaN, Y13 the mask) and advances DX.
#define Y_STORE(r0, r1) \
	VCMPPS    $3, r0, r0, Y13; \
	VBLENDVPS Y13, Y12, r0, r0; \
	VCMPPS    $3, r1, r1, Y13; \
	VBLENDVPS Y13, Y12, r1, r1; \
	VMOVUPS   r0, (DX); \
	VMOVUPS   r1, 32(DX); \
	ADDQ      R8, DX

#define Y_PREF \
	PREFETCHT0 (R10); \
	PREFETCHT0 60(R10); \
	ADDQ       R8, R10

// The whole 6 x 16 tile (Y0..Y11), as the Z_*_TILE macros: load from C (DX = c, R8 = ldc*4),
// set to +0, prefetch the next tile down (from c = DI), store to c = DI with NaN lanes made
// CanonicalNaN (Y12, Y13, R9 and DX clobbered).
#define Y_LOAD_TILE \
	Y_LOAD(Y0, Y1); \
	Y_LOAD(Y2, Y3); \
	Y_LOAD(Y4, Y5); \
	Y_LOAD(Y6, Y7); \
	Y_LOAD(Y8, Y9); \
	Y_LOAD(Y10, Y11)

#define Y_ZERO_TILE \
	Y_ZERO(Y0, Y1); \
	Y_ZERO(Y2, Y3); \
	Y_ZERO(Y4, Y5); \
	Y_ZERO(Y6, Y7); \
	Y_ZERO(Y8, Y9); \
	Y_ZERO(Y10, Y11)

#define Y_PREF_TILE \
	MOVQ   DI, R10; \
	IMUL3Q $6, R8, R9; \
	ADDQ   R9, R10; \
	Y_PREF; \
	Y_PREF; \
	Y_PREF; \
	Y_PREF; \
	Y_PREF; \
	Y_PREF

#define Y_STORE_TILE \
	MOVL         $0x7fffffff, R9; \
	VMOVD        R9, X12; \
	VPBROADCASTD X12, Y12; \
	MOVQ         DI, DX; \
	Y_STORE(Y0, Y1); \
	Y_STORE(Y2, Y3); \
	Y_STORE(Y4, Y5); \
	Y_STORE(Y6, Y7); \
	Y_STORE(Y8, Y9); \
	Y_STORE(Y10, Y11)

// func gemmAVX2(kc int, ap, bp, c *float32, ldc int, load bool)
TEXT ·gemmAVX2(SB), NOSPLIT, $0-41
	MOVQ    kc+0(FP), CX
	MOVQ    ap+8(FP), AX
	MOVQ    bp+16(FP), BX
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), R8
	SHLQ    $2, R8
	MOVBQZX load+40(FP), R9
	MOVQ    DI, DX
	TESTQ   R9, R9
	JZ      y_zero

	Y_LOAD_TILE
	JMP y_pref

y_zero:
	Y_ZERO_TILE

y_pref:
	Y_PREF_TILE

	MOVQ CX, R11
	ANDQ $3, R11
	SHRQ $2, CX
	JZ   y_tail

y_loop4:
	Y_STEP(0, 0)
	Y_STEP(24, 64)
	Y_STEP(48, 128)
	Y_STEP(72, 192)
	ADDQ $96, AX
	ADDQ $256, BX
	DECQ CX
	JNZ  y_loop4

y_tail:
	TESTQ R11, R11
	JZ    y_store

y_loop1:
	Y_STEP(0, 0)
	ADDQ $24, AX
	ADDQ $64, BX
	DECQ R11
	JNZ  y_loop1

y_store:
	Y_STORE_TILE
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------------------------
// AVX-512 14 x 32 over operands read in place (see gemmKernel.fs and .fr): the arithmetic of
// gemmAVX512 (the same VFMADD231PS per register and step, k ascending), only the addresses of
// A and B differ. B(k, j) is at bp + k*bks + 4j; after each step BX advances by bks (R13).

// ZS_STEP is one step with A(i, k) at AX + 4i, then AX advances by aks (R12).
#define ZS_STEP \
	Z_STEP(0, 0); \
	ADDQ R12, AX; \
	ADDQ R13, BX

// ZR_ROW broadcasts A(i, k) from addr into bc and takes the row's fma step.
#define ZR_ROW(addr, r0, r1, bc) \
	VBROADCASTSS addr, bc; \
	VFMADD231PS  Z28, bc, r0; \
	VFMADD231PS  Z29, bc, r1

// ZR_STEP is one step with A(i, k) in row i of stride lda: rows 0..6 from AX, rows 7..13 from
// SI = AX + 7*lda, through R9 = lda, R10 = 3*lda and R12 = 5*lda; then AX and SI advance by one
// float and BX by bks.
#define ZR_STEP \
	VMOVUPS (BX), Z28; \
	VMOVUPS 64(BX), Z29; \
	ZR_ROW((AX), Z0, Z1, Z30); \
	ZR_ROW((AX)(R9*1), Z2, Z3, Z31); \
	ZR_ROW((AX)(R9*2), Z4, Z5, Z30); \
	ZR_ROW((AX)(R10*1), Z6, Z7, Z31); \
	ZR_ROW((AX)(R9*4), Z8, Z9, Z30); \
	ZR_ROW((AX)(R12*1), Z10, Z11, Z31); \
	ZR_ROW((AX)(R10*2), Z12, Z13, Z30); \
	ZR_ROW((SI), Z14, Z15, Z31); \
	ZR_ROW((SI)(R9*1), Z16, Z17, Z30); \
	ZR_ROW((SI)(R9*2), Z18, Z19, Z31); \
	ZR_ROW((SI)(R10*1), Z20, Z21, Z30); \
	ZR_ROW((SI)(R9*4), Z22, Z23, Z31); \
	ZR_ROW((SI)(R12*1), Z24, Z25, Z30); \
	ZR_ROW((SI)(R10*2), Z26, Z27, Z31); \
	ADDQ $4, AX; \
	ADDQ $4, SI; \
	ADDQ R13, BX

// func gemmAVX512S(kc int, ap, bp, c *float32, ldc, aks, bks int, load bool)
TEXT ·gemmAVX512S(SB), NOSPLIT, $0-57
	MOVQ    kc+0(FP), CX
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), R8
	SHLQ    $2, R8
	MOVQ    DI, DX
	MOVBQZX load+56(FP), R9
	TESTQ   R9, R9
	JZ      zs_zero
	Z_LOAD_TILE
	JMP zs_pref

zs_zero:
	Z_ZERO_TILE

zs_pref:
	Z_PREF_TILE

	MOVQ ap+8(FP), AX
	MOVQ bp+16(FP), BX
	MOVQ aks+40(FP), R12
	MOVQ bks+48(FP), R13
	MOVQ CX, R11
	ANDQ $3, R11
	SHRQ $2, CX
	JZ   zs_tail

zs_loop4:
	ZS_STEP
	ZS_STEP
	ZS_STEP
	ZS_STEP
	DECQ CX
	JNZ  zs_loop4

zs_tail:
	TESTQ R11, R11
	JZ    zs_store

zs_loop1:
	ZS_STEP
	DECQ R11
	JNZ  zs_loop1

zs_store:
	Z_STORE_TILE
	VZEROUPPER
	RET

// func gemmAVX512R(kc int, ap, bp, c *float32, ldc, lda, bks int, load bool)
TEXT ·gemmAVX512R(SB), NOSPLIT, $0-57
	MOVQ    kc+0(FP), CX
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), R8
	SHLQ    $2, R8
	MOVQ    DI, DX
	MOVBQZX load+56(FP), R9
	TESTQ   R9, R9
	JZ      zr_zero
	Z_LOAD_TILE
	JMP zr_pref

zr_zero:
	Z_ZERO_TILE

zr_pref:
	Z_PREF_TILE

	MOVQ   ap+8(FP), AX
	MOVQ   bp+16(FP), BX
	MOVQ   lda+40(FP), R9
	SHLQ   $2, R9
	MOVQ   bks+48(FP), R13
	IMUL3Q $3, R9, R10
	IMUL3Q $5, R9, R12
	IMUL3Q $7, R9, SI
	ADDQ   AX, SI
	MOVQ   CX, R11
	ANDQ   $3, R11
	SHRQ   $2, CX
	JZ     zr_tail

zr_loop4:
	ZR_STEP
	ZR_STEP
	ZR_STEP
	ZR_STEP
	DECQ CX
	JNZ  zr_loop4

zr_tail:
	TESTQ R11, R11
	JZ    zr_store

zr_loop1:
	ZR_STEP
	DECQ R11
	JNZ  zr_loop1

zr_store:
	Z_STORE_TILE
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------------------------
// AVX-512 14 x 32 with B read through a step table (see gemmKernel.fi): the arithmetic of
// gemmAVX512 (the same VFMADD231PS per register and step, k ascending) with A packed as its
// panels and B(k, j) at bp + boff[k] + 4j. SI walks boff; R13 holds the step's offset.

#define ZI_STEP(ao, so) \
	MOVQ    so(SI), R13; \
	VMOVUPS (BX)(R13*1), Z28; \
	VMOVUPS 64(BX)(R13*1), Z29; \
	Z_ROWS(ao)

// func gemmAVX512I(kc int, ap, bp, c *float32, ldc int, boff *int, load bool)
TEXT ·gemmAVX512I(SB), NOSPLIT, $0-49
	MOVQ    kc+0(FP), CX
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), R8
	SHLQ    $2, R8
	MOVQ    DI, DX
	MOVBQZX load+48(FP), R9
	TESTQ   R9, R9
	JZ      zi_zero
	Z_LOAD_TILE
	JMP zi_pref

zi_zero:
	Z_ZERO_TILE

zi_pref:
	Z_PREF_TILE

	MOVQ ap+8(FP), AX
	MOVQ bp+16(FP), BX
	MOVQ boff+40(FP), SI
	MOVQ CX, R11
	ANDQ $3, R11
	SHRQ $2, CX
	JZ   zi_tail

zi_loop4:
	ZI_STEP(0, 0)
	ZI_STEP(56, 8)
	ZI_STEP(112, 16)
	ZI_STEP(168, 24)
	ADDQ $224, AX
	ADDQ $32, SI
	DECQ CX
	JNZ  zi_loop4

zi_tail:
	TESTQ R11, R11
	JZ    zi_store

zi_loop1:
	ZI_STEP(0, 0)
	ADDQ $56, AX
	ADDQ $8, SI
	DECQ R11
	JNZ  zi_loop1

zi_store:
	Z_STORE_TILE
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------------------------
// AVX-512 14 x 32 over segments of K read in place (see gemmKernel.fss): gemmAVX512S's steps
// (A(i, k) at k*aks + 4i, B(k, j) at k*bks + 4j) over nseg segments of kc steps each, segment
// s starting at A = ap + segs[2s] and B = bp + segs[2s+1] (bytes). The accumulators stay in
// registers from the first segment to the last. DX walks segs, R8 counts segments.

// func gemmAVX512SS(kc int, ap, bp, c *float32, ldc, aks, bks int, segs *int, nseg int, load bool)
TEXT ·gemmAVX512SS(SB), NOSPLIT, $0-73
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), R8
	SHLQ    $2, R8
	MOVQ    DI, DX
	MOVBQZX load+72(FP), R9
	TESTQ   R9, R9
	JZ      zss_zero
	Z_LOAD_TILE
	JMP zss_go

zss_zero:
	Z_ZERO_TILE

zss_go:
	MOVQ  aks+40(FP), R12
	MOVQ  bks+48(FP), R13
	MOVQ  segs+56(FP), DX
	MOVQ  nseg+64(FP), R8
	TESTQ R8, R8
	JZ    zss_store

zss_seg:
	MOVQ (DX), AX
	ADDQ ap+8(FP), AX
	MOVQ 8(DX), BX
	ADDQ bp+16(FP), BX
	MOVQ kc+0(FP), CX
	MOVQ CX, R11
	ANDQ $3, R11
	SHRQ $2, CX
	JZ   zss_tail

zss_loop4:
	ZS_STEP
	ZS_STEP
	ZS_STEP
	ZS_STEP
	DECQ CX
	JNZ  zss_loop4

zss_tail:
	TESTQ R11, R11
	JZ    zss_next

zss_loop1:
	ZS_STEP
	DECQ R11
	JNZ  zss_loop1

zss_next:
	ADDQ $16, DX
	DECQ R8
	JNZ  zss_seg

zss_store:
	MOVQ         ldc+32(FP), R8
	SHLQ         $2, R8
	Z_STORE_TILE
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------------------------
// AVX2 6 x 16 over operands read in place, the twins of gemmAVX512I and gemmAVX512SS (see
// gemmKernel.fi and .fss): gemmAVX2's arithmetic, only the addresses of A and B differ.

// YI_STEP is one step with B(k, j) at BX + boff[k] (SI walks boff, R13 holds the offset).
#define YI_STEP(ao, so) \
	MOVQ    so(SI), R13; \
	VMOVUPS (BX)(R13*1), Y12; \
	VMOVUPS 32(BX)(R13*1), Y13; \
	Y_ROWS(ao)

// func gemmAVX2I(kc int, ap, bp, c *float32, ldc int, boff *int, load bool)
TEXT ·gemmAVX2I(SB), NOSPLIT, $0-49
	MOVQ    kc+0(FP), CX
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), R8
	SHLQ    $2, R8
	MOVQ    DI, DX
	MOVBQZX load+48(FP), R9
	TESTQ   R9, R9
	JZ      yi_zero
	Y_LOAD_TILE
	JMP     yi_pref

yi_zero:
	Y_ZERO_TILE

yi_pref:
	Y_PREF_TILE
	MOVQ ap+8(FP), AX
	MOVQ bp+16(FP), BX
	MOVQ boff+40(FP), SI
	MOVQ CX, R11
	ANDQ $3, R11
	SHRQ $2, CX
	JZ   yi_tail

yi_loop4:
	YI_STEP(0, 0)
	YI_STEP(24, 8)
	YI_STEP(48, 16)
	YI_STEP(72, 24)
	ADDQ $96, AX
	ADDQ $32, SI
	DECQ CX
	JNZ  yi_loop4

yi_tail:
	TESTQ R11, R11
	JZ    yi_store

yi_loop1:
	YI_STEP(0, 0)
	ADDQ $24, AX
	ADDQ $8, SI
	DECQ R11
	JNZ  yi_loop1

yi_store:
	Y_STORE_TILE
	VZEROUPPER
	RET

// YS_STEP is one step with A(i, k) at AX + 4i and B(k, j) at BX + 4j, then AX advances by aks
// (R12) and BX by bks (R13).
#define YS_STEP \
	VMOVUPS (BX), Y12; \
	VMOVUPS 32(BX), Y13; \
	Y_ROWS(0); \
	ADDQ    R12, AX; \
	ADDQ    R13, BX

// func gemmAVX2SS(kc int, ap, bp, c *float32, ldc, aks, bks int, segs *int, nseg int, load bool)
TEXT ·gemmAVX2SS(SB), NOSPLIT, $0-73
	MOVQ    c+24(FP), DI
	MOVQ    ldc+32(FP), R8
	SHLQ    $2, R8
	MOVQ    DI, DX
	MOVBQZX load+72(FP), R9
	TESTQ   R9, R9
	JZ      yss_zero
	Y_LOAD_TILE
	JMP     yss_go

yss_zero:
	Y_ZERO_TILE

yss_go:
	MOVQ  aks+40(FP), R12
	MOVQ  bks+48(FP), R13
	MOVQ  segs+56(FP), DX
	MOVQ  nseg+64(FP), R8
	TESTQ R8, R8
	JZ    yss_store

yss_seg:
	MOVQ (DX), AX
	ADDQ ap+8(FP), AX
	MOVQ 8(DX), BX
	ADDQ bp+16(FP), BX
	MOVQ kc+0(FP), CX
	MOVQ CX, R11
	ANDQ $3, R11
	SHRQ $2, CX
	JZ   yss_tail

yss_loop4:
	YS_STEP
	YS_STEP
	YS_STEP
	YS_STEP
	DECQ CX
	JNZ  yss_loop4

yss_tail:
	TESTQ R11, R11
	JZ    yss_next

yss_loop1:
	YS_STEP
	DECQ R11
	JNZ  yss_loop1

yss_next:
	ADDQ $16, DX
	DECQ R8
	JNZ  yss_seg

yss_store:
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	Y_STORE_TILE
	VZEROUPPER
	RET
