// optim.cu: fused optimizer steps. One launch updates one parameter tensor and its optimizer
// state in place, element by element. The arithmetic of each kernel is stated, operation by
// operation, in the doc comment of its CPU twin (cpu/optim.go); both sides round every operation
// separately (--fmad=false: no contraction) and take the square root from tl_sqrtf (__fsqrt_rn).
// The float32 scalars (learning rate, bias corrections, step size, decay factor) are read from
// device memory, not passed as parameters, so that a step captured into a CUDA graph reads the
// values of each replay: SGD's and RMSprop's are written by the host when they change; Adam's are
// computed on the device from the step counts and the float64 hyperparameters by adam_scalars
// (cpu.AdamScalars states how).
//
// Parameters: destinations (updated in place) first, then inputs, then sizes.
#include "common.cuh"
#include "f32math.cuh"

// Flag bits of sgd_momentum_step (cpu.SGDFirst, cpu.SGDNesterov).
#define TL_SGD_FIRST 1ULL
#define TL_SGD_NESTEROV 2ULL

// Flag bits of rmsprop_step (cpu.RMSpropCentered, cpu.RMSpropMomentum).
#define TL_RMSPROP_CENTERED 1ULL
#define TL_RMSPROP_MOMENTUM 2ULL

// sgd_step: d = g (+ wd*p when wd != 0); p = p - lr*d. sc: lr, wd.
extern "C" __global__ void sgd_step(float* param, const float* grad, const float* sc, u64 n) {
  float lr = sc[0], wd = sc[1];
  TL_FOR(i, n) {
    float p = param[i];
    float d = grad[i];
    if (wd != 0.0f) d = d + wd * p;
    param[i] = p - lr * d;
  }
}

// sgd_momentum_step: d = g (+ wd*p); b = first ? d : b*momentum + dampen*d (dampen is
// 1 - dampening); d = nesterov ? d + momentum*b : b; p = p - lr*d. sc: lr, wd, momentum, dampen.
extern "C" __global__ void sgd_momentum_step(float* param, float* buf, const float* grad,
                                             const float* sc, u64 n, u64 flags) {
  float lr = sc[0], wd = sc[1], momentum = sc[2], dampen = sc[3];
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
// p = p - step_size*(m / (sqrt(v)/bc2_sqrt + eps)). sc: the nine scalars of adam_scalars.
extern "C" __global__ void adam_step(float* param, float* m, float* v, const float* grad,
                                     const float* sc, u64 n) {
  float beta1 = sc[0], omb1 = sc[1], beta2 = sc[2], omb2 = sc[3], step_size = sc[4];
  float bc2_sqrt = sc[5], eps = sc[6], wd = sc[7], decay = sc[8];
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

// rmsprop_step: g (+ wd*p when wd != 0); sq = alpha*sq + (oma*g)*g; centered: ga = alpha*ga +
// oma*g, avg = sqrt(sq - ga*ga) + eps, else avg = sqrt(sq) + eps; momentum: b = momentum*b +
// g/avg, p = p - lr*b, else p = p - (lr*g)/avg. oma is 1 - alpha. ga and b are read and written
// only under their flags (an absent one may be any pointer). sc: lr, alpha, oma, eps, wd,
// momentum.
extern "C" __global__ void rmsprop_step(float* param, float* sq, float* ga, float* buf,
                                        const float* grad, const float* sc, u64 n, u64 flags) {
  float lr = sc[0], alpha = sc[1], oma = sc[2], eps = sc[3], wd = sc[4], momentum = sc[5];
  TL_FOR(i, n) {
    float p = param[i];
    float g = grad[i];
    if (wd != 0.0f) g = g + wd * p;
    float s = alpha * sq[i] + (oma * g) * g;
    sq[i] = s;
    float avg;
    if (flags & TL_RMSPROP_CENTERED) {
      float a = alpha * ga[i] + oma * g;
      ga[i] = a;
      avg = tl_sqrtf(s - a * a) + eps;
    } else {
      avg = tl_sqrtf(s) + eps;
    }
    if (flags & TL_RMSPROP_MOMENTUM) {
      float b = momentum * buf[i] + g / avg;
      buf[i] = b;
      param[i] = p - lr * b;
    } else {
      param[i] = p - (lr * g) / avg;
    }
  }
}

// tl_powi returns b^t by binary exponentiation (float64 products only; cpu.AdamScalars' powInt).
__device__ __forceinline__ double tl_powi(double b, u64 t) {
  double r = 1.0;
  for (; t > 0; t >>= 1) {
    if (t & 1) r *= b;
    b *= b;
  }
  return r;
}

// adam_scalars: for each tensor t = list[j], j < k: steps[t] += 1, then the nine float32 scalars
// of adam_step for that step, from the float64 hyperparameters hyper = (lr, beta1, beta2, eps,
// weight decay, decoupled), into sc[9t .. 9t+8] (cpu.AdamScalars states the arithmetic).
extern "C" __global__ void adam_scalars(float* sc, u64* steps, const double* hyper, const u32* list,
                                        u64 k) {
  TL_FOR(j, k) {
    u64 t = list[j];
    u64 step = steps[t] + 1;
    steps[t] = step;
    double lr = hyper[0], beta1 = hyper[1], beta2 = hyper[2], eps = hyper[3], wd = hyper[4];
    float* s = sc + 9 * t;
    s[0] = (float)beta1;
    s[1] = (float)(1.0 - beta1);
    s[2] = (float)beta2;
    s[3] = (float)(1.0 - beta2);
    s[4] = (float)(lr / (1.0 - tl_powi(beta1, step)));
    s[5] = (float)sqrt(1.0 - tl_powi(beta2, step));
    s[6] = (float)eps;
    if (hyper[5] != 0.0) {  // AdamW: decoupled decay
      s[7] = 0.0f;
      s[8] = (float)(1.0 - lr * wd);
    } else {
      s[7] = (float)wd;
      s[8] = 1.0f;
    }
  }
}
