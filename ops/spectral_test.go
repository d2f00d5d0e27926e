package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The spectral convolution in float64, written from the seeds' definition (shared/seeds/003,
// reference section 3.9) sample by sample, independently of the table formulation of
// spectral.go: a direct rfft with angles 2πkt/grid, the mixing per bin, the inverse with the DC
// and Nyquist imaginary parts ignored and the interior bins counted twice, then the VJP formulas
// of section 3.9.

type spectralRef struct {
	batch, grid, width, modes int
}

// spectrum returns the bins k < modes of the unnormalized rfft of each channel of one sample v
// (grid, width): re[k][c], im[k][c].
func (s spectralRef) spectrum(v []float64) (re, im [][]float64) {
	re, im = make([][]float64, s.modes), make([][]float64, s.modes)
	for k := range s.modes {
		re[k], im[k] = make([]float64, s.width), make([]float64, s.width)
		for t := range s.grid {
			th := 2 * math.Pi * float64(k) * float64(t) / float64(s.grid)
			for c := range s.width {
				re[k][c] += v[t*s.width+c] * math.Cos(th)
				im[k][c] -= v[t*s.width+c] * math.Sin(th)
			}
		}
	}
	return re, im
}

// edge reports whether bin k is the DC or the Nyquist bin.
func (s spectralRef) edge(k int) bool { return k == 0 || s.grid%2 == 0 && k == s.grid/2 }

// forward is y (batch, grid, width).
func (s spectralRef) forward(x, wRe, wIm []float64) []float64 {
	g, w := s.grid, s.width
	y := make([]float64, s.batch*g*w)
	for b := range s.batch {
		xr, xi := s.spectrum(x[b*g*w : (b+1)*g*w])
		for k := range s.modes {
			for o := range w {
				var zr, zi float64
				for c := range w {
					wr, wi := wRe[(k*w+c)*w+o], wIm[(k*w+c)*w+o]
					zr += xr[k][c]*wr - xi[k][c]*wi
					zi += xr[k][c]*wi + xi[k][c]*wr
				}
				if s.edge(k) {
					zi = 0 // ignored by the inverse
				}
				f := 2.0
				if s.edge(k) {
					f = 1
				}
				for t := range g {
					th := 2 * math.Pi * float64(k) * float64(t) / float64(g)
					y[(b*g+t)*w+o] += f * (zr*math.Cos(th) - zi*math.Sin(th)) / float64(g)
				}
			}
		}
	}
	return y
}

// backward is dx, dwRe, dwIm by the formulas of section 3.9, summed over the batch.
func (s spectralRef) backward(x, wRe, wIm, dY []float64) (dx, dwRe, dwIm []float64) {
	g, w := s.grid, s.width
	dx = make([]float64, s.batch*g*w)
	dwRe, dwIm = make([]float64, s.modes*w*w), make([]float64, s.modes*w*w)
	for b := range s.batch {
		xr, xi := s.spectrum(x[b*g*w : (b+1)*g*w])
		gr, gi := s.spectrum(dY[b*g*w : (b+1)*g*w])
		for k := range s.modes {
			f := 2.0
			if s.edge(k) {
				f = 1
			}
			dzr, dzi := make([]float64, w), make([]float64, w)
			for o := range w {
				dzr[o], dzi[o] = gr[k][o]*f/float64(g), gi[k][o]*f/float64(g)
			}
			for c := range w {
				var dxr, dxi float64
				for o := range w {
					i := (k*w+c)*w + o
					dwRe[i] += xr[k][c]*dzr[o] + xi[k][c]*dzi[o]
					dwIm[i] += xr[k][c]*dzi[o] - xi[k][c]*dzr[o]
					dxr += dzr[o]*wRe[i] + dzi[o]*wIm[i]
					dxi += dzi[o]*wRe[i] - dzr[o]*wIm[i]
				}
				for t := range g {
					th := 2 * math.Pi * float64(k) * float64(t) / float64(g)
					dx[(b*g+t)*w+c] += dxr*math.Cos(th) - dxi*math.Sin(th)
				}
			}
		}
	}
	return dx, dwRe, dwIm
}

// spectralCases are the shapes checked: odd and even grids, modes 1 and grid/2+1, width 1 and
// more, batch 0, 1 and more, grid 1 and 2.
var spectralCases = []spectralRef{
	{1, 4, 1, 3}, {1, 1, 1, 1}, {1, 2, 1, 2}, {2, 2, 3, 1}, {1, 3, 2, 2}, {2, 5, 3, 3}, {3, 8, 2, 5},
	{2, 7, 4, 1}, {1, 16, 3, 9}, {4, 12, 5, 4}, {2, 9, 2, 5}, {0, 8, 2, 3}, {3, 33, 6, 17}, {2, 64, 8, 7},
}

func (s spectralRef) String() string {
	return fmt.Sprintf("batch%d_grid%d_width%d_modes%d", s.batch, s.grid, s.width, s.modes)
}

func float64sOf(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func randomFloat32s(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// closeTo checks got against want elementwise within tol relative to the largest |want| (the
// error of a float32 sum is relative to its terms, not to a result that cancels).
func closeTo(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*scale) {
			t.Fatalf("%s[%d] = %v, want %v (|diff| %.3g > %.3g)", what, i, got[i], want[i], d, tol*scale)
		}
	}
}

func spectralSameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: lengths %d and %d", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s[%d]: %v and %v differ", what, i, a[i], b[i])
		}
	}
}

// TestSpectralConvReference checks the forward pass and the three VJPs of every entry point
// against the float64 reference, the batched forms against the one-sample seed forms (the same
// bits per sample), and the from-modes forms against the others (the same bits), with the live
// bytes back where they were.
func TestSpectralConvReference(t *testing.T) {
	for _, d := range devices(t) {
		for _, s := range spectralCases {
			t.Run(d.Kind().String()+"/"+s.String(), func(t *testing.T) {
				base := d.Stats().LiveBytes
				checkSpectralCase(t, d, s)
				if live := d.Stats().LiveBytes; live != base {
					t.Errorf("live bytes %d after the test, %d before", live, base)
				}
			})
		}
	}
}

func checkSpectralCase(t *testing.T, d *Device, s spectralRef) {
	r := rand.New(rand.NewPCG(uint64(s.batch*1000003+s.grid*1009+s.width*31+s.modes), 7))
	n, nw := s.batch*s.grid*s.width, s.modes*s.width*s.width
	x, wr, wi, dy := randomFloat32s(r, n), randomFloat32s(r, nw), randomFloat32s(r, nw), randomFloat32s(r, n)
	bx, bwr, bwi, bdy := mustBuf(t, d, x), mustBuf(t, d, wr), mustBuf(t, d, wi), mustBuf(t, d, dy)
	defer releaseAll([]*Buffer{bx, bwr, bwi, bdy})
	// float32 sums of grid (or batch*width) terms: a few ulps times their count's square root
	tol := 2e-6 * math.Sqrt(float64(max(s.grid, s.width, s.batch)))
	tol = max(tol, 4e-6)

	want := s.forward(float64sOf(x), float64sOf(wr), float64sOf(wi))
	wdx, wdwr, wdwi := s.backward(float64sOf(x), float64sOf(wr), float64sOf(wi), float64sOf(dy))

	y, err := SpectralConv1dBatched(bx, bwr, bwi, s.batch, s.grid, s.width, s.modes)
	gy := download(t, y, err)
	closeTo(t, "y", gy, want, tol)
	dx, dwr, dwi, err := SpectralConv1dBatchedBwd(bx, bwr, bwi, bdy, s.batch, s.grid, s.width, s.modes)
	if err != nil {
		t.Fatal(err)
	}
	gdx, gdwr, gdwi := download(t, dx, nil), download(t, dwr, nil), download(t, dwi, nil)
	closeTo(t, "dx", gdx, wdx, tol)
	closeTo(t, "dwRe", gdwr, wdwr, tol)
	closeTo(t, "dwIm", gdwi, wdwi, tol)

	// The forward that keeps the spectrum, and the passes from it: the same bits.
	y2, xm, err := SpectralConv1dForward(bx, bwr, bwi, s.batch, s.grid, s.width, s.modes)
	if err != nil {
		t.Fatal(err)
	}
	spectralSameBits(t, "SpectralConv1dForward", download(t, y2, nil), gy)
	xm2, err := RfftModes(bx, s.batch, s.grid, s.width, s.modes)
	gxm := download(t, xm2, err)
	if len(gxm) != 2*s.modes*s.batch*s.width {
		t.Fatalf("RfftModes: %d values, want %d", len(gxm), 2*s.modes*s.batch*s.width)
	}
	for b := range s.batch { // RfftModes against the reference spectrum
		re, im := s.spectrum(float64sOf(x[b*s.grid*s.width : (b+1)*s.grid*s.width]))
		for k := range s.modes {
			for c := range s.width {
				h := s.modes * s.batch * s.width
				i := (k*s.batch+b)*s.width + c
				for part, v := range []float64{re[k][c], im[k][c]} {
					if got := float64(gxm[part*h+i]); !(math.Abs(got-v) <= tol*math.Sqrt(float64(s.grid))) {
						t.Fatalf("RfftModes part %d bin %d sample %d channel %d = %v, want %v", part, k, b, c, got, v)
					}
				}
			}
		}
	}
	y3, err := SpectralConv1dFromModes(xm, bwr, bwi, s.batch, s.grid, s.width, s.modes)
	spectralSameBits(t, "SpectralConv1dFromModes", download(t, y3, err), gy)
	for _, want := range [][2]bool{{true, true}, {true, false}, {false, true}, {false, false}} {
		dx, dwr, dwi, err := SpectralConv1dBwdFromModes(xm, bwr, bwi, bdy, s.batch, s.grid, s.width, s.modes, want[0], want[1])
		if err != nil {
			t.Fatal(err)
		}
		if (dx != nil) != want[0] || (dwr != nil) != want[1] || (dwi != nil) != want[1] {
			t.Fatalf("SpectralConv1dBwdFromModes(wantX %v, wantW %v) gave %v, %v, %v", want[0], want[1], dx, dwr, dwi)
		}
		if want[0] {
			spectralSameBits(t, "SpectralConv1dBwdFromModes dx", download(t, dx, nil), gdx)
		}
		if want[1] {
			spectralSameBits(t, "SpectralConv1dBwdFromModes dwRe", download(t, dwr, nil), gdwr)
			spectralSameBits(t, "SpectralConv1dBwdFromModes dwIm", download(t, dwi, nil), gdwi)
		}
	}
	xm.Release()

	// The seeds' one-sample entry points, sample by sample; the weight gradients summed over
	// the samples agree with the batched ones to rounding.
	g, w := s.grid, s.width
	sumR, sumI := make([]float64, nw), make([]float64, nw)
	for b := range s.batch {
		xb, dyb := mustBuf(t, d, x[b*g*w:(b+1)*g*w]), mustBuf(t, d, dy[b*g*w:(b+1)*g*w])
		y, err := SpectralConv1dRfftFwd(xb, bwr, bwi, g, w, s.modes)
		spectralSameBits(t, "SpectralConv1dRfftFwd", download(t, y, err), gy[b*g*w:(b+1)*g*w])
		dx, err := SpectralConv1dRfftBwdX(xb, bwr, bwi, dyb, g, w, s.modes)
		spectralSameBits(t, "SpectralConv1dRfftBwdX", download(t, dx, err), gdx[b*g*w:(b+1)*g*w])
		dwr, err := SpectralConv1dRfftBwdWRe(xb, bwr, bwi, dyb, g, w, s.modes)
		gr := download(t, dwr, err)
		dwi, err := SpectralConv1dRfftBwdWIm(xb, bwr, bwi, dyb, g, w, s.modes)
		gi := download(t, dwi, err)
		sub := spectralRef{1, g, w, s.modes}
		_, rr, ri := sub.backward(float64sOf(x[b*g*w:(b+1)*g*w]), float64sOf(wr), float64sOf(wi), float64sOf(dy[b*g*w:(b+1)*g*w]))
		closeTo(t, "SpectralConv1dRfftBwdWRe", gr, rr, tol)
		closeTo(t, "SpectralConv1dRfftBwdWIm", gi, ri, tol)
		for i := range nw {
			sumR[i] += float64(gr[i])
			sumI[i] += float64(gi[i])
		}
		xb.Release()
		dyb.Release()
	}
	if s.batch > 0 {
		closeTo(t, "dwRe, summed sample by sample", gdwr, sumR, tol)
		closeTo(t, "dwIm, summed sample by sample", gdwi, sumI, tol)
	}
}

// TestSpectralConvFiniteDifferences is the finite-difference case of section 3.9 (TorchLean's
// Fft.lean): central differences of <dY, y> with eps 1e-2 through the float32 forward against
// the three VJP entry points, tolerance 2e-2.
func TestSpectralConvFiniteDifferences(t *testing.T) {
	const grid, width, modes, eps, tol = 4, 1, 3, 1e-2, 2e-2
	x := []float32{0.2, -0.4, 0.7, 1.1}
	wr := []float32{0.75, -0.3, 0.2}
	wi := []float32{0, 0.45, 0}
	dy := []float32{1, -0.5, 0.25, 0.75}
	for _, d := range devices(t) {
		t.Run(d.Kind().String(), func(t *testing.T) {
			loss := func(x, wr, wi []float32) float64 {
				bx, bwr, bwi := mustBuf(t, d, x), mustBuf(t, d, wr), mustBuf(t, d, wi)
				defer releaseAll([]*Buffer{bx, bwr, bwi})
				y, err := SpectralConv1dRfftFwd(bx, bwr, bwi, grid, width, modes)
				var l float64
				for i, v := range download(t, y, err) {
					l += float64(v) * float64(dy[i])
				}
				return l
			}
			bx, bwr, bwi, bdy := mustBuf(t, d, x), mustBuf(t, d, wr), mustBuf(t, d, wi), mustBuf(t, d, dy)
			defer releaseAll([]*Buffer{bx, bwr, bwi, bdy})
			dx, err := SpectralConv1dRfftBwdX(bx, bwr, bwi, bdy, grid, width, modes)
			gx := download(t, dx, err)
			dwr, err := SpectralConv1dRfftBwdWRe(bx, bwr, bwi, bdy, grid, width, modes)
			gwr := download(t, dwr, err)
			dwi, err := SpectralConv1dRfftBwdWIm(bx, bwr, bwi, bdy, grid, width, modes)
			gwi := download(t, dwi, err)
			for which, c := range []struct {
				name string
				v    []float32
				g    []float32
			}{{"x", x, gx}, {"wRe", wr, gwr}, {"wIm", wi, gwi}} {
				for i := range c.v {
					at := func(h float32) float64 {
						args := [][]float32{append([]float32{}, x...), append([]float32{}, wr...), append([]float32{}, wi...)}
						args[which][i] += h
						return loss(args[0], args[1], args[2])
					}
					fd := (at(eps) - at(-eps)) / (2 * eps)
					if math.Abs(fd-float64(c.g[i])) > tol {
						t.Errorf("d<dY,y>/d%s[%d] = %v, finite differences %v", c.name, i, c.g[i], fd)
					}
				}
			}
			// The values of the reference VJP (exact arithmetic) to float32 accuracy, too.
			s := spectralRef{1, grid, width, modes}
			rx, rr, ri := s.backward(float64sOf(x), float64sOf(wr), float64sOf(wi), float64sOf(dy))
			closeTo(t, "dx", gx, rx, 1e-6)
			closeTo(t, "dwRe", gwr, rr, 1e-6)
			closeTo(t, "dwIm", gwi, ri, 1e-6)
		})
	}
}

// TestSpectralConvIdentity is the identity case of section 3.9 (all grid/2+1 modes kept,
// identity weights: y = x within 3e-4), and the same for wider layers, batches and an odd grid.
func TestSpectralConvIdentity(t *testing.T) {
	for _, d := range devices(t) {
		for _, s := range []spectralRef{{1, 4, 1, 3}, {1, 9, 3, 5}, {3, 8, 2, 5}, {2, 1024, 4, 513}} {
			t.Run(d.Kind().String()+"/"+s.String(), func(t *testing.T) {
				var x []float32
				if s.grid == 4 {
					x = []float32{0.2, -0.4, 0.7, 1.1}
				} else {
					x = randomFloat32s(rand.New(rand.NewPCG(3, uint64(s.grid))), s.batch*s.grid*s.width)
				}
				wr, wi := make([]float32, s.modes*s.width*s.width), make([]float32, s.modes*s.width*s.width)
				for k := range s.modes {
					for c := range s.width {
						wr[(k*s.width+c)*s.width+c] = 1
					}
				}
				bx, bwr, bwi := mustBuf(t, d, x), mustBuf(t, d, wr), mustBuf(t, d, wi)
				defer releaseAll([]*Buffer{bx, bwr, bwi})
				y, err := SpectralConv1dBatched(bx, bwr, bwi, s.batch, s.grid, s.width, s.modes)
				for i, v := range download(t, y, err) {
					if math.Abs(float64(v-x[i])) > 3e-4 {
						t.Fatalf("y[%d] = %v, want x[%d] = %v", i, v, i, x[i])
					}
				}
			})
		}
	}
}

// TestSpectralTables checks the host tables: exact values at the multiples of π/2, symmetry,
// float32 rounding of the float64 values, and the edge bins' zero sine columns.
func TestSpectralTables(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 8, 12, 97, 1000, 1024} {
		for r := range n {
			c, s := cosSin2Pi(r, n)
			th := 2 * math.Pi * float64(r) / float64(n)
			if math.Abs(c-math.Cos(th)) > 2e-15 || math.Abs(s-math.Sin(th)) > 2e-15 {
				t.Fatalf("cosSin2Pi(%d, %d) = %v, %v; want %v, %v", r, n, c, s, math.Cos(th), math.Sin(th))
			}
			if 4*r%n == 0 && (c != math.Round(c) || s != math.Round(s)) {
				t.Fatalf("cosSin2Pi(%d, %d) = %v, %v: not exact at a multiple of π/2", r, n, c, s)
			}
			if c2, s2 := cosSin2Pi((n-r)%n, n); c2 != c || s2 != -s && !(s == 0 && s2 == 0) {
				t.Fatalf("cosSin2Pi(%d, %d) = %v, %v and of %d: %v, %v are not symmetric", r, n, c, s, n-r, c2, s2)
			}
			if math.Signbit(c) && c == 0 || math.Signbit(s) && s == 0 {
				t.Fatalf("cosSin2Pi(%d, %d) = %v, %v: a negative zero", r, n, c, s)
			}
		}
	}
	for _, grid := range []int{1, 2, 7, 8} {
		modes := grid/2 + 1
		fwd, inv := spectralHostTables(grid, modes)
		for k := range modes {
			edge := k == 0 || 2*k == grid
			for tt := range grid {
				th := 2 * math.Pi * float64(k*tt) / float64(grid)
				if got, want := fwd[k*grid+tt], float32(math.Cos(th)); math.Abs(float64(got-want)) > 6e-8 {
					t.Errorf("grid %d: F[%d][%d] = %v, want %v", grid, k, tt, got, want)
				}
				if got, want := fwd[(modes+k)*grid+tt], float32(-math.Sin(th)); math.Abs(float64(got-want)) > 6e-8 {
					t.Errorf("grid %d: F[%d][%d] = %v, want %v", grid, modes+k, tt, got, want)
				}
				f := 2.0
				if edge {
					f = 1
				}
				if got, want := inv[tt*2*modes+k], float32(f*math.Cos(th)/float64(grid)); math.Abs(float64(got-want)) > 6e-8 {
					t.Errorf("grid %d: G[%d][%d] = %v, want %v", grid, tt, k, got, want)
				}
				want := float32(-f * math.Sin(th) / float64(grid))
				if edge {
					want = 0
				}
				if got := inv[tt*2*modes+modes+k]; math.Abs(float64(got-want)) > 6e-8 || edge && math.Float32bits(got) != 0 {
					t.Errorf("grid %d: G[%d][%d] = %v, want %v", grid, tt, modes+k, got, want)
				}
			}
		}
	}
}

// TestSpectralConvErrors checks that bad sizes, lengths and buffers are errors naming the
// numbers, never panics, and leave the live bytes where they were.
func TestSpectralConvErrors(t *testing.T) {
	d := CPU()
	buf := func(n int) *Buffer { return mustBuf(t, d, make([]float32, n)) }
	x, w, dy := buf(8*2), buf(3*2*2), buf(8*2)
	defer releaseAll([]*Buffer{x, w, dy})
	released := buf(16)
	released.Release()
	base := d.Stats().LiveBytes
	cases := []struct {
		name string
		f    func() error
		want string
	}{
		{"grid 0", func() error { _, err := SpectralConv1dRfftFwd(x, w, w, 0, 2, 1); return err }, "grid 0, want grid > 0"},
		{"width 0", func() error { _, err := SpectralConv1dRfftFwd(x, w, w, 8, 0, 1); return err }, "width 0, want width > 0"},
		{"modes 0", func() error { _, err := SpectralConv1dRfftFwd(x, w, w, 8, 2, 0); return err }, "modes 0, want 1 <= modes <= grid/2+1 = 5 (grid 8)"},
		{"modes 6", func() error { _, err := SpectralConv1dRfftBwdX(x, w, w, dy, 8, 2, 6); return err }, "modes 6, want 1 <= modes <= grid/2+1 = 5"},
		{"negative batch", func() error { _, err := SpectralConv1dBatched(x, w, w, -1, 8, 2, 3); return err }, "batch -1 is negative"},
		{"x length", func() error { _, err := SpectralConv1dBatched(x, w, w, 2, 8, 2, 3); return err }, "x (batch 2, grid 8, width 2) has 16 elements, want 32"},
		{"wRe length", func() error { _, err := SpectralConv1dRfftFwd(x, dy, w, 8, 2, 3); return err }, "wRe (modes 3, width 2, width 2) has 16 elements, want 12"},
		{"wIm length", func() error { _, err := SpectralConv1dRfftBwdWIm(x, w, x, dy, 8, 2, 3); return err }, "wIm (modes 3, width 2, width 2) has 16 elements, want 12"},
		{"dY length", func() error { _, err := SpectralConv1dRfftBwdWRe(x, w, w, w, 8, 2, 3); return err }, "dY (batch 1, grid 8, width 2) has 12 elements, want 16"},
		{"released x", func() error { _, err := SpectralConv1dRfftFwd(released, w, w, 8, 2, 3); return err }, "use of released buffer"},
		{"overflow", func() error { _, err := SpectralConv1dBatched(x, w, w, math.MaxInt/4, 8, 2, 3); return err }, "overflow"},
		{"xModes length", func() error { _, err := SpectralConv1dFromModes(x, w, w, 1, 8, 2, 3); return err }, "xModes (2, modes 3, batch 1, width 2) has 16 elements, want 12"},
		{"xModes nil", func() error {
			_, _, _, err := SpectralConv1dBwdFromModes(nil, w, w, dy, 1, 8, 2, 3, true, true)
			return err
		}, "the weight gradients need xModes"},
		{"rfft modes", func() error { _, err := RfftModes(x, 1, 8, 2, 9); return err }, "rfft_modes: modes 9"},
		{"nil buffer", func() error { _, err := SpectralConv1dRfftFwd(x, nil, w, 8, 2, 3); return err }, "nil buffer"},
	}
	for _, c := range cases {
		err := c.f()
		if err == nil || !strings.HasPrefix(err.Error(), "ops: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if live := d.Stats().LiveBytes; live != base {
		t.Errorf("live bytes %d after the errors, %d before", live, base)
	}
	// bwd_x needs no spectrum: nil xModes is fine without the weights.
	dx, dwr, dwi, err := SpectralConv1dBwdFromModes(nil, w, w, dy, 1, 8, 2, 3, true, false)
	if err != nil || dx == nil || dwr != nil || dwi != nil {
		t.Errorf("BwdFromModes(nil, wantX only) = %v, %v, %v, %v", dx, dwr, dwi, err)
	}
	dx.Release()
}

// TestSpectralTableCache checks the table cache: tables are counted in CachedBytes, not in
// LiveBytes, reused, bounded (least recently used out; tables above the bound are not cached)
// and released by Collect(true).
func TestSpectralTableCache(t *testing.T) {
	d := CPU()
	dropSpectralTables(d)
	defer func(limit int64) { spectralCacheLimit = limit }(spectralCacheLimit)
	run := func(grid, modes int) {
		t.Helper()
		x, w := mustBuf(t, d, make([]float32, grid)), mustBuf(t, d, make([]float32, modes))
		y, err := SpectralConv1dRfftFwd(x, w, w, grid, 1, modes)
		download(t, y, err)
		releaseAll([]*Buffer{x, w})
	}
	tableBytes := func(grid, modes int) int64 { return 16 * int64(grid*modes) }
	base := d.Stats()
	run(64, 5)
	after := d.Stats()
	if after.LiveBytes != base.LiveBytes {
		t.Errorf("live bytes %d after one op, %d before: the cached tables count as live", after.LiveBytes, base.LiveBytes)
	}
	if got := spectralCachedBytes(d); got != tableBytes(64, 5) {
		t.Errorf("cached tables: %d bytes, want %d", got, tableBytes(64, 5))
	}
	if after.CachedBytes < tableBytes(64, 5) {
		t.Errorf("Stats.CachedBytes %d does not count the %d bytes of tables", after.CachedBytes, tableBytes(64, 5))
	}
	allocs := d.Stats().AllocCount
	run(64, 5)
	if got := d.Stats().AllocCount - allocs; got > 12 {
		t.Errorf("a second op of the same sizes allocated %d buffers: the tables were not reused?", got)
	}
	spectralCacheLimit = tableBytes(64, 5) + tableBytes(32, 3)
	run(32, 3)
	if got := spectralCachedBytes(d); got != spectralCacheLimit {
		t.Errorf("cached %d bytes, want %d", got, spectralCacheLimit)
	}
	run(64, 5) // now the most recent: (32, 3) goes first
	run(16, 2)
	spectralCache.Lock()
	_, has64 := spectralCache.m[spectralKey{d, 64, 5}]
	_, has32 := spectralCache.m[spectralKey{d, 32, 3}]
	_, has16 := spectralCache.m[spectralKey{d, 16, 2}]
	spectralCache.Unlock()
	if !has64 || has32 || !has16 {
		t.Errorf("after eviction: (64, 5) %v, (32, 3) %v, (16, 2) %v; want true, false, true", has64, has32, has16)
	}
	if got := spectralCachedBytes(d); got > spectralCacheLimit {
		t.Errorf("cached %d bytes, above the bound %d", got, spectralCacheLimit)
	}
	run(128, 65) // above the bound: built for the call, not cached
	spectralCache.Lock()
	_, has128 := spectralCache.m[spectralKey{d, 128, 65}]
	spectralCache.Unlock()
	if has128 {
		t.Error("tables above the cache's bound were cached")
	}
	if live := d.Stats().LiveBytes; live != base.LiveBytes {
		t.Errorf("live bytes %d, %d before", live, base.LiveBytes)
	}
	if err := d.Collect(true); err != nil {
		t.Fatal(err)
	}
	if got := spectralCachedBytes(d); got != 0 {
		t.Errorf("%d bytes of tables cached after Collect(true)", got)
	}
	if s := d.Stats(); s.LiveBytes != base.LiveBytes || s.CachedBytes != 0 {
		t.Errorf("after Collect(true): live %d (before %d), cached %d", s.LiveBytes, base.LiveBytes, s.CachedBytes)
	}
}

// TestSpectralTableCacheConcurrent runs spectral ops of several sizes from several goroutines
// with a cache that holds one size's tables at a time, so that tables are evicted while other
// goroutines use them: every result keeps the bits of a serial run, and nothing leaks.
func TestSpectralTableCacheConcurrent(t *testing.T) {
	d := CPU()
	dropSpectralTables(d)
	defer func(limit int64) { spectralCacheLimit = limit; dropSpectralTables(d) }(spectralCacheLimit)
	sizes := []spectralRef{{2, 16, 3, 5}, {3, 12, 2, 7}, {1, 20, 4, 3}}
	spectralCacheLimit = 16 * 20 * 7 // one size at a time
	type io struct {
		in   []*Buffer
		want []float32
	}
	cases := make([]io, len(sizes))
	for i, s := range sizes {
		r := rand.New(rand.NewPCG(5, uint64(i)))
		nw := s.modes * s.width * s.width
		for _, v := range [][]float32{randomFloat32s(r, s.batch*s.grid*s.width), randomFloat32s(r, nw), randomFloat32s(r, nw)} {
			cases[i].in = append(cases[i].in, mustBuf(t, d, v))
		}
		y, err := SpectralConv1dBatched(cases[i].in[0], cases[i].in[1], cases[i].in[2], s.batch, s.grid, s.width, s.modes)
		cases[i].want = download(t, y, err)
	}
	base := d.Stats().LiveBytes
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for it := range 30 {
				i := (g + it) % len(sizes)
				s, c := sizes[i], cases[i]
				y, err := SpectralConv1dBatched(c.in[0], c.in[1], c.in[2], s.batch, s.grid, s.width, s.modes)
				if err != nil {
					errs <- err
					return
				}
				got, err := y.Float32s()
				y.Release()
				if err != nil {
					errs <- err
					return
				}
				for j := range got {
					if math.Float32bits(got[j]) != math.Float32bits(c.want[j]) {
						errs <- fmt.Errorf("goroutine %d, %v: y[%d] = %v, want %v", g, s, j, got[j], c.want[j])
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if live := d.Stats().LiveBytes; live != base {
		t.Errorf("live bytes %d, %d before", live, base)
	}
	for _, c := range cases {
		releaseAll(c.in)
	}
	if got := spectralCachedBytes(d); got > spectralCacheLimit {
		t.Errorf("%d bytes cached, bound %d", got, spectralCacheLimit)
	}
}

// TestSpectralConvMirror checks that a GPU computes the CPU's bits (it skips without one): every
// step is a mirrored kernel, so the spectral ops need no rows of their own.
func TestSpectralConvMirror(t *testing.T) {
	ds := devices(t)
	if len(ds) < 2 {
		t.Skip("no CUDA device: the steps are mirrored kernels, checked by TestMirror")
	}
	for _, s := range []spectralRef{{3, 8, 2, 5}, {2, 33, 6, 17}, {4, 1000, 16, 64}} {
		r := rand.New(rand.NewPCG(11, uint64(s.grid)))
		n, nw := s.batch*s.grid*s.width, s.modes*s.width*s.width
		in := [][]float32{randomFloat32s(r, n), randomFloat32s(r, nw), randomFloat32s(r, nw), randomFloat32s(r, n)}
		var outs [2][][]float32
		for i, d := range ds[:2] {
			b := make([]*Buffer, 4)
			for k := range b {
				b[k] = mustBuf(t, d, in[k])
			}
			y, err := SpectralConv1dBatched(b[0], b[1], b[2], s.batch, s.grid, s.width, s.modes)
			outs[i] = append(outs[i], download(t, y, err))
			dx, dwr, dwi, err := SpectralConv1dBatchedBwd(b[0], b[1], b[2], b[3], s.batch, s.grid, s.width, s.modes)
			if err != nil {
				t.Fatal(err)
			}
			outs[i] = append(outs[i], download(t, dx, nil), download(t, dwr, nil), download(t, dwi, nil))
			releaseAll(b)
		}
		for k, name := range []string{"y", "dx", "dwRe", "dwIm"} {
			spectralSameBits(t, s.String()+" "+name, outs[0][k], outs[1][k])
		}
	}
}

// BenchmarkSpectralConv runs the spectral convolution at the size of issue 24's benchmark
// (batch 64, width 64, grid 4096, 64 modes), forward and forward+backward.
func BenchmarkSpectralConv(b *testing.B) {
	const batch, width, grid, modes = 64, 64, 4096, 64
	d := CPU()
	r := rand.New(rand.NewPCG(1, 2))
	x := mustBufB(b, d, randomFloat32s(r, batch*grid*width))
	wr := mustBufB(b, d, randomFloat32s(r, modes*width*width))
	wi := mustBufB(b, d, randomFloat32s(r, modes*width*width))
	dy := mustBufB(b, d, randomFloat32s(r, batch*grid*width))
	defer releaseAll([]*Buffer{x, wr, wi, dy})
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			y, err := SpectralConv1dBatched(x, wr, wi, batch, grid, width, modes)
			if err != nil {
				b.Fatal(err)
			}
			y.Release()
		}
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
	})
}

func mustBufB(b *testing.B, d *Device, v []float32) *Buffer {
	buf, err := FromFloat32(d, v)
	if err != nil {
		b.Fatal(err)
	}
	return buf
}
