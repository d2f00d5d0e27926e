//go:build amd64 && !noasm

package cpu

import "github.com/klauspost/cpuid/v2"

// The amd64 assembly kernels of simd_amd64.s compute exactly what the pure-Go loops compute
// (one correctly rounded IEEE operation per element, VFMADD rounding once as Fmaf does); they
// are picked at run time by cpuid, and -tags noasm leaves them out.
var (
	hasAVX = cpuid.CPU.Supports(cpuid.AVX)
	hasFMA = cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3)
)

//go:noescape
func addAVX(dst, a, b []float32)

//go:noescape
func subAVX(dst, a, b []float32)

//go:noescape
func mulAVX(dst, a, b []float32)

//go:noescape
func scaleAVX(dst, x []float32, c float32)

//go:noescape
func reluAVX(dst, x []float32)

//go:noescape
func sqrtAVX(dst, x []float32)

//go:noescape
func reluBwdAVX(dx, x, g []float32)

//go:noescape
func axpyFMA(dst, a, b []float32, c float32)

// binaryFast runs dst = a op b in assembly when the CPU allows and reports whether it did.
func binaryFast(op byte, dst, a, b []float32) bool {
	if !hasAVX {
		return false
	}
	a, b = a[:len(dst)], b[:len(dst)]
	switch op {
	case '+':
		addAVX(dst, a, b)
	case '-':
		subAVX(dst, a, b)
	case '*':
		mulAVX(dst, a, b)
	default:
		return false
	}
	return true
}

func scaleFast(dst, x []float32, c float32) bool {
	if hasAVX {
		scaleAVX(dst, x[:len(dst)], c)
	}
	return hasAVX
}

func reluFast(dst, x []float32) bool {
	if hasAVX {
		reluAVX(dst, x[:len(dst)])
	}
	return hasAVX
}

func axpyFast(dst, a, b []float32, c float32) bool {
	if hasFMA {
		axpyFMA(dst, a[:len(dst)], b[:len(dst)], c)
	}
	return hasFMA
}

func sqrtFast(dst, x []float32) bool {
	if hasAVX {
		sqrtAVX(dst, x[:len(dst)])
	}
	return hasAVX
}

func reluBwdFast(dx, x, g []float32) bool {
	if hasAVX {
		reluBwdAVX(dx, x[:len(dx)], g[:len(dx)])
	}
	return hasAVX
}
