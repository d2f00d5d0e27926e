// state.cu: counts held in device memory (the step state of a training loop: a session's random
// draws, an optimizer's steps), so that a step captured into a CUDA graph advances them at each
// replay. A count is a u64, two float32 slots of an ops buffer. Twins: cpu/state.go.
#include "common.cuh"

// counter_add: count[k] += inc (mod 2^64) for k < n.
extern "C" __global__ void counter_add(u64* count, u64 n, u64 inc) {
  TL_FOR(k, n) { count[k] += inc; }
}
