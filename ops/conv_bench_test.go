package ops

import (
	"fmt"
	"math"
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

// convResNet18 are the convolutions of ResNet-18 on 224x224 images (channels in, out, input
// size, kernel, stride, padding): the stem, the 3x3 layers of the four stages and the 1x1
// downsampling shortcuts.
var convResNet18 = []struct{ cin, cout, hw, k, s, p int }{
	{3, 64, 224, 7, 2, 3},
	{64, 64, 56, 3, 1, 1}, {64, 128, 56, 3, 2, 1}, {128, 128, 28, 3, 1, 1}, {128, 256, 28, 3, 2, 1},
	{256, 256, 14, 3, 1, 1}, {256, 512, 14, 3, 2, 1}, {512, 512, 7, 3, 1, 1},
	{64, 128, 56, 1, 2, 0}, {128, 256, 28, 1, 2, 0}, {256, 512, 14, 1, 2, 0},
}

// BenchmarkConvTiles times the tiled implicit-GEMM kernels against the direct ones on the GPU
// (skips without one: the CPU has a single path) over the ResNet-18 convolutions at batch
// TORCHLEAN_CONV_BATCH (default 64): forward, input gradient and weight gradient, each as
// .../tile (the kernels ops picks) and .../direct (convDirectOnly). Each pair's results are
// first checked bit for bit against each other.
func BenchmarkConvTiles(b *testing.B) {
	dev, err := Open("cuda")
	if err != nil {
		b.Skipf("no CUDA device: %v", err)
	}
	batch := 64
	if v, err := strconv.Atoi(os.Getenv("TORCHLEAN_CONV_BATCH")); err == nil && v > 0 {
		batch = v
	}
	must := func(x *Buffer, err error) *Buffer {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		return x
	}
	for _, l := range convResNet18 {
		dims := ConvDims{Batch: batch, InChannels: l.cin, OutChannels: l.cout, Input: []int{l.hw, l.hw}, Kernel: []int{l.k, l.k}}
		p := ConvParams{Stride: []int{l.s}, Padding: []int{l.p}}
		out, err := ConvOutputSize(dims, p)
		if err != nil {
			b.Fatal(err)
		}
		x := must(RandNormal(dev, batch*l.cin*l.hw*l.hw, 0, 1, 1))
		w := must(RandNormal(dev, l.cout*l.cin*l.k*l.k, 0, 1, 2))
		dy := must(RandNormal(dev, batch*l.cout*out[0]*out[1], 0, 1, 3))
		flops := float64(2 * batch * l.cout * l.cin * l.k * l.k * out[0] * out[1])
		name := fmt.Sprintf("c%dx%d/%dx%d/k%d/s%d", l.cin, l.cout, l.hw, l.hw, l.k, l.s)
		for _, op := range []struct {
			name string
			f    func() (*Buffer, error)
		}{
			{"fwd", func() (*Buffer, error) { return ConvND(x, w, nil, dims, p) }},
			{"bwd_input", func() (*Buffer, error) { return ConvNDBackwardInput(dy, w, dims, p) }},
			{"bwd_weight", func() (*Buffer, error) { return ConvNDBackwardWeight(x, dy, dims, p) }},
		} {
			var ref []uint32
			for _, direct := range []bool{false, true} {
				path := "tile"
				if direct {
					path = "direct"
				}
				b.Run(name+"/"+op.name+"/"+path, func(b *testing.B) {
					convDirectOnly = direct
					defer func() { convDirectOnly = false }()
					y := must(op.f())
					v, err := y.Float32s()
					y.Release()
					if err != nil {
						b.Fatal(err)
					}
					bits := make([]uint32, len(v))
					for i, f := range v {
						bits[i] = math.Float32bits(f)
					}
					if ref == nil {
						ref = bits
					} else {
						for i := range bits {
							if bits[i] != ref[i] {
								b.Fatalf("direct [%d] = %#08x, tiled %#08x", i, bits[i], ref[i])
							}
						}
					}
					b.ResetTimer()
					for range b.N {
						must(op.f()).Release()
					}
					if err := dev.Sync(); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
		x.Release()
		w.Release()
		dy.Release()
	}
}

// BenchmarkConvShapes times the two convolutions of issue 26's benchmark list that are not
// ResNet-18 layers, on the default device: a depthwise 1-D convolution of a state-space block
// (Mamba's short causal convolution: 1024 channels, groups 1024, 4 taps, padding 3, length 1024)
// and a 3-D convolution at a small volume (32 to 32 channels, 32^3, 3x3x3, padding 1); forward,
// input gradient and weight gradient, no bias. The batch is 8 on a GPU and 1 on the CPU; the
// names carry it (batch x channels x spatial...), as internal/bench/torch_bench.py's keys do.
func BenchmarkConvShapes(b *testing.B) {
	d := Default()
	batch := 8
	if d == CPU() {
		batch = 1
	}
	must := func(x *Buffer, err error) *Buffer {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		return x
	}
	for _, c := range []struct {
		name string
		dims ConvDims
		p    ConvParams
	}{
		{fmt.Sprintf("depthwise1d/%dx1024x1024/k4p3", batch),
			ConvDims{Batch: batch, InChannels: 1024, OutChannels: 1024, Input: []int{1024}, Kernel: []int{4}},
			ConvParams{Padding: []int{3}, Groups: 1024}},
		{fmt.Sprintf("conv3d/%dx32x32x32x32/k32x3x3x3p1", batch),
			ConvDims{Batch: batch, InChannels: 32, OutChannels: 32, Input: []int{32, 32, 32}, Kernel: []int{3, 3, 3}},
			ConvParams{Padding: []int{1}}},
	} {
		out, err := ConvOutputSize(c.dims, c.p)
		if err != nil {
			b.Fatal(err)
		}
		groups := max(c.p.Groups, 1)
		inProd, outProd, kProd := numel(c.dims.Input), numel(out), numel(c.dims.Kernel)
		x := must(RandNormal(d, batch*c.dims.InChannels*inProd, 0, 1, 1))
		w := must(RandNormal(d, c.dims.OutChannels*c.dims.InChannels/groups*kProd, 0, 1, 2))
		dy := must(RandNormal(d, batch*c.dims.OutChannels*outProd, 0, 1, 3))
		flops := float64(2 * batch * c.dims.OutChannels * c.dims.InChannels / groups * kProd * outProd)
		for _, op := range []struct {
			name string
			f    func() (*Buffer, error)
		}{
			{"fwd", func() (*Buffer, error) { return ConvND(x, w, nil, c.dims, c.p) }},
			{"bwd_input", func() (*Buffer, error) { return ConvNDBackwardInput(dy, w, c.dims, c.p) }},
			{"bwd_weight", func() (*Buffer, error) { return ConvNDBackwardWeight(x, dy, c.dims, c.p) }},
		} {
			b.Run(c.name+"/"+op.name, func(b *testing.B) {
				for b.Loop() {
					must(op.f()).Release()
				}
				if err := d.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		ReleaseThen(nil, x, w, dy)
	}
}
