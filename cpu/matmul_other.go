//go:build !amd64 || noasm

package cpu

// No SGEMM assembly on this platform (or with -tags noasm): gemmKernels stays empty and Bmm runs
// bmmGo.
