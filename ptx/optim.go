package ptx

// Optim is the fused-optimizer family (optim.cu).
const Optim Module = "optim"

// Optimizer kernels: one launch updates one parameter tensor and its state in place; the
// arithmetic is stated in the doc comments of the CPU twins (cpu.SGDStep, cpu.SGDMomentumStep,
// cpu.AdamStep). Parameters, in order:
//
//	sgd_step          (param, grad, n, lr, wd)
//	sgd_momentum_step (param, buf, grad, n, flags, lr, wd, momentum, dampen)
//	adam_step         (param, m, v, grad, n, beta1, omb1, beta2, omb2, step_size, bc2_sqrt, eps, wd, decay)
//
// pointers and n, flags as u64, the rest f32. Any grid-stride launch gives the same bits.
var (
	SGDStep         = newKernel(Optim, "sgd_step")
	SGDMomentumStep = newKernel(Optim, "sgd_momentum_step")
	AdamStep        = newKernel(Optim, "adam_step")
)
