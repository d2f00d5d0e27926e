// variants.cu: other tile configurations of ptx/matmul.cu for the tile sweep (run.sh sweep).
// Only the nn entries; names v<i>. run.sh compiles it to PTX with the flags of ptx/gen.sh (and
// whatever nvcc it finds: the device's differs from gen.sh's 11.8, so compare a variant with the
// shipped families in the same run only as a lead). Measured on an H100 while the shipped
// families were chosen (4096^3, TFLOP/s): v0 47.0, v1 46.9 (with an older loop structure; 43.8
// and 45.4 with the current one), v2 43.8, v3 45.0; matmul_* 46.9.
#define MM_NO_ENTRIES
#include "../../../ptx/matmul.cu"

// The table in sgemm.cu's main must list the same configurations (BM, BN, threads) in order.
//       name                BM   BN   BK  WM  WN  TM  TN  MINB
MM_ENTRY(v0, false, false, 128, 256, 8, 64, 64, 8, 16, 1)
MM_ENTRY(v1, false, false, 256, 128, 8, 64, 64, 16, 8, 1)
MM_ENTRY(v2, false, false, 128, 128, 8, 64, 64, 8, 16, 1)
MM_ENTRY(v3, false, false, 64, 128, 8, 32, 64, 8, 8, 2)
