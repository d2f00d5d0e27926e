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

// Rfft returns the real FFT of x along its last axis, unnormalized (torch.fft.rfft(x) with
// norm="backward"): x (..., n) gives (..., n/2+1, 2), the real and imaginary part of each bin
// (the seeds' packing; ops.Rfft1dPacked: our exact FFT, or cuFFT's in the fast mode on a GPU).
// Requires n >= 1. Its gradient is the adjoint of the transform, dx = n·irfft(g·f) with f = 1 at
// the DC and Nyquist bins and 1/2 at the others (each interior bin stands for itself and its
// mirror image), computed with the same two kernels.
func (t *Tape) Rfft(x Var) Var {
	const op = "rfft"
	vx, ok := t.arg(op, x)
	if !ok || !t.liveArgs(op, []value{vx}) {
		return Var{}
	}
	sx := vx.shape
	if len(sx) == 0 || sx[len(sx)-1] < 1 {
		return t.failf(op, "x %v: want a last axis of at least one element", sx)
	}
	n := sx[len(sx)-1]
	batch := size(sx[:len(sx)-1])
	y, err := ops.Rfft1dPacked(vx.buf, batch, n)
	out := append(slices.Clone(sx[:len(sx)-1]), n/2+1, 2)
	return t.record(op, out, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) {
			gf, err := mulBins(g, batch, n, func(k int, _ bool) float64 {
				if k == 0 || 2*k == n {
					return 1
				}
				return 0.5
			})
			if err != nil {
				return nil, err
			}
			defer gf.Release()
			z, err := ops.Irfft1dPacked(gf, batch, n)
			if err != nil {
				return nil, err
			}
			defer z.Release()
			return ops.Scale(z, float64(n))
		})
	})
}

// Irfft returns the inverse real FFT of spec along its last two axes to length n, normalized
// by 1/n (torch.fft.irfft(spec, n) with norm="backward"): spec (..., n/2+1, 2) in Rfft's packing
// gives (..., n); the imaginary parts of the DC and Nyquist bins are ignored, as PyTorch does
// (ops.Irfft1dPacked). Requires n >= 1. Its gradient: dspec = rfft(g)·c/n with c = 1 at the DC
// and Nyquist bins and 2 at the others, and 0 for the ignored imaginary parts.
func (t *Tape) Irfft(spec Var, n int) Var {
	const op = "irfft"
	vs, ok := t.arg(op, spec)
	if !ok || !t.liveArgs(op, []value{vs}) {
		return Var{}
	}
	ss := vs.shape
	if n < 1 || len(ss) < 2 || ss[len(ss)-1] != 2 || ss[len(ss)-2] != n/2+1 {
		return t.failf(op, "spec %v and n %d: want n >= 1 and a spectrum (..., n/2+1, 2) = (..., %d, 2)", ss, n, max(n, 0)/2+1)
	}
	batch := size(ss[:len(ss)-2])
	y, err := ops.Irfft1dPacked(vs.buf, batch, n)
	out := append(slices.Clone(ss[:len(ss)-2]), n)
	return t.record(op, out, y, err, nil, []Var{spec}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) {
			z, err := ops.Rfft1dPacked(g, batch, n)
			if err != nil {
				return nil, err
			}
			defer z.Release()
			return mulBins(z, batch, n, func(k int, imag bool) float64 {
				if k == 0 || 2*k == n {
					if imag {
						return 0
					}
					return 1 / float64(n)
				}
				return 2 / float64(n)
			})
		})
	})
}

// mulBins returns spec (batch spectra of n/2+1 bins, Rfft's packing) times the factor f(k, imag)
// of each bin's real and imaginary part, each product rounded once (ops.Mul with the factors
// rounded to float32; one spectrum's factors are uploaded and repeated on the device).
func mulBins(spec *ops.Buffer, batch, n int, f func(k int, imag bool) float64) (*ops.Buffer, error) {
	if batch == 0 {
		return ops.Zeros(spec.Device(), 0)
	}
	bins := n/2 + 1
	fs := make([]float32, bins*2)
	for k := range bins {
		fs[2*k], fs[2*k+1] = float32(f(k, false)), float32(f(k, true))
	}
	fb, err := ops.FromFloat32(spec.Device(), fs)
	if err != nil {
		return nil, err
	}
	defer fb.Release()
	tiled, err := ops.BroadcastVecToRows(fb, batch, bins*2)
	if err != nil {
		return nil, err
	}
	defer tiled.Release()
	return ops.Mul(spec, tiled)
}
