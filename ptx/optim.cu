// optim.cu: fused optimizer steps. One launch updates one parameter tensor and its optimizer
// state in place, element by element. The arithmetic of each kernel is stated, operation by
// operation, in the doc comment of its CPU twin (cpu/optim.go); both sides round every operation
// separately (--fmad=false: no contraction) and take the square root from tl_sqrtf (__fsqrt_rn).
// The per-step scalars (bias corrections, step size, decay factor) are computed by the host in
// float64 and rounded to float32 once (ops/optim.go).
//
// Parameters: destinations (updated in place) first, then inputs, then sizes, then float scalars.
#include "common.cuh"
#include "f32math.cuh"

// Flag bits of sgd_momentum_step (cpu.SGDFirst, cpu.SGDNesterov).
#define TL_SGD_FIRST 1ULL
#define TL_SGD_NESTEROV 2ULL

// sgd_step: d = g (+ wd*p when wd != 0); p = p - lr*d.
extern "C" __global__ void sgd_step(float* param, const float* grad, u64 n, float lr, float wd) {
  TL_FOR(i, n) {
    float p = param[i];
    float d = grad[i];
    if (wd != 0.0f) d = d + wd * p;
    param[i] = p - lr * d;
  }
}

// sgd_momentum_step: d = g (+ wd*p); b = first ? d : b*momentum + dampen*d (dampen is
// 1 - dampening); d = nesterov ? d + momentum*b : b; p = p - lr*d.
extern "C" __global__ void sgd_momentum_step(float* param, float* buf, const float* grad, u64 n,
                                             u64 flags, float lr, float wd, float momentum,
                                             float dampen) {
  TL_FOR(i, n) {
    float p = param[i];
    float d = grad[i];
    if (wd != 0.0f) d = d + wd * p;
    float b = (flags & TL_SGD_FIRST) ? d : buf[i] * momentum + dampen * d;
    buf[i] = b;
    d = (flags & TL_SGD_NESTEROV) ? d + momentum * b : b;
    param[i] = p - lr * d;
  }
}

// adam_step: g (+ wd*p when wd != 0, Adam's L2 term); p = p*decay (AdamW's decoupled decay,
// decay = 1 for Adam); m = beta1*m + omb1*g; v = beta2*v + (omb2*g)*g;
// p = p - step_size*(m / (sqrt(v)/bc2_sqrt + eps)).
extern "C" __global__ void adam_step(float* param, float* m, float* v, const float* grad, u64 n,
                                     float beta1, float omb1, float beta2, float omb2,
                                     float step_size, float bc2_sqrt, float eps, float wd,
                                     float decay) {
  TL_FOR(i, n) {
    float p = param[i];
    float g = grad[i];
    if (wd != 0.0f) g = g + wd * p;
    p = p * decay;
    float mi = beta1 * m[i] + omb1 * g;
    float vi = beta2 * v[i] + (omb2 * g) * g;
    float den = tl_sqrtf(vi) / bc2_sqrt + eps;
    param[i] = p - step_size * (mi / den);
    m[i] = mi;
    v[i] = vi;
  }
}
