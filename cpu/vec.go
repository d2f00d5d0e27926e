package cpu

//go:generate go run vec_gen.go

// vecKernel names one elementwise kernel of vec_gen.go (the assembly of vec_amd64.s); the
// names are in vec_kernels.go. vecRun(k, ...) runs it over the longest prefix of whole vectors
// that the CPU allows and returns that prefix's length; the caller's scalar loop does the rest,
// so a kernel's result never depends on which path computed an element.
type vecKernel int

// vecFunc is the signature shared by the assembly kernels: n elements (a multiple of the lane
// count), outputs o0, o1 and inputs i0, i1, i2 (nil where unused), scalars s0, s1.
type vecFunc func(n int, o0, o1, i0, i1, i2 *float32, s0, s1 float32)
