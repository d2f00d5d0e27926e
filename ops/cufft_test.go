package ops

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/internal/testenv"
)

// cufftRelL2 is the Rel tier of the cuFFT path: the relative L2 distance per row between cuFFT's
// result and our exact FFT's, 8 * log2(n) * 2^-24 (each is within 2 to 4 * log2(n) * 2^-24 of
// the exact transform: fftBound; cuFFT's own error is of the same order).
func cufftRelL2(n int) float64 { return 8 * math.Max(1, math.Log2(float64(n))) * 0x1p-24 }

// cufftMirrorTol is the elementwise tolerance of the cuFFT rows of the mirror table, relative to
// the output's largest magnitude M (|got - want| <= tol * max(1, M): a tier with byMax): an
// element's error is at most the row's L2 error, cufftRelL2 * ||X||_2 <= cufftRelL2 * sqrt(len) * M,
// with a factor 4 of margin. (Scaled by each element's own magnitude instead, as the first GPU
// run did, a small bin of a large spectrum failed by a factor 2-3 while TestCUFFT's row errors
// were 0.26-0.77 * log2(n) * 2^-24.)
func cufftMirrorTol(n int) float64 { return cufftRelL2(n) * math.Sqrt(float64(n)) * 4 }

// inDeterministicMode returns run with deterministic mode on for the call: the exact FFT rows of
// the mirror table run our FFT on every device.
func inDeterministicMode(run func(d *Device, ins []*Buffer, n int) ([]*Buffer, error)) func(d *Device, ins []*Buffer, n int) ([]*Buffer, error) {
	return func(d *Device, ins []*Buffer, n int) ([]*Buffer, error) {
		defer SetDeterministic(Deterministic())
		SetDeterministic(true)
		return run(d, ins, n)
	}
}

// cufftMirrorCases returns the FFT family's exact cases (run in deterministic mode) followed by
// the Rel(cufftMirrorTol(n)) rows of the cuFFT tier: rfft1d_packed_cufft and irfft1d_packed_cufft
// of batch 1 and 3 at every length of fftMirrorLengths, in fast mode, against the exact path (the
// same call in deterministic mode) on the same device. On the CPU both run our FFT.
func cufftMirrorCases(exact []mirrorCase) []mirrorCase {
	cases := make([]mirrorCase, 0, len(exact)+4*len(fftMirrorLengths))
	for _, c := range exact {
		c.run = inDeterministicMode(c.run)
		cases = append(cases, c)
	}
	for _, n := range fftMirrorLengths {
		bins := n/2 + 1
		for _, batch := range []int{1, 3} {
			tag := fmt.Sprintf("%dx%d", batch, n)
			fwd := func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				y, err := Rfft1dPacked(in[0], batch, n)
				return []*Buffer{y}, err
			}
			inv := func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				y, err := Irfft1dPacked(in[0], batch, n)
				return []*Buffer{y}, err
			}
			fast := func(run func(d *Device, ins []*Buffer, n int) ([]*Buffer, error)) func(d *Device, ins []*Buffer, n int) ([]*Buffer, error) {
				return func(d *Device, ins []*Buffer, n int) ([]*Buffer, error) {
					defer SetDeterministic(Deterministic())
					SetDeterministic(false)
					return run(d, ins, n)
				}
			}
			cases = append(cases,
				mirrorCase{name: "rfft1d_packed_cufft/" + tag, ins: 1, finite: true, lens: []int{batch * n}, sizes: []int{batch * n},
					run: fast(fwd), tier: tier{rel: cufftMirrorTol(n), ref: inDeterministicMode(fwd), byMax: true}},
				mirrorCase{name: "irfft1d_packed_cufft/" + tag, ins: 1, finite: true, lens: []int{2 * batch * bins}, sizes: []int{batch * n},
					run: fast(inv), tier: tier{rel: cufftMirrorTol(n), ref: inDeterministicMode(inv), byMax: true}})
		}
	}
	return cases
}

// TestCUFFTPolicy: the size policy and its table.
func TestCUFFTPolicy(t *testing.T) {
	for _, c := range []struct {
		n, batch int
		want     bool
	}{{1, 1, true}, {8192, 4096, true}, {6000, 3, true}, {0, 1, false}, {8, 0, false},
		{1 << 20, 1 << 11, false}, {1 << 20, 1<<10 - 1, true}} {
		if got := cufftPreferred(c.n, c.batch); got != c.want {
			t.Errorf("cufftPreferred(%d, %d) = %v, want %v", c.n, c.batch, got, c.want)
		}
	}
	old := cufftSlower
	defer func() { cufftSlower = old }()
	cufftSlower = []struct{ nMin, nMax, batchMax int }{{1, 16, 0}, {1000, 1000, 8}}
	for _, c := range []struct {
		n, batch int
		want     bool
	}{{1, 1, false}, {16, 4096, false}, {17, 1, true}, {1000, 8, false}, {1000, 9, true}} {
		if got := cufftPreferred(c.n, c.batch); got != c.want {
			t.Errorf("with a table: cufftPreferred(%d, %d) = %v, want %v", c.n, c.batch, got, c.want)
		}
	}
}

// TestRecipFloat32: the inverse's scale is our irfft's (cpu.RfftPlan.Scale, TorchLean's 1.0f/n).
func TestRecipFloat32(t *testing.T) {
	ns := []int{3 << 20, 1<<24 - 1, 1 << 24, 1<<24 + 1, 100003, 999983}
	for n := 1; n <= 3000; n++ {
		ns = append(ns, n)
	}
	for _, n := range ns {
		want := float32(1) / float32(n) // exact float32 division for n < 2^24
		if n <= 1<<24 {
			if got := recipFloat32(n); got != want {
				t.Errorf("n=%d: recipFloat32 %g, 1.0f/n %g", n, got, want)
			}
		}
		if n <= 3000 {
			p, err := cpu.NewRfftPlan(n)
			if err != nil {
				t.Fatal(err)
			}
			if got := recipFloat32(n); got != p.Scale {
				t.Errorf("n=%d: recipFloat32 %g, our irfft's scale %g", n, got, p.Scale)
			}
		}
	}
}

// cufftTestLengths are the lengths TestCUFFT runs.
var cufftTestLengths = []int{1, 2, 3, 5, 8, 97, 1000, 1024, 4096, 8192}

// TestCUFFT (GPU): in fast mode the cuFFT tier is within cufftRelL2(n) of our FFT (relative L2
// per row, forward and inverse, batch 1 and 3), leaves its input unchanged, ignores the
// imaginary parts of bins 0 and n/2 as the seeds' inverse does; plans are bounded and freed by
// Collect; deterministic mode never executes cuFFT.
func TestCUFFT(t *testing.T) {
	d, err := Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	defer SetDeterministic(Deterministic())
	SetDeterministic(false)
	if tier, why := d.FFTBackend(1024, 3); tier != FFTCUFFT {
		if !strings.HasPrefix(why, "no cuFFT: ") { // libcufft loads but the tier is off: a failure
			t.Fatalf("cuFFT tier unavailable: %s", why)
		}
		t.Skipf("cuFFT tier unavailable (as driver's TestGPUCUFFT skips): %s", why)
	}
	rowsL2 := func(got, want []float32, rows, per int) float64 {
		worst := 0.0
		for r := range rows {
			var num, den float64
			for i := r * per; i < (r+1)*per; i++ {
				e := float64(got[i]) - float64(want[i])
				num += e * e
				den += float64(want[i]) * float64(want[i])
			}
			worst = max(worst, math.Sqrt(num/math.Max(den, 1e-30)))
		}
		return worst
	}
	for _, n := range cufftTestLengths {
		for _, batch := range []int{1, 3} {
			bins := n/2 + 1
			host := fftRows(batch, n)
			x := mustBuf(t, d, host)
			SetDeterministic(true)
			want, err := Rfft1dPacked(x, batch, n)
			if err != nil {
				t.Fatal(err)
			}
			wantSpec, _ := want.Float32s()
			// A spectrum whose edge imaginary parts are not zero: the seeds' inverse ignores them.
			odd := slices.Clone(wantSpec)
			for r := range batch {
				odd[2*r*bins+1] = 3.5
				if n%2 == 0 {
					odd[2*(r*bins+bins-1)+1] = -7.25
				}
			}
			spec := mustBuf(t, d, odd)
			wantInv, err := Irfft1dPacked(spec, batch, n)
			if err != nil {
				t.Fatal(err)
			}
			wantY, _ := wantInv.Float32s()
			SetDeterministic(false)
			before := d.cufft.execs.Load()
			got, err := Rfft1dPacked(x, batch, n)
			if err != nil {
				t.Fatal(err)
			}
			gotInv, err := Irfft1dPacked(spec, batch, n)
			if err != nil {
				t.Fatal(err)
			}
			gotSpec, _ := got.Float32s()
			gotY, _ := gotInv.Float32s()
			tier, why := d.FFTBackend(n, batch)
			if ran := d.cufft.execs.Load() - before; (tier == FFTCUFFT) != (ran == 2) {
				t.Errorf("n=%d batch %d: FFTBackend %v %q but %d cuFFT executions", n, batch, tier, why, ran)
			}
			ef := rowsL2(gotSpec, wantSpec, batch, 2*bins)
			ei := rowsL2(gotY, wantY, batch, n)
			if ef > cufftRelL2(n) || ei > cufftRelL2(n) {
				t.Errorf("n=%d batch %d: relative L2 to our FFT %.3g (forward), %.3g (inverse) > %.3g",
					n, batch, ef, ei, cufftRelL2(n))
			}
			xs, _ := x.Float32s()
			ss, _ := spec.Float32s()
			if !slices.Equal(canonical(xs), canonical(host)) || !slices.Equal(canonical(ss), canonical(odd)) {
				t.Errorf("n=%d batch %d: an input changed", n, batch)
			}
			edge := 0.0
			for r := range batch {
				edge = max(edge, math.Abs(float64(gotSpec[2*r*bins+1])))
				if n%2 == 0 {
					edge = max(edge, math.Abs(float64(gotSpec[2*(r*bins+bins-1)+1])))
				}
			}
			t.Logf("n=%d batch %d: %v %s; forward %.2f, inverse %.2f * log2(n) * 2^-24; max |Im| at bins 0, n/2: %g",
				n, batch, tier, why, ef/cufftRelL2(n)*8, ei/cufftRelL2(n)*8, edge)
			releaseAll([]*Buffer{x, want, spec, wantInv, got, gotInv})
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	s := d.Stats()
	t.Logf("%s", s)
	if s.CUFFTPlans == 0 || s.CUFFTPlans > cufftPlanLimit {
		t.Errorf("%d cuFFT plans cached, want 1 .. %d", s.CUFFTPlans, cufftPlanLimit)
	}
	// The bound over more sizes than it holds.
	for k := range cufftPlanLimit + 2 {
		m := 64 + k
		z := mustBuf(t, d, fftRows(1, m))
		r, err := Rfft1dPacked(z, 1, m)
		if err != nil {
			t.Fatal(err)
		}
		releaseAll([]*Buffer{z, r})
	}
	if s := d.Stats(); s.CUFFTPlans != cufftPlanLimit {
		t.Errorf("%d cuFFT plans cached, want the bound %d", s.CUFFTPlans, cufftPlanLimit)
	}
	// Deterministic mode never executes cuFFT.
	SetDeterministic(true)
	before := d.cufft.execs.Load()
	z := mustBuf(t, d, fftRows(3, 1024))
	r, err := Rfft1dPacked(z, 3, 1024)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Irfft1dPacked(r, 3, 1024)
	if err != nil {
		t.Fatal(err)
	}
	releaseAll([]*Buffer{z, r, back})
	if got := d.cufft.execs.Load(); got != before {
		t.Errorf("deterministic mode executed cuFFT %d times", got-before)
	}
	if err := d.Collect(true); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.CUFFTPlans != 0 || s.CUFFTWorkBytes != 0 {
		t.Errorf("after Collect: %d cuFFT plans, %d bytes", s.CUFFTPlans, s.CUFFTWorkBytes)
	}
}

// BenchmarkFFTTier times the batched real transforms on CUDA with both tiers, for the policy
// table cufftSlower: BenchmarkFFTTier/<rfft|irfft>/<batch>x<n>/<cufft|exact> (exact: our FFT, as
// deterministic mode runs it). internal/bench/compare.py pairs the two tiers of each row.
func BenchmarkFFTTier(b *testing.B) {
	d, err := Open("cuda")
	if err != nil {
		b.Skip(err)
	}
	defer SetDeterministic(Deterministic())
	for _, sh := range [][2]int{{4096, 8192}, {4096, 6000}, {4096, 1000}} {
		batch, n := sh[0], sh[1]
		x, err := FromFloat32(d, fftRows(batch, n))
		if err != nil {
			b.Fatal(err)
		}
		spec, err := Rfft1dPacked(x, batch, n)
		if err != nil {
			b.Fatal(err)
		}
		for _, op := range []string{"rfft", "irfft"} {
			for _, tier := range []FFTTier{FFTCUFFT, FFTExact} {
				b.Run(fmt.Sprintf("%s/%dx%d/%s", op, batch, n, tier), func(b *testing.B) {
					SetDeterministic(tier == FFTExact)
					if got, why := d.FFTBackend(n, batch); got != tier {
						b.Skipf("tier %s unavailable: %s", tier, why)
					}
					in, f := x, Rfft1dPacked
					if op == "irfft" {
						in, f = spec, Irfft1dPacked
					}
					b.SetBytes(4 * int64(in.Len()))
					for b.Loop() {
						y, err := f(in, batch, n)
						if err != nil {
							b.Fatal(err)
						}
						y.Release()
					}
					if err := d.Sync(); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
		releaseAll([]*Buffer{x, spec})
	}
}
