// Package cpu is the CPU twin of every kernel of torchlean-go: for each GPU kernel of package
// ptx, a Go function with the same name and argument order (destinations first, then inputs,
// then sizes, then scalars) that computes the same float32 results bit for bit. Package ops
// runs these functions when no GPU is usable; the mirror tests prove the equality.
//
// Each function's doc comment states its arithmetic as code: a fixed sequence of correctly
// rounded float32 operations, with Fmaf only where it says fma. The elementary functions (Expf,
// Logf, Tanhf, Sigmoidf, SinCos2Pif, ...) are written here as such sequences; ptx/f32math.cuh
// performs the same operations in the same order.
//
// Speed: on amd64 the elementwise kernels, the transposes, the matrix products, the
// convolutions (implicit GEMMs on the matrix products' micro-kernels) and 2x2 pooling run AVX2
// or AVX-512 assembly picked at run time by cpuid (cpu/internal/vecgen generates the elementwise
// kernels), with the bits of the pure-Go loops; -tags noasm, and every other GOARCH, run the
// pure-Go loops, which are exact but much slower (the transcendental kernels by about 20 to 60
// times). Large kernels split their work over GOMAXPROCS goroutines with Parallel; the split
// never changes a result (each reduction's order is a function of its length only).
package cpu
