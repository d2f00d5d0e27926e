package ops

import (
	"fmt"
	"testing"
	"time"
)

// kernelBench is one row of BenchmarkKernels: a named shape whose PyTorch counterpart has the
// same name in internal/bench/torch_bench.py (KERNELS there), so the GPU check can print ratios.
// bytes is the traffic counted for GB/s (inputs read + outputs written, once each); products
// report TFLOP/s from flops instead.
type kernelBench struct {
	name  string
	ins   []int // input lengths (uniform random)
	bytes int
	flops int
	run   func(ins []*Buffer) (*Buffer, error)
}

// benchIndices returns k indices in [0, rows) (a fixed pseudo-random pattern).
func benchIndices(k, rows int) []int {
	idx := make([]int, k)
	for j := range idx {
		idx[j] = int(uint32(j)*2654435761) % rows
	}
	return idx
}

func kernelBenches() []kernelBench {
	const r, c = 16384, 4096
	var ks []kernelBench
	add := func(name string, ins []int, bytes int, run func(ins []*Buffer) (*Buffer, error)) {
		ks = append(ks, kernelBench{name: name, ins: ins, bytes: bytes, run: run})
	}
	// The products; nt: B read transposed (stored as (p, n) per batch), the attention-like Q·Kᵀ
	// that PyTorch computes as q @ k.transpose(-2, -1).
	for _, s := range []struct {
		batch, m, n, p int
		nt             bool
	}{{1, 1024, 1024, 1024, false}, {1, 2048, 2048, 2048, false}, {1, 4096, 4096, 4096, false}, {1, 256, 4096, 4096, false},
		{64, 512, 64, 512, false}, {64, 512, 64, 512, true}, {64, 512, 512, 64, false}} {
		batch, m, n, p, nt := s.batch, s.m, s.n, s.p, s.nt
		name := fmt.Sprintf("matmul_%dx%dx%d", m, n, p)
		if batch > 1 {
			name = fmt.Sprintf("bmm_%dx%dx%dx%d", batch, m, n, p)
		}
		if nt {
			name += "_nt"
		}
		ks = append(ks, kernelBench{name: name, ins: []int{batch * m * n, batch * n * p}, flops: 2 * batch * m * n * p,
			run: func(in []*Buffer) (*Buffer, error) { return BmmWithTranspose(in[0], in[1], batch, m, n, p, false, nt) }})
	}
	rc := []int{r * c}
	add("transpose2d_8192x8192", []int{8192 * 8192}, 8*8192*8192, func(in []*Buffer) (*Buffer, error) { return Transpose2d(in[0], 8192, 8192) })
	add("softmax_16384x4096", rc, 8*r*c, func(in []*Buffer) (*Buffer, error) { return Softmax(in[0], r, c) })
	add("softmax_4096x32768", []int{4096 * 32768}, 8*4096*32768, func(in []*Buffer) (*Buffer, error) { return Softmax(in[0], 4096, 32768) })
	add("log_softmax_16384x4096", rc, 8*r*c, func(in []*Buffer) (*Buffer, error) { return LogSoftmax(in[0], r, c) })
	add("log_softmax_4096x32768", []int{4096 * 32768}, 8*4096*32768, func(in []*Buffer) (*Buffer, error) { return LogSoftmax(in[0], 4096, 32768) })
	add("softmax_bwd_16384x4096", []int{r * c, r * c}, 12*r*c, func(in []*Buffer) (*Buffer, error) { return SoftmaxBwd(in[0], in[1], r, c) })
	add("layer_norm_fwd_16384x4096", []int{r * c, c, c}, 8*r*c, func(in []*Buffer) (*Buffer, error) {
		o, m, s, err := LayerNormFwd(in[0], in[1], in[2], r, c, LayerNormEps)
		if err != nil {
			return nil, err
		}
		ReleaseThen(nil, m, s)
		return o, nil
	})
	// dOut, x, mean, sd (sd > 0: uniform random inputs), gamma.
	add("layer_norm_bwd_16384x4096", []int{r * c, r * c, r, r, c}, 12*r*c, func(in []*Buffer) (*Buffer, error) {
		dx, dg, db, err := LayerNormBwd(in[0], in[1], in[2], in[3], in[4], r, c)
		if err != nil {
			return nil, err
		}
		ReleaseThen(nil, dg, db)
		return dx, nil
	})
	add("reduce_sum_by_row_16384x4096", rc, 4*r*c, func(in []*Buffer) (*Buffer, error) { return ReduceSumByRow(in[0], r, c) })
	add("reduce_max_by_row_16384x4096", rc, 4*r*c, func(in []*Buffer) (*Buffer, error) { return ReduceMaxByRow(in[0], r, c) })
	const sr, sc = 262144, 128 // short rows
	add("reduce_sum_by_row_262144x128", []int{sr * sc}, 4*sr*sc, func(in []*Buffer) (*Buffer, error) { return ReduceSumByRow(in[0], sr, sc) })
	add("reduce_max_by_row_262144x128", []int{sr * sc}, 4*sr*sc, func(in []*Buffer) (*Buffer, error) { return ReduceMaxByRow(in[0], sr, sc) })
	add("reduce_sum_by_column_16384x4096", rc, 4*r*c, func(in []*Buffer) (*Buffer, error) { return ReduceSumByColumn(in[0], r, c) })
	add("reduce_sum_axis_64x1024x1024@1", rc, 4*r*c, func(in []*Buffer) (*Buffer, error) {
		return ReduceSumAxis(in[0], []int{64, 1024, 1024}, 1)
	})
	add("broadcast_to_64x1x4096->64x256x4096", []int{64 * 4096}, 4*r*c, func(in []*Buffer) (*Buffer, error) {
		return BroadcastTo(in[0], []int{64, 1, 4096}, []int{64, 256, 4096}, []int{1, 2, 3})
	})
	add("reduce_from_broadcast_64x256x4096->64x1x4096", rc, 4*r*c, func(in []*Buffer) (*Buffer, error) {
		return ReduceFromBroadcastTo(in[0], []int{64, 1, 4096}, []int{64, 256, 4096}, []int{1, 2, 3})
	})
	add("reduce_from_broadcast_256x1x256->256x1024x256", rc, 4*r*c, func(in []*Buffer) (*Buffer, error) {
		return ReduceFromBroadcastTo(in[0], []int{256, 1, 256}, []int{256, 1024, 256}, []int{1, 2, 3})
	})
	add("swap_adjacent_64x512x64x32@1", rc, 8*r*c, func(in []*Buffer) (*Buffer, error) {
		return SwapAdjacentAtDepth(in[0], []int{64, 512, 64, 32}, 1)
	})
	// Gathers and scatters: with indices prepared once (as PyTorch's index tensor is), and with
	// host indices checked and uploaded (and, deterministic, sorted) in every call.
	const k, rows, cols = 1 << 20, 65536, 64
	idx := benchIndices(k, rows)
	var prepared *Indices
	prep := func(d *Device) *Indices {
		if prepared == nil || prepared.Device() != d {
			var err error
			if prepared, err = NewIndices(d, idx); err != nil {
				panic(err)
			}
		}
		return prepared
	}
	add("gather_rows_1Mx64_from_65536", []int{rows * cols}, 8*k*cols, func(in []*Buffer) (*Buffer, error) {
		return GatherRowsIdx(in[0], rows, cols, prep(in[0].Device()))
	})
	add("gather_rows_1Mx64_from_65536_host", []int{rows * cols}, 8*k*cols, func(in []*Buffer) (*Buffer, error) {
		return GatherRows(in[0], rows, cols, idx)
	})
	for _, det := range []bool{false, true} {
		name := "scatter_add_rows_1Mx64_to_65536"
		if det {
			name += "_deterministic"
		}
		bytes := 4*k*cols + 8*rows*cols
		scatter := func(in []*Buffer, host bool) (*Buffer, error) {
			defer SetDeterministic(Deterministic())
			SetDeterministic(det)
			if host {
				return ScatterAddRows(in[0], in[1], rows, cols, idx)
			}
			return ScatterAddRowsIdx(in[0], in[1], rows, cols, prep(in[0].Device()))
		}
		add(name, []int{rows * cols, k * cols}, bytes, func(in []*Buffer) (*Buffer, error) { return scatter(in, false) })
		add(name+"_host", []int{rows * cols, k * cols}, bytes, func(in []*Buffer) (*Buffer, error) { return scatter(in, true) })
	}
	return ks
}

// BenchmarkKernels times each kernel family at the shapes of the PyTorch baselines
// (BenchmarkKernels/<name>/<device>), reporting GB/s.
func BenchmarkKernels(b *testing.B) {
	for _, dn := range benchDevices(b) {
		for _, k := range kernelBenches() {
			b.Run(fmt.Sprintf("%s/%s", k.name, dn.d.Kind()), func(b *testing.B) {
				ins := make([]*Buffer, len(k.ins))
				for i, n := range k.ins {
					var err error
					if ins[i], err = RandUniform(dn.d, n, uint64(i+1)); err != nil {
						b.Fatal(err)
					}
				}
				defer ReleaseThen(nil, ins...)
				// One untimed run: a kernel's first launch includes its JIT compilation (up to
				// seconds with an empty cache), which would end the benchmark at b.N = 1.
				y, err := k.run(ins)
				if err != nil {
					b.Fatal(err)
				}
				y.Release()
				if err := dn.d.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					y, err := k.run(ins)
					if err != nil {
						b.Fatal(err)
					}
					y.Release()
				}
				if err := dn.d.Sync(); err != nil {
					b.Fatal(err)
				}
				if k.flops > 0 {
					b.ReportMetric(float64(k.flops)*float64(b.N)/time.Since(start).Seconds()/1e12, "TFLOP/s")
				} else {
					reportGBs(b, k.bytes, time.Since(start))
				}
			})
		}
	}
}
