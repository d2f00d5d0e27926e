package ptx

// Optim is the fused-optimizer family (optim.cu).
const Optim Module = "optim"

// Optimizer kernels: one launch updates one parameter tensor and its state in place, with its
// float32 scalars read from device memory (sc); adam_scalars computes Adam's on the device. The
// arithmetic is stated in the doc comments of the CPU twins (cpu.SGDStep, cpu.SGDMomentumStep,
// cpu.AdamStep, cpu.AdamScalars, cpu.RMSpropStep). Parameters, in order:
//
//	sgd_step          (param, grad, sc, n)              sc: lr, wd
//	sgd_momentum_step (param, buf, grad, sc, n, flags)  sc: lr, wd, momentum, dampen
//	adam_step         (param, m, v, grad, sc, n)        sc: the nine scalars of adam_scalars
//	adam_scalars      (sc, steps, hyper, list, k)       steps: u64 counts; hyper: six float64
//	rmsprop_step      (param, sq, ga, buf, grad, sc, n, flags)
//	                                                    sc: lr, alpha, 1 - alpha, eps, wd, momentum
//
// pointers, n, flags and k as u64. Any grid-stride launch gives the same bits.
var (
	SGDStep         = newKernel(Optim, "sgd_step")
	SGDMomentumStep = newKernel(Optim, "sgd_momentum_step")
	AdamStep        = newKernel(Optim, "adam_step")
	AdamScalars     = newKernel(Optim, "adam_scalars")
	RMSpropStep     = newKernel(Optim, "rmsprop_step")
)
