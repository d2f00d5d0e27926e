package ops

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSpectralConvCUDA is BenchmarkSpectralConv on CUDA device 0 (skips without one): the
// spectral convolution at issue 24's size (batch 64, width 64, grid 4096, 64 modes), forward and
// forward+backward (SpectralConv1dForward, then SpectralConv1dBwdFromModes for x and both
// weights), synchronized at the end. internal/bench/torch_bench.py times neuraloperator's chain
// (rfft -> einsum over the kept modes -> irfft, and its autograd backward) on the same size.
func BenchmarkSpectralConvCUDA(b *testing.B) {
	const batch, width, grid, modes = 64, 64, 4096, 64
	d, err := Open("cuda")
	if err != nil {
		b.Skipf("no CUDA device: %v", err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	x := mustBufB(b, d, randomFloat32s(r, batch*grid*width))
	wr := mustBufB(b, d, randomFloat32s(r, modes*width*width))
	wi := mustBufB(b, d, randomFloat32s(r, modes*width*width))
	dy := mustBufB(b, d, randomFloat32s(r, batch*grid*width))
	defer releaseAll([]*Buffer{x, wr, wi, dy})
	sync := func(b *testing.B) {
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			y, err := SpectralConv1dBatched(x, wr, wi, batch, grid, width, modes)
			if err != nil {
				b.Fatal(err)
			}
			y.Release()
		}
		sync(b)
	})
	b.Run("forward+backward", func(b *testing.B) {
		for b.Loop() {
			y, xm, err := SpectralConv1dForward(x, wr, wi, batch, grid, width, modes)
			if err != nil {
				b.Fatal(err)
			}
			dx, dwr, dwi, err := SpectralConv1dBwdFromModes(xm, wr, wi, dy, batch, grid, width, modes, true, true)
			if err != nil {
				b.Fatal(err)
			}
			releaseAll([]*Buffer{y, xm, dx, dwr, dwi})
		}
		sync(b)
	})
}
