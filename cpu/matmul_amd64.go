//go:build amd64 && !noasm

package cpu

import "github.com/klauspost/cpuid/v2"

// The SGEMM micro-kernels of matmul_amd64.s (see gemmKernel). Both keep the whole tile in
// registers and do one VFMADD231PS per register and step, so each lane is exactly one Fmaf per
// k in ascending order:
//   - gemmAVX512: 14 x 32 (28 zmm accumulators, 2 zmm of B, A broadcast per row);
//   - gemmAVX2: 6 x 16 (12 ymm accumulators, 2 ymm of B, A broadcast per row).

//go:noescape
func gemmAVX512(kc int, ap, bp, c *float32, ldc int, load bool)

// gemmAVX512S and gemmAVX512R are gemmAVX512 over operands read in place (gemmKernel.fs, .fr).
//
//go:noescape
func gemmAVX512S(kc int, ap, bp, c *float32, ldc, aks, bks int, load bool)

//go:noescape
func gemmAVX512R(kc int, ap, bp, c *float32, ldc, lda, bks int, load bool)

// gemmAVX512I is gemmAVX512 with B read through a table of step offsets (gemmKernel.fi).
//
//go:noescape
func gemmAVX512I(kc int, ap, bp, c *float32, ldc int, boff *int, load bool)

// gemmAVX512SS is gemmAVX512S over segments of K (gemmKernel.fss).
//
//go:noescape
func gemmAVX512SS(kc int, ap, bp, c *float32, ldc, aks, bks int, segs *int, nseg int, load bool)

//go:noescape
func gemmAVX2(kc int, ap, bp, c *float32, ldc int, load bool)

// gemmAVX2I and gemmAVX2SS are gemmAVX2 with B read through a table of step offsets
// (gemmKernel.fi) and over segments of K read in place (gemmKernel.fss).
//
//go:noescape
func gemmAVX2I(kc int, ap, bp, c *float32, ldc int, boff *int, load bool)

//go:noescape
func gemmAVX2SS(kc int, ap, bp, c *float32, ldc, aks, bks int, segs *int, nseg int, load bool)

func init() {
	if cpuid.CPU.Supports(cpuid.AVX512F) {
		gemmKernels = append(gemmKernels, &gemmKernel{name: "avx512", mr: 14, nr: 32, lanes: 16, fn: gemmAVX512,
			fs: gemmAVX512S, fr: gemmAVX512R, fi: gemmAVX512I, fss: gemmAVX512SS})
	}
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3) {
		gemmKernels = append(gemmKernels, &gemmKernel{name: "avx2", mr: 6, nr: 16, lanes: 8, fn: gemmAVX2,
			fi: gemmAVX2I, fss: gemmAVX2SS})
	}
	if len(gemmKernels) > 0 {
		gemmActive = gemmKernels[0]
	}
}
