// scan.cu: the selective scan (diagonal state-space model) family, forward and backward, with
// coefficients constant over time (A, B of length state) or time-varying (A, B shaped like X).
// Layout: X, the states out, dY, dX and the time-varying A, B, dA, dB are row-major (batch, seqLen,
// state); h0 and dH0 are (batch, state); the constant A, B, dA, dB are (state). One thread owns
// one (batch, state) channel c = b*state + j (grid-stride over batch*state) and walks time
// sequentially: the association of every result is the plain recurrence, a function of the
// values only, never of the launch or of batch*state. Consecutive threads own consecutive j, so
// each time step's loads and stores of a warp are contiguous. The CPU twins (cpu/scan.go) state
// the arithmetic; with --fmad=false each product and each sum below is one rounded operation.
#include "common.cuh"

// SCAN_LOADS is how many time steps' loads a forward thread issues ahead of its chain of steps
// (launch shape only: the arithmetic of every step is the same).
#define SCAN_LOADS 8

// selective_scan_diag_fwd: h[b,t,j] = A[j]*h[b,t-1,j] + B[j]*X[b,t,j], h[b,-1,j] = h0[b,j];
// out[b,t,j] = h[b,t,j].
extern "C" __global__ void selective_scan_diag_fwd(float* __restrict__ out, const float* __restrict__ A,
                                                   const float* __restrict__ B, const float* __restrict__ X,
                                                   const float* __restrict__ h0, u64 batch, u64 seqLen,
                                                   u64 state) {
  TL_FOR(c, batch * state) {
    const u64 b = c / state, j = c - b * state;
    const float a = A[j], bj = B[j];
    const float* x = X + b * seqLen * state + j;
    float* o = out + b * seqLen * state + j;
    float h = h0[c];
    u64 t = 0;
    // Blocks of SCAN_LOADS steps: the block's loads are issued before its chain of steps.
    for (; t + SCAN_LOADS <= seqLen; t += SCAN_LOADS) {
      float xs[SCAN_LOADS];
#pragma unroll
      for (int k = 0; k < SCAN_LOADS; k++) xs[k] = x[(t + k) * state];
#pragma unroll
      for (int k = 0; k < SCAN_LOADS; k++) {
        const float p = a * h;
        const float q = bj * xs[k];
        h = p + q;
        o[(t + k) * state] = h;
      }
    }
    for (; t < seqLen; t++) {
      const float p = a * h;
      const float q = bj * x[t * state];
      h = p + q;
      o[t * state] = h;
    }
  }
}

// selective_scan_diag_var_fwd: h[b,t,j] = A[b,t,j]*h[b,t-1,j] + B[b,t,j]*X[b,t,j].
extern "C" __global__ void selective_scan_diag_var_fwd(float* __restrict__ out, const float* __restrict__ A,
                                                       const float* __restrict__ B, const float* __restrict__ X,
                                                       const float* __restrict__ h0, u64 batch, u64 seqLen,
                                                       u64 state) {
  TL_FOR(c, batch * state) {
    const u64 b = c / state, j = c - b * state;
    const u64 base = b * seqLen * state + j;
    float h = h0[c];
    u64 t = 0;
    for (; t + SCAN_LOADS <= seqLen; t += SCAN_LOADS) {
      float as[SCAN_LOADS], qs[SCAN_LOADS];
#pragma unroll
      for (int k = 0; k < SCAN_LOADS; k++) {
        const u64 i = base + (t + k) * state;
        as[k] = A[i];
        qs[k] = B[i] * X[i];  // independent of the chain: computed ahead, the same rounded product
      }
#pragma unroll
      for (int k = 0; k < SCAN_LOADS; k++) {
        const float p = as[k] * h;
        h = p + qs[k];
        out[base + (t + k) * state] = h;
      }
    }
    for (; t < seqLen; t++) {
      const u64 i = base + t * state;
      const float p = A[i] * h;
      const float q = B[i] * X[i];
      h = p + q;
      out[i] = h;
    }
  }
}

// selective_scan_diag_bwd: per channel, t from seqLen-1 down to 0, g = 0, pa = pb = 0:
// total = dY[t] + g; pa = pa + total*hPrev; pb = pb + total*X[t]; dX[t] = total*B[j];
// g = total*A[j]; then dAp[c] = pa, dBp[c] = pb, dH0[c] = g. hPrev is out[t-1], h0 at t = 0.
extern "C" __global__ void selective_scan_diag_bwd(float* __restrict__ dAp, float* __restrict__ dBp,
                                                   float* __restrict__ dX, float* __restrict__ dH0,
                                                   const float* __restrict__ A, const float* __restrict__ B,
                                                   const float* __restrict__ X, const float* __restrict__ h0,
                                                   const float* __restrict__ out, const float* __restrict__ dY,
                                                   u64 batch, u64 seqLen, u64 state) {
  TL_FOR(c, batch * state) {
    const u64 b = c / state, j = c - b * state;
    const u64 base = b * seqLen * state + j;
    const float a = A[j], bj = B[j];
    float g = 0.0f, pa = 0.0f, pb = 0.0f;
#pragma unroll 4
    for (u64 t = seqLen; t-- > 0;) {
      const u64 i = base + t * state;
      const float hPrev = t > 0 ? out[i - state] : h0[c];
      const float total = dY[i] + g;
      const float ua = total * hPrev;
      pa = pa + ua;
      const float ub = total * X[i];
      pb = pb + ub;
      dX[i] = total * bj;
      g = total * a;
    }
    dAp[c] = pa;
    dBp[c] = pb;
    dH0[c] = g;
  }
}

// selective_scan_diag_var_bwd: per channel, t from seqLen-1 down to 0, g = 0:
// total = dY[t] + g; dA[t] = total*hPrev; dB[t] = total*X[t]; dX[t] = total*B[t]; g = total*A[t];
// then dH0[c] = g.
extern "C" __global__ void selective_scan_diag_var_bwd(float* __restrict__ dA, float* __restrict__ dB,
                                                       float* __restrict__ dX, float* __restrict__ dH0,
                                                       const float* __restrict__ A, const float* __restrict__ B,
                                                       const float* __restrict__ X, const float* __restrict__ h0,
                                                       const float* __restrict__ out,
                                                       const float* __restrict__ dY, u64 batch, u64 seqLen,
                                                       u64 state) {
  TL_FOR(c, batch * state) {
    const u64 b = c / state, j = c - b * state;
    const u64 base = b * seqLen * state + j;
    float g = 0.0f;
#pragma unroll 4
    for (u64 t = seqLen; t-- > 0;) {
      const u64 i = base + t * state;
      const float hPrev = t > 0 ? out[i - state] : h0[c];
      const float total = dY[i] + g;
      dA[i] = total * hPrev;
      dB[i] = total * X[i];
      dX[i] = total * B[i];
      g = total * A[i];
    }
    dH0[c] = g;
  }
}

// selective_scan_sum_batch: dA[j] = pa[0,j] + pa[1,j] + ... + pa[batch-1,j], added in ascending
// batch order starting from pa[0,j] (and dB from pb likewise); pa, pb are (batch, state).
extern "C" __global__ void selective_scan_sum_batch(float* __restrict__ dA, float* __restrict__ dB,
                                                    const float* __restrict__ pa, const float* __restrict__ pb,
                                                    u64 batch, u64 state) {
  if (batch == 0) return;
  TL_FOR(j, state) {
    float sa = pa[j], sb = pb[j];
    for (u64 b = 1; b < batch; b++) {
      sa = sa + pa[b * state + j];
      sb = sb + pb[b * state + j];
    }
    dA[j] = sa;
    dB[j] = sb;
  }
}
