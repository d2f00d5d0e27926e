// softmax_sm80.cu: the long-row softmax and log-softmax forward kernels for sm_80 and later
// (module softmax_sm80, PTX for compute_80). Same values as softmax_fwd_long and
// log_softmax_fwd_long (softmax.cu), bit for bit: the same thread layout, registers and
// long_row_finish (rowstat.cuh); only the way a row reaches the registers differs.
//
// The block walks the rows r = blockIdx.x, blockIdx.x + gridDim.x, ... (about one block per
// multiprocessor is the intended grid) and keeps its next row streaming from global into shared
// memory with cp.async, which holds no registers, while it computes the current one from
// registers, so that the multiprocessor's loads never wait for its arithmetic. Dynamic shared
// memory: one row, 4 * cols bytes rounded up to a multiple of 16. Twins: cpu/softmax.go.
#include "common.cuh"
#include "f32math.cuh"
#include "rowstat.cuh"

// long_row_copy starts the asynchronous copy of the cols floats at xr into stage (one commit
// group): 16-byte pieces when vec (xr 16-byte aligned and cols % 4 == 0), else 4-byte pieces.
__device__ __forceinline__ void long_row_copy(float* stage, const float* xr, u64 cols, bool vec) {
  const u32 base = (u32)__cvta_generic_to_shared(stage);
  if (vec) {
    for (u64 i = threadIdx.x; i < cols / 4; i += blockDim.x)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(base + (u32)(i * 16)),
                   "l"(xr + 4 * i));
  } else {
    for (u64 i = threadIdx.x; i < cols; i += blockDim.x)
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(base + (u32)(i * 4)),
                   "l"(xr + i));
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int KIND>
__device__ __forceinline__ void softmax_long_async(float* out, const float* x, u64 rows,
                                                   u64 cols) {
  extern __shared__ __align__(16) float stage[];
  __shared__ float mq[SM_LONG_GROUPS][SM_THREADS];
  __shared__ float sq[SM_LONG_GROUPS][SM_THREADS];
  const LongRow lr = long_row_layout(cols);
  const bool vec = ((u64)x & 15u) == 0 && cols % 4 == 0;
  u64 r = blockIdx.x;
  if (r < rows) long_row_copy(stage, x + r * cols, cols, vec);
  for (; r < rows; r += gridDim.x) {
    float v[SM_LONG];
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();  // row r is in stage
    long_row_load(v, lr, stage + lr.first);
    __syncthreads();  // every thread has its part: stage is free for the next row
    if (r + gridDim.x < rows) long_row_copy(stage, x + (r + gridDim.x) * cols, cols, vec);
    long_row_finish<KIND>(v, lr, mq, sq, out + r * cols + lr.first);
  }
}

// Launch: blockDim.x as softmax_fwd_long's, 4 * cols bytes (rounded up to 16) of dynamic shared
// memory, any grid.
extern "C" __global__ void __launch_bounds__(SM_THREADS * SM_LONG_GROUPS, 1)
    softmax_fwd_long_async(float* out, const float* x, u64 rows, u64 cols) {
  softmax_long_async<0>(out, x, rows, cols);
}

extern "C" __global__ void __launch_bounds__(SM_THREADS * SM_LONG_GROUPS, 1)
    log_softmax_fwd_long_async(float* out, const float* x, u64 rows, u64 cols) {
  softmax_long_async<1>(out, x, rows, cols);
}
