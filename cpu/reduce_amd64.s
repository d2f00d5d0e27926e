//go:build amd64 && !noasm

#include "textflag.h"

// Whole chunks of SumChunks (reduce.go) in the order its doc comment states: accumulator t adds
// x[j*1024 + 4t + l] for j = 0..7, l = 0..3 in turn, then the halving tree. Four vectors of
// consecutive elements hold 4 elements for each of 8 (8 lanes) or 16 (16 lanes) accumulators;
// a 4x4 transpose inside each 128-bit lane (unpack, then shuffle) turns them into V0..V3, where V_l
// holds element l of each of those accumulators, and acc = acc + V0, + V1, + V2, + V3 in turn.
// The in-lane transpose leaves the accumulators of a vector in a fixed permuted order (position
// 4j+k holds accumulator 4k+j of its 16 with 16 lanes, 2k+j of its 8 with 8 lanes), the same in
// every vector, so the tree levels that add whole vectors need nothing more; the last vector is
// put back in natural order (VPERMPS) before the levels inside it. NaN payloads: where two NaNs
// meet, x86 returns the first source operand's, so the operands are in the order the Go compiler
// gives the Go loop on amd64 (x[j*1024 + 4t] + p[t] for a row's first addition, the partial
// first in the other three and in the tree); the contract compares NaNs by class only (a GPU
// returns one canonical NaN).
//
// Each row of 4 KiB starts with a prefetch of one line 64 KiB (16 rows) ahead: the hardware
// prefetchers stop at 4 KiB pages, and this one line starts a page early (its TLB walk, costly
// under a hypervisor's nested paging, and a first fetch). Measured on a 2-vCPU Zen 4 VM (2^24
// floats, variants interleaved, medians of 250, one thread and two): a line 8 KiB ahead took
// 5-10% less time than no prefetch, 16 KiB 17-21%, 64 KiB 19-27% (128 and 256 KiB alike); 2
// or 4 lines a row, or a line every 256 bytes, did worse. A prefetch past the end of x is
// harmless (it never faults).

// In-lane positions back to natural order: natural t reads position idx[t].
DATA sumPerm16<>+0(SB)/4, $0
DATA sumPerm16<>+4(SB)/4, $4
DATA sumPerm16<>+8(SB)/4, $8
DATA sumPerm16<>+12(SB)/4, $12
DATA sumPerm16<>+16(SB)/4, $1
DATA sumPerm16<>+20(SB)/4, $5
DATA sumPerm16<>+24(SB)/4, $9
DATA sumPerm16<>+28(SB)/4, $13
DATA sumPerm16<>+32(SB)/4, $2
DATA sumPerm16<>+36(SB)/4, $6
DATA sumPerm16<>+40(SB)/4, $10
DATA sumPerm16<>+44(SB)/4, $14
DATA sumPerm16<>+48(SB)/4, $3
DATA sumPerm16<>+52(SB)/4, $7
DATA sumPerm16<>+56(SB)/4, $11
DATA sumPerm16<>+60(SB)/4, $15
GLOBL sumPerm16<>(SB), RODATA|NOPTR, $64

DATA sumPerm8<>+0(SB)/4, $0
DATA sumPerm8<>+4(SB)/4, $4
DATA sumPerm8<>+8(SB)/4, $1
DATA sumPerm8<>+12(SB)/4, $5
DATA sumPerm8<>+16(SB)/4, $2
DATA sumPerm8<>+20(SB)/4, $6
DATA sumPerm8<>+24(SB)/4, $3
DATA sumPerm8<>+28(SB)/4, $7
GLOBL sumPerm8<>(SB), RODATA|NOPTR, $32

// The last levels of the tree on the natural-order X0 (p[t] += p[t+s], s = 4, 2, 1), then
// out = p[0] / divisor, stored at (DI).
#define SUM_TAIL4 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1; \
	VADDSS       X1, X0, X0; \
	VDIVSS       divisor+24(FP), X0, X0; \
	VMOVSS       X0, (DI)

// ---------------------------------------------------------------------------------------------
// AVX-512: the 256 accumulators in Z0..Z15 (Z(g) holds accumulators 16g..16g+15), a row of 1024
// elements at a time; Z16..Z27 scratch, Z28 = -0.0, Z29 the permutation.

#define Z_GROUP(off, acc) \
	VMOVUPS   off(SI), Z16; \
	VMOVUPS   off+64(SI), Z17; \
	VMOVUPS   off+128(SI), Z18; \
	VMOVUPS   off+192(SI), Z19; \
	VUNPCKLPS Z17, Z16, Z20; \
	VUNPCKHPS Z17, Z16, Z21; \
	VUNPCKLPS Z19, Z18, Z22; \
	VUNPCKHPS Z19, Z18, Z23; \
	VSHUFPS   $0x44, Z22, Z20, Z24; \
	VSHUFPS   $0xee, Z22, Z20, Z25; \
	VSHUFPS   $0x44, Z23, Z21, Z26; \
	VSHUFPS   $0xee, Z23, Z21, Z27; \
	VADDPS    acc, Z24, acc; \
	VADDPS    Z25, acc, acc; \
	VADDPS    Z26, acc, acc; \
	VADDPS    Z27, acc, acc

// func sumChunksAVX512(out, x *float32, chunks int, divisor float32)
// out[c] = SumChunks of the full chunk x[c*8192 : (c+1)*8192] for c < chunks.
TEXT ·sumChunksAVX512(SB), NOSPLIT, $0-28
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         chunks+16(FP), CX
	MOVL         $0x80000000, AX
	VPBROADCASTD AX, Z28
	VMOVUPS      sumPerm16<>(SB), Z29

z_chunk:
	TESTQ    CX, CX
	JZ       z_done
	VMOVAPS  Z28, Z0
	VMOVAPS  Z28, Z1
	VMOVAPS  Z28, Z2
	VMOVAPS  Z28, Z3
	VMOVAPS  Z28, Z4
	VMOVAPS  Z28, Z5
	VMOVAPS  Z28, Z6
	VMOVAPS  Z28, Z7
	VMOVAPS  Z28, Z8
	VMOVAPS  Z28, Z9
	VMOVAPS  Z28, Z10
	VMOVAPS  Z28, Z11
	VMOVAPS  Z28, Z12
	VMOVAPS  Z28, Z13
	VMOVAPS  Z28, Z14
	VMOVAPS  Z28, Z15
	MOVQ     $8, DX

z_row:
	PREFETCHT0 65536(SI)
	Z_GROUP(0, Z0)
	Z_GROUP(256, Z1)
	Z_GROUP(512, Z2)
	Z_GROUP(768, Z3)
	Z_GROUP(1024, Z4)
	Z_GROUP(1280, Z5)
	Z_GROUP(1536, Z6)
	Z_GROUP(1792, Z7)
	Z_GROUP(2048, Z8)
	Z_GROUP(2304, Z9)
	Z_GROUP(2560, Z10)
	Z_GROUP(2816, Z11)
	Z_GROUP(3072, Z12)
	Z_GROUP(3328, Z13)
	Z_GROUP(3584, Z14)
	Z_GROUP(3840, Z15)
	ADDQ     $4096, SI
	DECQ     DX
	JNZ      z_row

	// The tree: s = 128, 64, 32, 16 add whole vectors.
	VADDPS        Z8, Z0, Z0
	VADDPS        Z9, Z1, Z1
	VADDPS        Z10, Z2, Z2
	VADDPS        Z11, Z3, Z3
	VADDPS        Z12, Z4, Z4
	VADDPS        Z13, Z5, Z5
	VADDPS        Z14, Z6, Z6
	VADDPS        Z15, Z7, Z7
	VADDPS        Z4, Z0, Z0
	VADDPS        Z5, Z1, Z1
	VADDPS        Z6, Z2, Z2
	VADDPS        Z7, Z3, Z3
	VADDPS        Z2, Z0, Z0
	VADDPS        Z3, Z1, Z1
	VADDPS        Z1, Z0, Z0
	VPERMPS       Z0, Z29, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	SUM_TAIL4
	ADDQ          $4, DI
	DECQ          CX
	JMP           z_chunk

z_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------------------------
// AVX2: 16 registers cannot hold the 256 accumulators, so they live in p (L1 cache), row-major
// like AVX-512: each group of 32 elements loads its 8 accumulators as the operand of the first
// addition and stores them after the fourth. Y8..Y13 scratch, Y14 the permutation, Y15 = -0.0.
// AX: the element pointer (it runs through the chunk), BX = p, R8: the group's accumulators,
// DX: rows left, R9: groups of 4 left in the row.

#define Y_GROUP(off, poff) \
	VMOVUPS   off(AX), Y8; \
	VMOVUPS   off+32(AX), Y9; \
	VMOVUPS   off+64(AX), Y10; \
	VMOVUPS   off+96(AX), Y11; \
	VUNPCKLPS Y9, Y8, Y12; \
	VUNPCKHPS Y9, Y8, Y13; \
	VUNPCKLPS Y11, Y10, Y8; \
	VUNPCKHPS Y11, Y10, Y9; \
	VSHUFPS   $0x44, Y8, Y12, Y10; \
	VSHUFPS   $0xee, Y8, Y12, Y11; \
	VSHUFPS   $0x44, Y9, Y13, Y12; \
	VSHUFPS   $0xee, Y9, Y13, Y13; \
	VADDPS    poff(R8), Y10, Y10; \
	VADDPS    Y11, Y10, Y10; \
	VADDPS    Y12, Y10, Y10; \
	VADDPS    Y13, Y10, Y10; \
	VMOVUPS   Y10, poff(R8)

// Y_HALF128 does p[t] += p[t+128] for the 8 accumulators at byte offset off of p.
#define Y_HALF128(off) \
	VMOVUPS off(BX), Y0; \
	VADDPS  off+512(BX), Y0, Y0; \
	VMOVUPS Y0, off(BX)

// func sumChunksAVX2(out, x *float32, chunks int, divisor float32, p *[256]float32)
// As sumChunksAVX512, with p as the accumulators.
TEXT ·sumChunksAVX2(SB), NOSPLIT, $0-40
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), AX
	MOVQ         chunks+16(FP), CX
	MOVQ         p+32(FP), BX
	MOVL         $0x80000000, DX
	MOVQ         DX, X15
	VPBROADCASTD X15, Y15
	VMOVUPS      sumPerm8<>(SB), Y14

y_chunk:
	TESTQ   CX, CX
	JZ      y_done
	MOVQ    BX, R8
	MOVQ    $8, DX

y_init:
	VMOVUPS Y15, 0(R8)
	VMOVUPS Y15, 32(R8)
	VMOVUPS Y15, 64(R8)
	VMOVUPS Y15, 96(R8)
	ADDQ    $128, R8
	DECQ    DX
	JNZ     y_init
	MOVQ    $8, DX

y_row:
	PREFETCHT0 65536(AX)
	MOVQ    BX, R8
	MOVQ    $8, R9

y_groups:
	Y_GROUP(0, 0)
	Y_GROUP(128, 32)
	Y_GROUP(256, 64)
	Y_GROUP(384, 96)
	ADDQ    $512, AX
	ADDQ    $128, R8
	DECQ    R9
	JNZ     y_groups
	DECQ    DX
	JNZ     y_row

	// The tree: s = 128 in p, then s = 64 into Y0..Y7, s = 32, 16, 8 add whole vectors.
	Y_HALF128(0)
	Y_HALF128(32)
	Y_HALF128(64)
	Y_HALF128(96)
	Y_HALF128(128)
	Y_HALF128(160)
	Y_HALF128(192)
	Y_HALF128(224)
	Y_HALF128(256)
	Y_HALF128(288)
	Y_HALF128(320)
	Y_HALF128(352)
	Y_HALF128(384)
	Y_HALF128(416)
	Y_HALF128(448)
	Y_HALF128(480)
	VMOVUPS 0(BX), Y0
	VMOVUPS 32(BX), Y1
	VMOVUPS 64(BX), Y2
	VMOVUPS 96(BX), Y3
	VMOVUPS 128(BX), Y4
	VMOVUPS 160(BX), Y5
	VMOVUPS 192(BX), Y6
	VMOVUPS 224(BX), Y7
	VADDPS  256(BX), Y0, Y0
	VADDPS  288(BX), Y1, Y1
	VADDPS  320(BX), Y2, Y2
	VADDPS  352(BX), Y3, Y3
	VADDPS  384(BX), Y4, Y4
	VADDPS  416(BX), Y5, Y5
	VADDPS  448(BX), Y6, Y6
	VADDPS  480(BX), Y7, Y7
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	VADDPS  Y1, Y0, Y0
	VPERMPS Y0, Y14, Y0
	SUM_TAIL4
	ADDQ    $4, DI
	DECQ    CX
	JMP     y_chunk

y_done:
	VZEROUPPER
	RET
