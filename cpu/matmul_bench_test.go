package cpu

import (
	"fmt"
	"testing"
)

// BenchmarkBmm reports GFLOP/s (2*batch*m*n*p per call) of the default kernel at square sizes
// and one attention-like batched shape. To compare with OpenBLAS, time numpy's float32 matmul
// (Debian's python3-numpy with libopenblas0-pthread, OPENBLAS_NUM_THREADS=GOMAXPROCS) on the same
// machine in the same sitting, interleaved: shared machines are noisy.
func BenchmarkBmm(b *testing.B) {
	kernels := bmmKernelNames()[1:] // the assembly kernels, best (the default) first
	if len(kernels) == 0 {
		kernels = []string{"go"}
	}
	for _, name := range kernels {
		for _, s := range [][4]int{{1, 256, 256, 256}, {1, 1024, 1024, 1024}, {1, 2048, 2048, 2048}, {64, 512, 64, 512}} {
			batch, m, n, p := s[0], s[1], s[2], s[3]
			b.Run(fmt.Sprintf("%s/%dx%dx%dx%d", name, batch, m, n, p), func(b *testing.B) {
				restore, _ := setGemmKernel(name)
				defer restore()
				x, y := mmInput(batch*m*n, 1), mmInput(batch*n*p, 2)
				c := make([]float32, batch*m*p)
				b.SetBytes(int64(4 * batch * (m*n + n*p + m*p)))
				for b.Loop() {
					Bmm(c, x, y, batch, m, n, p, false, false)
				}
				b.ReportMetric(2*float64(batch*m*n*p)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkBmmInPlace times the products of an FNO-1D training step (examples/fno: batch*grid
// = 65536 rows, width 64, 16 modes, grid 1024) with whole panels read in place and with every
// panel packed (the same bits).
func BenchmarkBmmInPlace(b *testing.B) {
	if gemmActive == nil || gemmActive.fs == nil {
		b.Skip("the default kernel does not read operands in place")
	}
	type shape struct {
		name           string
		batch, m, n, p int
		transA, transB bool
	}
	for _, s := range []shape{
		{"linear", 1, 65536, 64, 64, false, true},
		{"linear-dx", 1, 65536, 64, 64, false, false},
		{"linear-dw", 1, 64, 65536, 64, true, false},
		{"proj1", 1, 65536, 64, 128, false, true},
		{"proj1-dw", 1, 128, 65536, 64, true, false},
		{"proj2", 1, 65536, 128, 1, false, true},
		{"proj2-dw", 1, 1, 65536, 128, true, false},
		{"rfft", 1, 32, 1024, 4096, false, false},
		{"irfft", 1, 1024, 32, 4096, false, false},
		{"rfft-t", 1, 32, 1024, 4096, true, false},
		{"irfft-t", 1, 1024, 32, 4096, true, false},
		{"mix", 16, 64, 64, 64, false, false},
		{"mix-dx", 16, 64, 64, 64, false, true},
		{"mix-dw", 16, 64, 64, 64, true, false},
		{"square", 1, 1024, 1024, 1024, false, false},
	} {
		x, y := mmInput(s.batch*s.m*s.n, 1), mmInput(s.batch*s.n*s.p, 2)
		c := make([]float32, s.batch*s.m*s.p)
		for _, packed := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/packed=%v", s.name, packed), func(b *testing.B) {
				gemmInPlaceOff = packed
				defer func() { gemmInPlaceOff = false }()
				for b.Loop() {
					Bmm(c, x, y, s.batch, s.m, s.n, s.p, s.transA, s.transB)
				}
			})
		}
	}
}
