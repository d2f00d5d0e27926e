package autograd

import (
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// SpectralConv1d returns the spectral convolution of a Fourier Neural Operator layer (FNO-1D;
// the seeds' Tape.spectralConv1dRfft): x is one sample (grid, width) or a batch (batch, grid,
// width), wRe and wIm the real and imaginary parts of the complex weights (modes, width, width),
// and the result has x's shape. Per sample and channel, the real FFT over the grid axis
// (unnormalized) keeps the bins k < modes, each bin's vector of channels is multiplied by the
// complex matrix wRe[k] + i·wIm[k] (Z[k][o] = Σ_c X[k][c]·W[k][c][o]), the other bins are zero,
// and the inverse real FFT (normalized by 1/grid, the DC and Nyquist imaginary parts ignored)
// gives y. Requires grid > 0, width > 0 and 1 <= modes <= grid/2+1.
//
// The arithmetic is ops.SpectralConv1dBatched's (truncated DFTs as matrix products with tables
// computed on the host, the mixing as one batched product per bin: the same bits on the CPU and
// a GPU). Gradients flow to x, wRe and wIm (ops.SpectralConv1dBwdFromModes); the weight
// gradients are summed over the batch in a fixed order. The node retains the kept spectrum of x
// (2*modes*batch*width values) when a weight requires grad, so the backward pass does not
// transform x again.
func (t *Tape) SpectralConv1d(x, wRe, wIm Var, modes int) Var {
	const op = "spectral_conv1d"
	vs, ok := t.args(op, x, wRe, wIm)
	if !ok || !t.liveArgs(op, vs) {
		return Var{}
	}
	sx, sr, si := vs[0].shape, vs[1].shape, vs[2].shape
	if len(sx) != 2 && len(sx) != 3 {
		return t.failf(op, "x %v: want (grid, width) or (batch, grid, width)", sx)
	}
	batch, grid, width := 1, sx[len(sx)-2], sx[len(sx)-1]
	if len(sx) == 3 {
		batch = sx[0]
	}
	want := []int{modes, width, width}
	if !slices.Equal(sr, want) || !slices.Equal(si, want) {
		return t.failf(op, "wRe %v and wIm %v: want (modes, width, width) = %v for x %v and modes %d", sr, si, want, sx, modes)
	}
	if grid <= 0 || width <= 0 || modes < 1 || modes > grid/2+1 {
		return t.failf(op, "x %v and modes %d: want grid > 0, width > 0 and 1 <= modes <= grid/2+1", sx, modes)
	}
	needW := !t.noGrad && (t.nodes[wRe.id].requires || t.nodes[wIm.id].requires)
	y, xm, err := ops.SpectralConv1dForward(vs[0].buf, vs[1].buf, vs[2].buf, batch, grid, width, modes)
	var work []releaser
	if err == nil && needW {
		work = []releaser{xm}
	} else {
		xm.Release() // nil-safe; the weights need no gradient: the spectrum is not kept
		xm = nil
	}
	vr, vi := vs[1], vs[2]
	return t.record(op, sx, y, err, work, []Var{x, wRe, wIm}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		dx, dwr, dwi, err := ops.SpectralConv1dBwdFromModes(xm, vr.buf, vi.buf, g, batch, grid, width, modes,
			need[0], need[1] || need[2])
		if err != nil {
			return nil, err
		}
		if !need[1] {
			dwr.Release()
			dwr = nil
		}
		if !need[2] {
			dwi.Release()
			dwi = nil
		}
		return []*ops.Buffer{dx, dwr, dwi}, nil
	})
}
