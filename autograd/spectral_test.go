package autograd_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// spectralConvRef is the spectral convolution in float64 from the seeds' definition: per sample
// and channel the bins k < modes of the unnormalized rfft, mixed by wRe + i·wIm, and the inverse
// normalized by 1/grid with the interior bins counted twice and the DC and Nyquist imaginary
// parts ignored. x is (batch, grid, width), the weights (modes, width, width).
func spectralConvRef(x, wRe, wIm []float64, batch, grid, width, modes int) []float64 {
	y := make([]float64, batch*grid*width)
	for b := range batch {
		for k := range modes {
			xr, xi := make([]float64, width), make([]float64, width)
			for t := range grid {
				th := 2 * math.Pi * float64(k*t) / float64(grid)
				for c := range width {
					xr[c] += x[(b*grid+t)*width+c] * math.Cos(th)
					xi[c] -= x[(b*grid+t)*width+c] * math.Sin(th)
				}
			}
			edge := k == 0 || 2*k == grid
			for o := range width {
				var zr, zi float64
				for c := range width {
					i := (k*width+c)*width + o
					zr += xr[c]*wRe[i] - xi[c]*wIm[i]
					zi += xr[c]*wIm[i] + xi[c]*wRe[i]
				}
				f := 2.0
				if edge {
					f, zi = 1, 0
				}
				for t := range grid {
					th := 2 * math.Pi * float64(k*t) / float64(grid)
					y[(b*grid+t)*width+o] += f * (zr*math.Cos(th) - zi*math.Sin(th)) / float64(grid)
				}
			}
		}
	}
	return y
}

// spectralGradCases are the gradient checks of SpectralConv1d: odd and even grids, modes 1 and
// grid/2+1, width 1 and more, one sample (grid, width) and batches of 1 and more.
func spectralGradCases() []gradCase {
	var cs []gradCase
	for _, s := range []struct{ batch, grid, width, modes int }{
		{0, 4, 1, 3}, {0, 4, 1, 1}, {0, 5, 2, 3}, {0, 7, 3, 1}, {1, 8, 2, 5}, {1, 6, 1, 4},
		{3, 8, 3, 5}, {2, 9, 2, 5}, {2, 9, 3, 1}, {4, 12, 4, 3}, {2, 1, 2, 1}, {3, 2, 2, 2},
	} {
		x := []int{s.grid, s.width} // batch 0 here: one sample (grid, width)
		batch := 1
		if s.batch > 0 {
			x, batch = []int{s.batch, s.grid, s.width}, s.batch
		}
		w := []int{s.modes, s.width, s.width}
		cs = append(cs, gradCase{
			name: fmt.Sprintf("spectral_conv1d%v_modes%d", x, s.modes),
			in:   [][]int{x, w, w},
			op: func(tp *autograd.Tape, v []autograd.Var) autograd.Var {
				return tp.SpectralConv1d(v[0], v[1], v[2], s.modes)
			},
			ref: func(v [][]float64) []float64 {
				return spectralConvRef(v[0], v[1], v[2], batch, s.grid, s.width, s.modes)
			},
		})
	}
	return cs
}

// TestSpectralConvGradients checks SpectralConv1d's values and its VJPs for x, wRe and wIm
// against central differences of the float64 reference (checkGrad).
func TestSpectralConvGradients(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range spectralGradCases() {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

// TestSpectralConvTape checks the parts of SpectralConv1d beyond the values: gradients only
// where needed (frozen weights keep no spectrum), the section 3.9 finite-difference case through
// the tape, and the shape errors.
func TestSpectralConvTape(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		x := upload(t, d, 0.2, -0.4, 0.7, 1.1)
		wr := upload(t, d, 0.75, -0.3, 0.2)
		wi := upload(t, d, 0, 0.45, 0)
		dy := upload(t, d, 1, -0.5, 0.25, 0.75)
		defer func() {
			for _, b := range []*ops.Buffer{x, wr, wi, dy} {
				b.Release()
			}
		}()
		// Gradients of x only (weights constant), then of everything: the same dx.
		var dxs [2][]float64
		for i, trainW := range []bool{false, true} {
			tp := autograd.NewTape(d)
			xv := tp.Leaf(x, []int{4, 1}, true)
			rv, iv := tp.Leaf(wr, []int{3, 1, 1}, trainW), tp.Leaf(wi, []int{3, 1, 1}, trainW)
			y := tp.SpectralConv1d(xv, rv, iv, 3)
			if err := tp.BackwardWith(y, dy); err != nil {
				t.Fatal(err)
			}
			dxs[i] = values(t, tp.Grad(xv))
			if got := tp.Grad(rv) != nil; got != trainW {
				t.Errorf("weights trained %v: gradient of wRe present %v", trainW, got)
			}
			if trainW { // the finite-difference values of section 3.9 (TorchLean's Fft.lean)
				checkSpectralFD(t, values(t, tp.Grad(xv)), values(t, tp.Grad(rv)), values(t, tp.Grad(iv)))
			}
			tp.Reset()
		}
		for i := range dxs[0] {
			if dxs[0][i] != dxs[1][i] {
				t.Errorf("dx[%d]: %v with frozen weights, %v with trained ones", i, dxs[0][i], dxs[1][i])
			}
		}

		w6 := upload(t, d, make([]float64, 6)...)
		defer w6.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		for _, c := range []struct {
			x, w  []int
			wb    *ops.Buffer
			modes int
			want  string
		}{
			{[]int{4}, []int{3, 1, 1}, wr, 3, "x [4]: want (grid, width) or (batch, grid, width)"},
			{[]int{1, 1, 4, 1}, []int{3, 1, 1}, wr, 3, "x [1 1 4 1]"},
			{[]int{4, 1}, []int{3, 1, 1}, wr, 2, "want (modes, width, width) = [2 1 1]"},
			{[]int{2, 2}, []int{3, 1, 1}, wr, 3, "want (modes, width, width) = [3 2 2]"},
			{[]int{4, 1}, []int{6, 1, 1}, w6, 6, "x [4 1] and modes 6: want grid > 0, width > 0 and 1 <= modes <= grid/2+1"},
		} {
			tp.Reset()
			xv := tp.Leaf(x, c.x, true)
			wv := tp.Leaf(c.wb, c.w, true)
			if y := tp.SpectralConv1d(xv, wv, wv, c.modes); y.Valid() {
				t.Errorf("x %v, w %v, modes %d: no error", c.x, c.w, c.modes)
			}
			if err := tp.Err(); err == nil || !strings.HasPrefix(err.Error(), "autograd: spectral_conv1d: ") ||
				!strings.Contains(err.Error(), c.want) {
				t.Errorf("x %v, w %v, modes %d: error %v, want one containing %q", c.x, c.w, c.modes, err, c.want)
			}
		}
	})
}

// checkSpectralFD compares the tape's gradients at the section 3.9 case with central
// differences (eps 1e-2) of <dY, y> through the float64 reference, tolerance 2e-2.
func checkSpectralFD(t *testing.T, gx, gr, gi []float64) {
	t.Helper()
	x := []float64{0.2, -0.4, 0.7, 1.1}
	wr := []float64{0.75, -0.3, 0.2}
	wi := []float64{0, 0.45, 0}
	dy := []float64{1, -0.5, 0.25, 0.75}
	loss := func(v [3][]float64) float64 {
		var l float64
		for i, y := range spectralConvRef(v[0], v[1], v[2], 1, 4, 1, 3) {
			l += y * dy[i]
		}
		return l
	}
	for which, g := range [][]float64{gx, gr, gi} {
		for i := range g {
			at := func(h float64) float64 {
				v := [3][]float64{append([]float64{}, x...), append([]float64{}, wr...), append([]float64{}, wi...)}
				v[which][i] += h
				return loss(v)
			}
			if fd := (at(1e-2) - at(-1e-2)) / 2e-2; math.Abs(fd-g[i]) > 2e-2 {
				t.Errorf("operand %d, element %d: gradient %v, finite differences %v", which, i, g[i], fd)
			}
		}
	}
}

// One FNO-1D spectral layer on a batch: the identity weights on all grid/2+1 bins give x back,
// and the gradients of Σy² reach x (2x) and both weights (dwRe[k] = Σ_b (e_k/grid)·2|X_b[k]|²,
// e_k = 1 at the DC and Nyquist bins and 2 between; dwIm 0 for real weights on a real signal).
func ExampleTape_SpectralConv1d() {
	const batch, grid, width, modes = 2, 4, 1, 3
	d := ops.CPU()
	x, _ := ops.FromFloat32(d, []float32{0.2, -0.4, 0.7, 1.1, 1, 0, 0, 0})
	wRe, _ := ops.FromFloat32(d, []float32{1, 1, 1}) // (modes, width, width): identity per bin
	wIm, _ := ops.Zeros(d, modes*width*width)
	tp := autograd.NewTape(d)
	xv := tp.Leaf(x, []int{batch, grid, width}, true)
	rv := tp.Leaf(wRe, []int{modes, width, width}, true)
	iv := tp.Leaf(wIm, []int{modes, width, width}, true)
	y := tp.SpectralConv1d(xv, rv, iv, modes)
	loss := tp.Sum(tp.Mul(y, y))
	if err := tp.Backward(loss); err != nil {
		fmt.Println(err)
		return
	}
	show := func(name string, b *ops.Buffer) {
		v, _ := b.Float32s()
		for i := range v {
			v[i] = float32(math.Round(float64(v[i])*1e4)/1e4) + 0 // rounding noise to +0
		}
		fmt.Println(name, v)
	}
	show("y     ", tp.Value(y))
	show("dx    ", tp.Grad(xv))
	show("dwRe  ", tp.Grad(rv))
	show("dwIm  ", tp.Grad(iv))
	tp.Reset()
	for _, b := range []*ops.Buffer{x, wRe, wIm} {
		b.Release()
	}
	// Output:
	// y      [0.2 -0.4 0.7 1.1 1 0 0 0]
	// dx     [0.4 -0.8 1.4 2.2 2 0 0 0]
	// dwRe   [1.78 3.5 0.52]
	// dwIm   [0 0 0]
}

// rfftRef is the unnormalized real FFT in float64 of the rows of x (length n each), packed as
// Rfft packs it.
func rfftRef(x []float64, n int) []float64 {
	rows, bins := len(x)/n, n/2+1
	y := make([]float64, rows*bins*2)
	for r := range rows {
		for k := range bins {
			for j := range n {
				th := 2 * math.Pi * float64(k*j) / float64(n)
				y[(r*bins+k)*2] += x[r*n+j] * math.Cos(th)
				y[(r*bins+k)*2+1] -= x[r*n+j] * math.Sin(th)
			}
		}
	}
	return y
}

// irfftRef is the inverse real FFT in float64 of the spectra of spec (Rfft's packing) to
// length n, normalized by 1/n, the interior bins counted twice and the DC and Nyquist
// imaginary parts ignored.
func irfftRef(spec []float64, n int) []float64 {
	bins := n/2 + 1
	rows := len(spec) / (2 * bins)
	y := make([]float64, rows*n)
	for r := range rows {
		for k := range bins {
			re, im := spec[(r*bins+k)*2], spec[(r*bins+k)*2+1]
			f := 2.0
			if k == 0 || 2*k == n {
				f, im = 1, 0
			}
			for j := range n {
				th := 2 * math.Pi * float64(k*j) / float64(n)
				y[r*n+j] += f * (re*math.Cos(th) - im*math.Sin(th)) / float64(n)
			}
		}
	}
	return y
}

// TestFFTGradients checks Rfft and Irfft (values and VJPs) against central differences of the
// float64 references, for odd, even and prime lengths, one row, batches of rows and an empty
// batch.
func TestFFTGradients(t *testing.T) {
	var cs []gradCase
	for _, s := range []struct {
		lead []int
		n    int
	}{{nil, 1}, {nil, 2}, {nil, 7}, {[]int{3}, 8}, {[]int{2, 3}, 12}, {[]int{2}, 97}, {[]int{1}, 5}, {[]int{0}, 4}} {
		x := append(slices.Clone(s.lead), s.n)
		spec := append(slices.Clone(s.lead), s.n/2+1, 2)
		cs = append(cs, gradCase{
			name: fmt.Sprintf("rfft%v", x),
			in:   [][]int{x},
			op:   func(tp *autograd.Tape, v []autograd.Var) autograd.Var { return tp.Rfft(v[0]) },
			ref:  func(v [][]float64) []float64 { return rfftRef(v[0], s.n) },
		}, gradCase{
			name: fmt.Sprintf("irfft%v_n%d", spec, s.n),
			in:   [][]int{spec},
			op:   func(tp *autograd.Tape, v []autograd.Var) autograd.Var { return tp.Irfft(v[0], s.n) },
			ref:  func(v [][]float64) []float64 { return irfftRef(v[0], s.n) },
		}, gradCase{
			name: fmt.Sprintf("irfft(rfft)%v", x),
			in:   [][]int{x},
			op: func(tp *autograd.Tape, v []autograd.Var) autograd.Var {
				return tp.Mul(tp.Irfft(tp.Rfft(v[0]), s.n), v[0])
			},
			ref: func(v [][]float64) []float64 {
				y := irfftRef(rfftRef(v[0], s.n), s.n)
				for i := range y {
					y[i] *= v[0][i]
				}
				return y
			},
		})
	}
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range cs {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

// TestFFTTapeErrors: shapes that do not fit Rfft or Irfft are errors naming them.
func TestFFTTapeErrors(t *testing.T) {
	d := ops.CPU()
	for _, c := range []struct {
		shape []int
		irfft bool
		n     int
		want  string
	}{
		{[]int{3, 0}, false, 0, "rfft: x [3 0]: want a last axis of at least one element"},
		{[]int{}, false, 0, "rfft: x []"},
		{[]int{4, 3}, true, 4, "irfft: spec [4 3] and n 4: want n >= 1 and a spectrum (..., n/2+1, 2) = (..., 3, 2)"},
		{[]int{3, 2}, true, 0, "irfft: spec [3 2] and n 0"},
		{[]int{2, 3, 2}, true, 7, "(..., 4, 2)"},
	} {
		tp := autograd.NewTape(d)
		b, err := ops.Zeros(d, numel(c.shape))
		if err != nil {
			t.Fatal(err)
		}
		x := tp.Leaf(b, c.shape, true)
		if c.irfft {
			tp.Irfft(x, c.n)
		} else {
			tp.Rfft(x)
		}
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.shape, err, c.want)
		}
		tp.Reset()
		b.Release()
	}
}

// TestIrfftIgnoredParts: the imaginary parts of the DC and Nyquist bins, which Irfft ignores,
// get a gradient of exactly 0.
func TestIrfftIgnoredParts(t *testing.T) {
	d := ops.CPU()
	const n = 12 // a mixed radix
	tp := autograd.NewTape(d)
	defer tp.Reset()
	sb := upload(t, d, 1, 0.5, -2, 1, 0.25, -1, 3, 2, -1, 4, 0.5, 0.5, 1, 1)
	defer sb.Release()
	spec := tp.Leaf(sb, []int{n/2 + 1, 2}, true)
	gb := upload(t, d, 0.3, -1.2, 2.5, 0.7, -0.4, 1.1, 0.9, -2.2, 0.1, 1.7, -0.6, 0.35)
	defer gb.Release()
	if err := tp.BackwardWith(tp.Irfft(spec, n), gb); err != nil {
		t.Fatal(err)
	}
	g := values(t, tp.Grad(spec))
	if g[1] != 0 || g[2*(n/2)+1] != 0 {
		t.Errorf("gradients of the ignored imaginary parts: DC %v, Nyquist %v; want 0", g[1], g[2*(n/2)+1])
	}
}
