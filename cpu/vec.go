package cpu

//go:generate go run ./internal/vecgen

// vecKernel names one elementwise kernel of cpu/internal/vecgen (the assembly of vec_amd64.s); the
// names are in vec_kernels.go. vecRun(k, ...) runs it over the longest prefix of whole vectors
// that the CPU allows and returns that prefix's length; the caller's scalar loop does the rest,
// so a kernel's result never depends on which path computed an element.
type vecKernel int
