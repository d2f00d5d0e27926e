package cpu

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkVecRatio measures the vector kernels at 2^24 elements split over GOMAXPROCS
// goroutines, as BenchmarkVec does, but against a copy of the same bytes timed right before
// each kernel call: on a shared, noisy machine the pairs see the same conditions. It reports
// the median over the b.N pairs of (kernel GB/s) / (copy GB/s), bytes = (inputs + outputs)*4n
// for the kernel and 8n for the copy. Run it with -benchtime Nx, e.g.
//
//	go test ./cpu -run XXX -bench 'VecRatio/(GeluFwd|SoftplusFwd)/avx512' -benchtime 20x
func BenchmarkVecRatio(b *testing.B) {
	const n = 1 << 24
	in, pos := benchOperands(n)
	var o [2][]float32
	o[0], o[1] = make([]float32, n), make([]float32, n)
	copyOnce := func() time.Duration {
		start := time.Now()
		Parallel(n, 1<<15, func(lo, hi int) { copy(o[0][lo:hi], in[0][lo:hi]) })
		return time.Since(start)
	}
	vecBenches(b, in, pos, func(b *testing.B, c vecCase, in [3][]float32) {
		var ratios []float64
		for i := 0; i < b.N; i++ {
			tc := copyOnce()
			start := time.Now()
			runParallel(c, o, in)
			tk := time.Since(start)
			ratios = append(ratios, float64(c.ins+c.outs)/2*tc.Seconds()/tk.Seconds())
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "x_memcpy")
		b.ReportMetric(0, "ns/op")
	})
}
