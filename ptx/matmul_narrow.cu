// matmul_narrow.cu: the batched product of matmul.cu, C_t = op(A_t) · op(B_t) for t < batch, with
// the same parameters (C, A, B, batch, m, n, p), layouts, arithmetic and code (matmul.cu's
// templates, included without its entries), in a third tile configuration: 128 x 64 x 16 per
// block of 128 threads (warp tiles 32 x 64 as in matmul.cu's families, the four warps stacked;
// 8 x 8 outputs per thread, two blocks per multiprocessor). It is for products of at most 64
// columns past a multiple of 128 (p = 64: an attention head's width), which matmul.cu's 128-column
// tiles pad to twice their work. ptx.MatmulLaunch picks the family. Twin: cpu/matmul.go.
//
// A module of its own, so that adding it left matmul.ptx as generated (nvcc 11.8's output for
// that module is not byte-reproducible).
#define MM_NO_ENTRIES
#include "matmul.cu"

MM_FAMILY(matmul_n, 128, 64, 16, 32, 64, 8, 8, 2)
