package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/dsp/fourier"
)

// The data: viscous Burgers' equation
//
//	u_t + u·u_x = ν·u_xx,   x in [0, 1) periodic,   0 <= t <= 1,
//
// from random smooth initial conditions u0, the pairs (u0, u(t = 1)) sampled at -grid points
// x_j = j/grid. Everything is computed in float64; the samples are rounded to float32 at the end.
//
// Initial conditions: a Gaussian random field N(0, 625·(-Δ + 25·I)^-2), the FNO paper's, with
// the constant mode left out (the mean is conserved, and a mean m only translates the solution by
// m·t). In the Fourier basis e^(2πikx) the covariance is diagonal: the mode k has the variance
// λ_k = 625/((2πk)² + 25)², so u0 has a standard deviation of about 0.6 and lives in its first
// few modes (λ_1 = 0.15, λ_2 = 0.019, λ_4 = 0.0014), with a k^-4 tail cut at the solver's
// dealiasing limit.
//
// Solver: Fourier pseudo-spectral on n = solverPoints(ν) points (gonum's real FFT), the product
// u² formed on the grid and dealiased by the 2/3 rule (modes |k| >= n/3 are zero at all times),
// time stepping by ETDRK4 (exponential time differencing, fourth order): the diffusion
// L = -ν(2πk)² is integrated exactly, the advection -(u²/2)_x by the scheme's Runge-Kutta
// stages, at a step that keeps dt·(2π·k_max)·max|u0| <= courant (max|u| cannot grow, by the
// maximum principle of viscous Burgers). The samples at the -grid points are the solver's
// Fourier series evaluated exactly there (each mode aliased onto the output grid, no
// interpolation), so -grid may be finer or coarser than n.

// burgers is a Burgers solver on n points for the viscosity nu, not safe for concurrent use.
type burgers struct {
	n      int
	nu     float64
	kmax   int // the largest mode kept by the 2/3 rule: k <= kmax, 3·kmax < n
	fft    *fourier.FFT
	u      []float64    // workspace: values on the grid
	spec   []complex128 // workspace: a spectrum of n/2+1 modes
	k1, k2 []complex128 // the nonlinear term at the stages
	k3, k4 []complex128
	tmp    []complex128 // the stages' arguments
	tmp2   []complex128
	tmp3   []complex128
}

// courant bounds dt·(2π·kmax)·max|u0|: the advection's fastest mode turns by at most half a
// radian per step, well inside the stability region of ETDRK4's Runge-Kutta stages (which
// reaches about 2.8 along the imaginary axis). The time stepping's error in u(1) is then about
// 1e-7 of max|u(1)| at ν = 0.1 (TestBurgersConvergesInTime; 1e-9 of max|u0|): small against the
// model's 2%, and near float32's 6e-8, in which the samples are kept.
const courant = 0.5

// solverPoints returns the number of points the solver uses for the viscosity nu: a power of two
// of at least 9/ν and at least 64. The kept modes, n/3, then reach 3/ν, beyond which the
// spectrum of a solution with |u| of order 1 is negligible: twice the points change u(1) by less
// than 1e-9 of its size (TestBurgersConvergesInSpace, ν = 0.1 and 0.02).
func solverPoints(nu float64) int {
	n := 64
	for float64(n) < 9/nu && n < 1<<20 {
		n *= 2
	}
	return n
}

func newBurgers(n int, nu float64) *burgers {
	m := n/2 + 1
	return &burgers{
		n: n, nu: nu, kmax: (n - 1) / 3, fft: fourier.NewFFT(n),
		u: make([]float64, n), spec: make([]complex128, m),
		k1: make([]complex128, m), k2: make([]complex128, m), k3: make([]complex128, m),
		k4: make([]complex128, m), tmp: make([]complex128, m), tmp2: make([]complex128, m),
		tmp3: make([]complex128, m),
	}
}

// nonlinear writes into dst the advection term -(u²/2)_x of the spectrum v (gonum's unnormalized
// coefficients of u, modes above kmax zero): u on the grid, squared, transformed back, and
// multiplied by -i·2πk/2, dealiased.
func (b *burgers) nonlinear(dst, v []complex128) {
	b.fft.Sequence(b.u, v)
	scale := 1 / float64(b.n) // Sequence is unnormalized
	for j, x := range b.u {
		x *= scale
		b.u[j] = x * x
	}
	b.fft.Coefficients(b.spec, b.u)
	for k := range dst {
		if k > b.kmax {
			dst[k] = 0
			continue
		}
		dst[k] = complex(0, -math.Pi*float64(k)) * b.spec[k] // -i·(2πk)/2
	}
}

// solve advances the spectrum v (gonum's unnormalized coefficients of u0, n/2+1 of them, modes
// above kmax zero) from t = 0 to t = T in place, with steps of at most dtMax, by ETDRK4 (Cox and
// Matthews' exponential time differencing of fourth order, with Kassam and Trefethen's contour
// integrals for its coefficients): for û' = L·û + N(û) with L = -ν(2πk)² per mode,
//
//	a = E2·û + Q·N(û),  b = E2·û + Q·N(a),  c = E2·a + Q·(2N(b) - N(û)),
//	û ← E·û + f1·N(û) + 2·f2·(N(a) + N(b)) + f3·N(c),
//
// E = e^(Lh), E2 = e^(Lh/2) and Q, f1, f2, f3 the φ-functions of Lh (etdCoefficients). Stiff
// modes (ν(2πk)²h >> 1) are integrated accurately, which the plain integrating factor is not.
func (b *burgers) solve(v []complex128, T, dtMax float64) {
	steps := max(int(math.Ceil(T/dtMax)), 1)
	h := T / float64(steps)
	c := etdCoefficients(b.nu, h, len(v))
	nu, na, nb, nc := b.k1, b.k2, b.k3, b.k4
	a, bb, cc := b.tmp, b.tmp2, b.tmp3
	for range steps {
		b.nonlinear(nu, v)
		for k := range v {
			a[k] = complex(c.e2[k], 0)*v[k] + complex(c.q[k], 0)*nu[k]
		}
		b.nonlinear(na, a)
		for k := range v {
			bb[k] = complex(c.e2[k], 0)*v[k] + complex(c.q[k], 0)*na[k]
		}
		b.nonlinear(nb, bb)
		for k := range v {
			cc[k] = complex(c.e2[k], 0)*a[k] + complex(c.q[k], 0)*(2*nb[k]-nu[k])
		}
		b.nonlinear(nc, cc)
		for k := range v {
			v[k] = complex(c.e[k], 0)*v[k] + complex(c.f1[k], 0)*nu[k] +
				complex(2*c.f2[k], 0)*(na[k]+nb[k]) + complex(c.f3[k], 0)*nc[k]
		}
	}
}

// etd holds ETDRK4's coefficients per mode.
type etd struct{ e, e2, q, f1, f2, f3 []float64 }

// etdCoefficients returns ETDRK4's coefficients for the modes 0..m-1 at the step h:
//
//	Q = h·(e^(z/2) - 1)/z,  f1 = h·(-4 - z + e^z·(4 - 3z + z²))/z³,
//	f2 = h·(2 + z + e^z·(z - 2))/z³,  f3 = h·(-4 - 3z - z² + e^z·(4 - z))/z³,
//
// z = Lh, each the mean of the expression over 32 points z + e^(iθ) on a unit circle around z
// (the functions are analytic, so the mean is their value at z, without the cancellation that
// the formulas suffer near z = 0).
func etdCoefficients(nu, h float64, m int) etd {
	const points = 32
	c := etd{make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)}
	for k := range m {
		w := 2 * math.Pi * float64(k)
		z := -nu * w * w * h
		c.e[k], c.e2[k] = math.Exp(z), math.Exp(z/2)
		var q, f1, f2, f3 complex128
		for j := range points {
			r := complex(z, 0) + cmplx.Exp(complex(0, math.Pi*(float64(j)+0.5)/points))
			er := cmplx.Exp(r)
			r3 := r * r * r
			q += (cmplx.Exp(r/2) - 1) / r
			f1 += (-4 - r + er*(4-3*r+r*r)) / r3
			f2 += (2 + r + er*(r-2)) / r3
			f3 += (-4 - 3*r - r*r + er*(4-r)) / r3
		}
		// The points come in conjugate pairs (θ and -θ would too): the upper half circle's mean
		// of the real parts is the full circle's mean.
		c.q[k] = h * real(q) / points
		c.f1[k] = h * real(f1) / points
		c.f2[k] = h * real(f2) / points
		c.f3[k] = h * real(f3) / points
	}
	return c
}

// dtFor returns the largest time step the Courant bound allows for an initial condition whose
// largest magnitude on the grid is umax.
func (b *burgers) dtFor(umax float64) float64 {
	return courant / (2 * math.Pi * float64(b.kmax) * max(umax, 1e-12))
}

// values returns u on the solver's grid from the spectrum v.
func (b *burgers) values(v []complex128) []float64 {
	u := b.fft.Sequence(nil, v)
	for j := range u {
		u[j] /= float64(b.n)
	}
	return u
}

// sampleAt evaluates the Fourier series of the spectrum v (gonum's unnormalized coefficients on
// n points, so u(x) = (1/n)·Σ_k v_k e^(2πikx) over k in [-n/2, n/2], v_-k = conj(v_k)) at the g
// points j/g exactly: each signed mode is folded onto the mode it aliases to on g points, then
// one real inverse FFT of length g. Only modes k < n/2 may be nonzero (the solver's are).
func sampleAt(v []complex128, n, g int, fft *fourier.FFT) []float64 {
	d := make([]complex128, g/2+1)
	add := func(k int, c complex128) { // the signed mode k with coefficient c
		b := ((k % g) + g) % g
		switch {
		case b == 0 || 2*b == g: // self-conjugate bins: both signs add up to a real value
			d[b] += c
		case 2*b < g: // the other half of the bins is the conjugate mirror, implied
			d[b] += c
		}
	}
	add(0, v[0])
	for k := 1; k < len(v) && 2*k < n; k++ {
		if v[k] != 0 {
			add(k, v[k])
			add(-k, cmplx.Conj(v[k]))
		}
	}
	// Sequence computes d_0 + 2·Re Σ d_b e^(2πibj/g) (+ d_g/2·(-1)^j for even g), which is the
	// sum of every signed mode at the points: the self-conjugate bins hold both signs (a real
	// value), an interior bin b its modes and, implied, their conjugates at g - b.
	u := fft.Sequence(nil, d)
	for j := range u {
		u[j] /= float64(n)
	}
	return u
}

// randomInitial returns the spectrum (gonum's unnormalized coefficients on n points) of a draw of
// the Gaussian random field N(0, 625(-Δ + 25I)^-2) without its constant mode, modes above kmax
// zero: u0 = Σ_{1<=k<=kmax} 2·Re(c_k e^(2πikx)) with c_k = sqrt(λ_k/2)·(ξ - iη), ξ and η
// independent standard normal draws.
func randomInitial(rng *rand.Rand, n, kmax int) []complex128 {
	v := make([]complex128, n/2+1)
	for k := 1; k <= kmax; k++ {
		w := 2 * math.Pi * float64(k)
		lambda := 625 / ((w*w + 25) * (w*w + 25))
		s := math.Sqrt(lambda/2) * float64(n)
		v[k] = complex(s*rng.NormFloat64(), -s*rng.NormFloat64())
	}
	return v
}

// dataParams fix a data set: its file name is a hash of them, and its header repeats them.
type dataParams struct {
	Nu          float64
	Grid        int
	Train, Test int
	Seed        uint64
}

// dataVersion changes whenever the generator's output for the same parameters changes, so that
// a cache written by an older generator is not reused.
const dataVersion = 1

// Dataset holds pairs (u0, u(t = 1)) at Grid points.
type Dataset struct {
	Grid   int
	U0, U1 []float32 // Len() rows of Grid values
}

// Len returns the number of pairs.
func (d *Dataset) Len() int { return len(d.U0) / max(d.Grid, 1) }

// generate solves the Burgers problems of p: p.Train training and p.Test test pairs, the pair i
// of a split drawn from its own generator (seeded by p.Seed, the split and i), so the data do
// not depend on the number of goroutines that solve them (GOMAXPROCS of them).
func generate(p dataParams) (train, test *Dataset) {
	n := solverPoints(p.Nu)
	make1 := func(count int, split uint64) *Dataset {
		ds := &Dataset{Grid: p.Grid, U0: make([]float32, count*p.Grid), U1: make([]float32, count*p.Grid)}
		var wg sync.WaitGroup
		workers := min(runtime.GOMAXPROCS(0), max(count, 1))
		for w := range workers {
			wg.Go(func() {
				b := newBurgers(n, p.Nu)
				out := fourier.NewFFT(p.Grid)
				for i := w; i < count; i += workers {
					rng := rand.New(rand.NewPCG(p.Seed, split<<32|uint64(i)))
					v := randomInitial(rng, n, b.kmax)
					u0 := sampleAt(v, n, p.Grid, out)
					umax := 0.0
					for _, x := range b.values(v) {
						umax = max(umax, math.Abs(x))
					}
					b.solve(v, 1, b.dtFor(umax))
					u1 := sampleAt(v, n, p.Grid, out)
					for j := range p.Grid {
						ds.U0[i*p.Grid+j] = float32(u0[j])
						ds.U1[i*p.Grid+j] = float32(u1[j])
					}
				}
			})
		}
		wg.Wait()
		return ds
	}
	return make1(p.Train, 1), make1(p.Test, 2)
}

// dataMagic starts a cache file.
const dataMagic = "TLFNOBG1"

// cachePath returns the cache file of p in dir: the parameters' hash in the name, so that
// another configuration has another file.
func cachePath(dir string, p dataParams) string {
	h := sha256.Sum256(fmt.Appendf(nil, "burgers v%d nu=%x grid=%d train=%d test=%d seed=%d",
		dataVersion, math.Float64bits(p.Nu), p.Grid, p.Train, p.Test, p.Seed))
	return filepath.Join(dir, fmt.Sprintf("burgers-nu%g-grid%d-%x.bin", p.Nu, p.Grid, h[:8]))
}

// loadOrGenerate returns the data of p from its cache file in dir when the file is there and
// intact, else generates them and writes the file (atomically: a temporary file renamed). It
// says which it did. A cache that cannot be written is reported and the data are used anyway.
func loadOrGenerate(dir string, p dataParams) (train, test *Dataset, note string, err error) {
	if p.Grid < 1 || p.Train < 1 || p.Test < 1 || !(p.Nu > 0) || math.IsInf(p.Nu, 1) {
		return nil, nil, "", fmt.Errorf("fno: data: -grid, -train, -test and -nu must be positive (and -nu finite)")
	}
	if hi, lo := bits.Mul64(uint64(p.Grid), uint64(p.Train+p.Test)); hi != 0 || lo > 1<<31 {
		return nil, nil, "", fmt.Errorf("fno: data: %d pairs of %d points are too many", p.Train+p.Test, p.Grid)
	}
	path := cachePath(dir, p)
	if train, test, err = readCache(path, p); err == nil {
		return train, test, "cached in " + path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		note = fmt.Sprintf(" (the cache %s was unusable: %v)", path, err)
	}
	train, test = generate(p)
	if werr := writeCache(path, p, train, test); werr != nil {
		return train, test, "generated, not cached: " + werr.Error() + note, nil
	}
	return train, test, "generated and cached in " + path + note, nil
}

// The cache file: dataMagic, the header (version, ν, grid, train, test, seed: little-endian
// 64-bit words), then for the training and the test split the rows of u0 and then of u1 as
// little-endian float32, and last the CRC-32 (IEEE) of everything before it.
func header(p dataParams) []byte {
	h := []byte(dataMagic)
	for _, w := range []uint64{dataVersion, math.Float64bits(p.Nu), uint64(p.Grid), uint64(p.Train), uint64(p.Test), p.Seed} {
		h = binary.LittleEndian.AppendUint64(h, w)
	}
	return h
}

func writeCache(path string, p dataParams, train, test *Dataset) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".burgers-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	crc := crc32.NewIEEE()
	w := bufio.NewWriter(io.MultiWriter(f, crc))
	w.Write(header(p))
	var buf [4]byte
	for _, ds := range []*Dataset{train, test} {
		for _, part := range [][]float32{ds.U0, ds.U1} {
			for _, x := range part {
				binary.LittleEndian.PutUint32(buf[:], math.Float32bits(x))
				w.Write(buf[:])
			}
		}
	}
	err = w.Flush()
	if err == nil {
		_, err = f.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return err
}

// readCache reads the cache file of p: an error when it is missing (os.ErrNotExist), of another
// length, header or checksum.
func readCache(path string, p dataParams) (train, test *Dataset, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	h := header(p)
	want := len(h) + 4*2*p.Grid*(p.Train+p.Test) + 4
	switch {
	case len(raw) != want:
		return nil, nil, fmt.Errorf("%d bytes, want %d", len(raw), want)
	case string(raw[:len(h)]) != string(h):
		return nil, nil, errors.New("another header")
	case crc32.ChecksumIEEE(raw[:want-4]) != binary.LittleEndian.Uint32(raw[want-4:]):
		return nil, nil, errors.New("checksum mismatch")
	}
	at := len(h)
	read := func(count int) *Dataset {
		ds := &Dataset{Grid: p.Grid, U0: make([]float32, count*p.Grid), U1: make([]float32, count*p.Grid)}
		for _, part := range [][]float32{ds.U0, ds.U1} {
			for i := range part {
				part[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[at:]))
				at += 4
			}
		}
		return ds
	}
	train = read(p.Train)
	test = read(p.Test)
	return train, test, nil
}
