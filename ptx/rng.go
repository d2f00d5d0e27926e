package ptx

// RNG is the counter-based random family (rng.cu). Every kernel takes (out, count, n, key,
// offset, scalars): element i depends only on the draw's key and i (cpu/rng.go), the key being
// key itself, or, when count points to a count in device memory, cpu.DrawKey(key, *count, offset).
const RNG Module = "rng"

// Random kernels.
var (
	RandUniform   = newKernel(RNG, "rand_uniform")
	BernoulliMask = newKernel(RNG, "bernoulli_mask")
	RandNormal    = newKernel(RNG, "rand_normal")
)
