package ops

import (
	"os"
	"strconv"
	"testing"
)

// BenchmarkConvND: issue 26's CPU problem, conv2d C64 56x56 K64 3x3 padding 1: forward, input
// gradient and weight gradient. The batch is TORCHLEAN_CONV_BATCH (default 8 rather than the
// issue's 64, for small shared machines; internal/bench/cpu-torch-conv.sh compares with PyTorch).
func BenchmarkConvND(b *testing.B) {
	batch := 8
	if v, err := strconv.Atoi(os.Getenv("TORCHLEAN_CONV_BATCH")); err == nil && v > 0 {
		batch = v
	}
	const c, hw, k = 64, 56, 64
	d := CPU()
	must := func(x *Buffer, err error) *Buffer {
		if err != nil {
			b.Fatal(err)
		}
		return x
	}
	x := must(RandNormal(d, batch*c*hw*hw, 0, 1, 1))
	w := must(RandNormal(d, k*c*9, 0, 1, 2))
	dy := must(RandNormal(d, batch*k*hw*hw, 0, 1, 3))
	defer ReleaseThen(nil, x, w, dy)
	dims := ConvDims{Batch: batch, InChannels: c, OutChannels: k, Input: []int{hw, hw}, Kernel: []int{3, 3}}
	p := ConvParams{Padding: []int{1}}
	flops := float64(2 * batch * k * c * 9 * hw * hw)
	for _, op := range []struct {
		name string
		f    func() (*Buffer, error)
	}{
		{"fwd", func() (*Buffer, error) { return ConvND(x, w, nil, dims, p) }},
		{"bwd_input", func() (*Buffer, error) { return ConvNDBackwardInput(dy, w, dims, p) }},
		{"bwd_weight", func() (*Buffer, error) { return ConvNDBackwardWeight(x, dy, dims, p) }},
	} {
		b.Run(op.name, func(b *testing.B) {
			for b.Loop() {
				must(op.f()).Release()
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
