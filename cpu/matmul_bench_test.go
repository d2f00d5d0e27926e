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
