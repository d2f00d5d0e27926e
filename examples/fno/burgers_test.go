package main

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

// spectrumOf returns gonum's unnormalized coefficients of the function f sampled at n points.
func spectrumOf(f func(x float64) float64, n int) []complex128 {
	u := make([]float64, n)
	for j := range u {
		u[j] = f(float64(j) / float64(n))
	}
	return fourier.NewFFT(n).Coefficients(nil, u)
}

// maxDiff returns max |a_i - b_i|.
func maxDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestBurgersColeHopf compares the solver with an exact solution: by the Cole-Hopf transform
// u = -2ν·φ_x/φ solves Burgers' equation when φ solves the heat equation φ_t = ν·φ_xx, and
// φ = a0 + a1·e^(-4π²νt)·cos(2πx) gives u = 4πν·a1·e^(-4π²νt)·sin(2πx)/φ.
func TestBurgersColeHopf(t *testing.T) {
	for _, tc := range []struct{ nu, a1 float64 }{{0.1, 0.9}, {0.05, 0.8}, {0.02, 0.5}} {
		exact := func(tm float64) func(x float64) float64 {
			return func(x float64) float64 {
				d := tc.a1 * math.Exp(-4*math.Pi*math.Pi*tc.nu*tm)
				return 4 * math.Pi * tc.nu * d * math.Sin(2*math.Pi*x) / (1 + d*math.Cos(2*math.Pi*x))
			}
		}
		n := solverPoints(tc.nu)
		b := newBurgers(n, tc.nu)
		v := spectrumOf(exact(0), n)
		for k := b.kmax + 1; k < len(v); k++ {
			v[k] = 0 // the solver's invariant: the dealiased modes are zero
		}
		umax := 0.0
		for _, x := range b.values(v) {
			umax = max(umax, math.Abs(x))
		}
		b.solve(v, 1, b.dtFor(umax))
		want := make([]float64, n)
		for j := range want {
			want[j] = exact(1)(float64(j) / float64(n))
		}
		err := maxDiff(b.values(v), want)
		t.Logf("ν = %g, n = %d, max|u0| = %.3f: max error at t = 1: %.2e", tc.nu, n, umax, err)
		if err > 1e-9 {
			t.Errorf("ν = %g: max error %.3g at t = 1 against the Cole-Hopf solution, want <= 1e-9", tc.nu, err)
		}
	}
}

// TestBurgersInvariants checks, on random initial conditions, what the equation guarantees: the
// mean stays (0 here), the energy ∫u² decreases for ν > 0 (d/dt ∫u²/2 = -ν∫u_x²), and so does
// max|u| (the maximum principle); without viscosity the energy is kept.
func TestBurgersInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	energy := func(u []float64) float64 {
		s := 0.0
		for _, x := range u {
			s += x * x
		}
		return s / float64(len(u))
	}
	for range 3 {
		const nu = 0.1
		n := solverPoints(nu)
		b := newBurgers(n, nu)
		v := randomInitial(rng, n, b.kmax)
		u := b.values(v)
		e, m := energy(u), slices.Max(u)-slices.Min(u)
		dt := b.dtFor(max(slices.Max(u), -slices.Min(u)))
		for step := range 10 {
			b.solve(v, 0.1, dt)
			u = b.values(v)
			mean := real(v[0]) / float64(n)
			if math.Abs(mean) > 1e-13 {
				t.Errorf("step %d: mean %.3g, want 0", step, mean)
			}
			if e2 := energy(u); !(e2 < e) {
				t.Errorf("step %d: energy %.6g after %.6g: it must decrease", step, e2, e)
			} else {
				e = e2
			}
			if m2 := slices.Max(u) - slices.Min(u); m2 > m*(1+1e-9) {
				t.Errorf("step %d: range of u %.6g after %.6g: it must not grow", step, m2, m)
			} else {
				m = m2
			}
		}
	}
	// Inviscid (ν = 0): the dealiased pseudo-spectral solution is the Fourier-Galerkin one, which
	// keeps the energy exactly, shock or not; what changes it is the time stepping's error only.
	b := newBurgers(256, 0)
	v := randomInitial(rng, 256, b.kmax)
	u0 := b.values(v)
	b.solve(v, 0.2, b.dtFor(max(slices.Max(u0), -slices.Min(u0)))/8)
	if mean := real(v[0]) / 256; math.Abs(mean) > 1e-13 {
		t.Errorf("ν = 0: mean %.3g at t = 0.2, want 0", mean)
	}
	if rel := math.Abs(energy(b.values(v))/energy(u0) - 1); rel > 1e-9 {
		t.Errorf("ν = 0: energy changed by a relative %.3g over t = 0.2, want <= 1e-9", rel)
	}
}

// TestBurgersConvergesInTime: halving the time step changes u(1) by less than 5e-7 of its size
// (it changes by about 1e-7: the scheme is of fourth order, the step set by courant).
func TestBurgersConvergesInTime(t *testing.T) {
	const nu = 0.1
	n := solverPoints(nu)
	rng := rand.New(rand.NewPCG(1, 2))
	b := newBurgers(n, nu)
	v0 := randomInitial(rng, n, b.kmax)
	u0 := b.values(v0)
	dt := b.dtFor(max(slices.Max(u0), -slices.Min(u0)))
	v1, v2 := slices.Clone(v0), slices.Clone(v0)
	b.solve(v1, 1, dt)
	b.solve(v2, 1, dt/2)
	u1, u2 := b.values(v1), b.values(v2)
	scale := max(slices.Max(u2), -slices.Min(u2))
	d := maxDiff(u1, u2)
	t.Logf("halving dt changed u(1) by %.3g, %.3g of max|u(1)|", d, d/scale)
	if d > 5e-7*scale {
		t.Errorf("halving dt changed u(1) by %.3g (max|u(1)| = %.3g), want <= 5e-7 relative", d, scale)
	}
}

// TestBurgersConvergesInSpace: the same initial condition solved on solverPoints(ν) points and on
// twice as many gives the same u(1) at the coarse points, for every ν the example is run with.
func TestBurgersConvergesInSpace(t *testing.T) {
	for _, nu := range []float64{0.1, 0.02} {
		n := solverPoints(nu)
		rng := rand.New(rand.NewPCG(3, 4))
		coarse, fine := newBurgers(n, nu), newBurgers(2*n, nu)
		v := randomInitial(rng, n, coarse.kmax)
		vf := make([]complex128, n+1) // the same modes on 2n points (coefficients scale with n)
		for k, c := range v {
			vf[k] = 2 * c
		}
		u0 := coarse.values(v)
		dt := fine.dtFor(max(slices.Max(u0), -slices.Min(u0))) // the same step for both
		coarse.solve(v, 1, dt)
		fine.solve(vf, 1, dt)
		uc, uf := coarse.values(v), sampleAt(vf, 2*n, n, fourier.NewFFT(n))
		scale := max(slices.Max(uf), -slices.Min(uf))
		if d := maxDiff(uc, uf); d > 1e-9*scale {
			t.Errorf("ν = %g: %d and %d points differ by %.3g (max|u(1)| = %.3g), want <= 1e-9 relative", nu, n, 2*n, d, scale)
		}
	}
}

// TestSampleAt compares the exact evaluation of a Fourier series at g points with a direct sum,
// for output grids coarser and finer than the spectrum's, odd and even.
func TestSampleAt(t *testing.T) {
	const n = 64
	rng := rand.New(rand.NewPCG(5, 6))
	v := make([]complex128, n/2+1)
	v[0] = complex(rng.NormFloat64(), 0)
	for k := 1; k < n/2; k++ {
		v[k] = complex(rng.NormFloat64(), rng.NormFloat64())
	}
	for _, g := range []int{1, 2, 3, 7, 16, 31, 64, 100, 128, 255} {
		got := sampleAt(v, n, g, fourier.NewFFT(g))
		for j := range g {
			x := float64(j) / float64(g)
			want := real(v[0])
			for k := 1; k < n/2; k++ {
				want += 2 * real(v[k]*cmplx.Exp(complex(0, 2*math.Pi*float64(k)*x)))
			}
			want /= n
			if math.Abs(got[j]-want) > 1e-12 {
				t.Fatalf("g = %d: u(%d/%d) = %.15g, want %.15g", g, j, g, got[j], want)
			}
		}
	}
}

// TestDataCache: the data are the same whatever the number of goroutines, a second call reads
// the cache file, a damaged file is regenerated, and other parameters use another file.
func TestDataCache(t *testing.T) {
	dir := t.TempDir()
	p := dataParams{Nu: 0.1, Grid: 48, Train: 5, Test: 3, Seed: 9}
	old := runtime.GOMAXPROCS(1)
	tr1, te1 := generate(p)
	runtime.GOMAXPROCS(old)
	tr, te, note, err := loadOrGenerate(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(note)
	same := func(a, b *Dataset) bool {
		return slices.Equal(a.U0, b.U0) && slices.Equal(a.U1, b.U1) && a.Grid == b.Grid
	}
	if !same(tr, tr1) || !same(te, te1) {
		t.Fatal("the data depend on GOMAXPROCS")
	}
	if tr.Len() != 5 || te.Len() != 3 {
		t.Fatalf("%d and %d pairs, want 5 and 3", tr.Len(), te.Len())
	}
	tr2, te2, note, err := loadOrGenerate(dir, p)
	if err != nil || !same(tr, tr2) || !same(te, te2) {
		t.Fatalf("second load: %v, same data: %v", err, err == nil && same(tr, tr2) && same(te, te2))
	}
	if want := "cached in " + cachePath(dir, p); note != want {
		t.Errorf("second load: %q, want %q", note, want)
	}
	raw, err := os.ReadFile(cachePath(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	if err := os.WriteFile(cachePath(dir, p), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readCache(cachePath(dir, p), p); err == nil {
		t.Error("a damaged cache file was read without error")
	}
	tr3, _, note, err := loadOrGenerate(dir, p)
	if err != nil || !same(tr, tr3) {
		t.Fatalf("after damage: %v, %q", err, note)
	}
	q := p
	q.Nu = 0.05
	if cachePath(dir, q) == cachePath(dir, p) {
		t.Error("two viscosities share a cache file")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 1 {
		t.Errorf("files in the cache directory: %v, want one", files)
	}
}
