package ops

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/torchlean-go/torchlean/cpu"
)

// fftTestLengths cover every path of the plans: no stage (1, 2), each radix alone and mixed,
// Bluestein for odd and even lengths (97, 194, 1006 = 2*503), powers of two and 6000.
var fftTestLengths = []int{1, 2, 3, 4, 5, 7, 8, 12, 97, 121, 143, 169, 194, 1000, 1006, 1024, 4096, 6000, 8192}

// fftBound is the relative L2 error bound of our rfft of length n against gonum's float64 FFT:
// c * log2(n) * 2^-24, c = 2 on the mixed-radix path and 4 through Bluestein (whose three FFTs
// of length M >= 2n-1 add their errors). Measured (TestRfftAgainstGonum logs the worst ratio
// per length, fftTestLengths, batch 3): at most 0.86 * log2(n) * 2^-24 (n = 2; 0.17 to 0.75 for
// the other mixed-radix lengths) and 0.44 * log2(n) * 2^-24 through Bluestein (n = 97; 0.32 for
// 1006), so the bounds keep a margin of more than 2.
func fftBound(n int) float64 {
	c := 2.0
	half := n
	if n%2 == 0 {
		half = n / 2
	}
	if _, ok := cpu.FFTFactors(half); !ok {
		c = 4
	}
	return c * math.Max(1, math.Log2(float64(n))) * 0x1p-24
}

// fftRows returns batch rows of n values: a few sinusoids, a ramp and a pseudo-random part, of
// magnitudes around 1.
func fftRows(batch, n int) []float32 {
	x := make([]float32, batch*n)
	for i := range x {
		z := cpu.SplitMix64(uint64(i) ^ 0xff7)
		t := float64(i % n)
		x[i] = float32(math.Sin(2*math.Pi*3*t/float64(n)) + 0.5*math.Cos(0.3*t) + float64(uint32(z))*0x1p-32 - 0.5)
	}
	return x
}

func relL2(got []complex128, want []complex128) float64 {
	var num, den float64
	for i := range want {
		d := cmplx.Abs(got[i] - want[i])
		num += d * d
		den += cmplx.Abs(want[i]) * cmplx.Abs(want[i])
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// TestRfftAgainstGonum: Rfft1dPacked against gonum's float64 real FFT within fftBound(n) per
// row, Irfft1dPacked against gonum's inverse (divided by n), and both bit for bit the composed
// twins of package cpu (cpu.RfftPlan.Rfft and Irfft).
func TestRfftAgainstGonum(t *testing.T) {
	d := CPU()
	const batch = 3
	for _, n := range fftTestLengths {
		host := fftRows(batch, n)
		x, err := FromFloat32(d, host)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := Rfft1dPacked(x, batch, n)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		got, err := spec.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		plan, err := cpu.NewRfftPlan(n)
		if err != nil {
			t.Fatal(err)
		}
		if twin := plan.Rfft(host, batch); !slices.Equal(canonical(twin), canonical(got)) {
			t.Errorf("n=%d: Rfft1dPacked differs from the composed twins", n)
		}
		ref := fourier.NewFFT(n)
		bins := n/2 + 1
		worst := 0.0
		for r := range batch {
			seq := make([]float64, n)
			for i := range seq {
				seq[i] = float64(host[r*n+i])
			}
			want := ref.Coefficients(nil, seq)
			g := make([]complex128, bins)
			for k := range g {
				g[k] = complex(float64(got[2*(r*bins+k)]), float64(got[2*(r*bins+k)+1]))
			}
			e := relL2(g, want)
			worst = max(worst, e)
			if e > fftBound(n) {
				t.Errorf("n=%d row %d: rfft relative L2 error %.3g > bound %.3g", n, r, e, fftBound(n))
			}
			// The inverse of the float32 spectrum against gonum's inverse of the same spectrum.
			inv := ref.Sequence(nil, g)
			back, err := Irfft1dPacked(spec, batch, n)
			if err != nil {
				t.Fatal(err)
			}
			y, _ := back.Float32s()
			back.Release()
			var num, den float64
			for i := range n {
				w := inv[i] / float64(n)
				num += (float64(y[r*n+i]) - w) * (float64(y[r*n+i]) - w)
				den += w * w
			}
			if e := math.Sqrt(num / den); e > fftBound(n) {
				t.Errorf("n=%d row %d: irfft relative L2 error %.3g > bound %.3g", n, r, e, fftBound(n))
			}
			if r == 0 && !slices.Equal(canonical(y), canonical(plan.Irfft(got, batch))) {
				t.Errorf("n=%d: Irfft1dPacked differs from the composed twins", n)
			}
		}
		t.Logf("n=%d: worst rfft error %.2f * log2(n) * 2^-24", n, worst/math.Max(1, math.Log2(float64(n)))/0x1p-24)
		x.Release()
		spec.Release()
	}
}

// TestRfftRoundTrip: irfft(rfft(x)) = x within 2*fftBound(n) (relative L2, per batch).
func TestRfftRoundTrip(t *testing.T) {
	for _, n := range fftTestLengths {
		const batch = 4
		host := fftRows(batch, n)
		x, _ := FromFloat32(CPU(), host)
		spec, err := Rfft1dPacked(x, batch, n)
		if err != nil {
			t.Fatal(err)
		}
		y, err := Irfft1dPacked(spec, batch, n)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := y.Float32s()
		var num, den float64
		for i := range host {
			num += math.Pow(float64(got[i]-host[i]), 2)
			den += math.Pow(float64(host[i]), 2)
		}
		if e := math.Sqrt(num / den); e > 2*fftBound(n) {
			t.Errorf("n=%d: round trip relative L2 error %.3g > %.3g", n, e, 2*fftBound(n))
		}
		releaseAll([]*Buffer{x, spec, y})
	}
}

// TestRfftSeedVector: the seeds' known spectrum, rfft([1,2,3,4]) = [(10,0), (-2,2), (-2,0)],
// exactly, and its inverse back to [1,2,3,4].
func TestRfftSeedVector(t *testing.T) {
	x, _ := FromFloat32(CPU(), []float32{1, 2, 3, 4})
	defer x.Release()
	spec, err := Rfft1dPacked(x, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer spec.Release()
	if got, _ := spec.Float32s(); !slices.Equal(got, []float32{10, 0, -2, 2, -2, 0}) {
		t.Errorf("rfft([1 2 3 4]) = %v", got)
	}
	y, err := Irfft1dPacked(spec, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Release()
	if got, _ := y.Float32s(); !slices.Equal(got, []float32{1, 2, 3, 4}) {
		t.Errorf("irfft = %v", got)
	}
}

// TestIrfftIgnoresEdgeImaginary: the imaginary parts of bin 0 and (n even) bin n/2 do not
// change a bit of the inverse; any other imaginary part does.
func TestIrfftIgnoresEdgeImaginary(t *testing.T) {
	for _, n := range []int{1, 2, 7, 8, 97, 194} {
		bins := n/2 + 1
		base := fftRows(1, 2*bins)
		inv := func(spec []float32) []float32 {
			b, _ := FromFloat32(CPU(), spec)
			defer b.Release()
			y, err := Irfft1dPacked(b, 1, n)
			if err != nil {
				t.Fatal(err)
			}
			defer y.Release()
			f, _ := y.Float32s()
			return f
		}
		want := inv(base)
		edited := slices.Clone(base)
		edited[1] = 1e6
		if n%2 == 0 {
			edited[2*(bins-1)+1] = -3e5
		}
		if got := inv(edited); !slices.Equal(got, want) {
			t.Errorf("n=%d: the edge imaginary parts changed the inverse", n)
		}
		if bins > 2 || (n%2 == 1 && bins > 1) {
			edited[3] += 1
			if got := inv(edited); slices.Equal(got, want) {
				t.Errorf("n=%d: an interior imaginary part did not change the inverse", n)
			}
		}
	}
}

// TestFFTErrors: invalid lengths and shapes are errors naming the op, never panics; batch 0
// gives an empty buffer.
func TestFFTErrors(t *testing.T) {
	d := CPU()
	x, _ := FromFloat32(d, make([]float32, 12))
	defer x.Release()
	cases := []struct {
		name string
		call func() (*Buffer, error)
		want string
	}{
		{"rfft n=0", func() (*Buffer, error) { return Rfft1dPacked(x, 1, 0) }, `^ops: rfft1d_packed: length n = 0`},
		{"rfft n<0", func() (*Buffer, error) { return Rfft1dPacked(x, 1, -4) }, `^ops: rfft1d_packed: length`},
		{"rfft too long", func() (*Buffer, error) { return Rfft1dPacked(x, 1, cpu.FFTMaxLen+1) }, `^ops: rfft1d_packed: length`},
		{"rfft length", func() (*Buffer, error) { return Rfft1dPacked(x, 2, 5) }, `^ops: rfft1d_packed: x, a \(2, 5\) matrix, has 12 elements, want 10`},
		{"rfft batch<0", func() (*Buffer, error) { return Rfft1dPacked(x, -1, 12) }, `^ops: rfft1d_packed: negative shape`},
		{"irfft n=0", func() (*Buffer, error) { return Irfft1dPacked(x, 1, 0) }, `^ops: irfft1d_packed: length n = 0`},
		{"irfft spec", func() (*Buffer, error) { return Irfft1dPacked(x, 1, 12) }, `^ops: irfft1d_packed: spec, a \(1, 14\) matrix, has 12 elements, want 14`},
		{"rfft nil", func() (*Buffer, error) { return Rfft1dPacked(nil, 1, 4) }, `nil buffer`},
	}
	for _, c := range cases {
		b, err := c.call()
		if err == nil || !regexp.MustCompile(c.want).MatchString(err.Error()) {
			t.Errorf("%s: error %v, want %s", c.name, err, c.want)
			b.Release()
		}
	}
	empty, _ := FromFloat32(d, nil)
	for _, call := range []func() (*Buffer, error){
		func() (*Buffer, error) { return Rfft1dPacked(empty, 0, 8) },
		func() (*Buffer, error) { return Irfft1dPacked(empty, 0, 8) },
	} {
		b, err := call()
		if err != nil || b.Len() != 0 {
			t.Errorf("batch 0: %v, %d elements", err, b.Len())
		}
	}
	y, _ := FromFloat32(d, make([]float32, 8))
	y.Release()
	if _, err := Rfft1dPacked(y, 1, 8); !errors.Is(err, ErrReleased) {
		t.Errorf("released input: %v", err)
	}
}

// TestFFTPlanCache: plans show in the device's telemetry (not in LiveBytes), the cache keeps at
// most fftPlanLimit of them (the least recently used go), and Collect(true) frees them all.
func TestFFTPlanCache(t *testing.T) {
	d := CPU()
	if err := d.Collect(true); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.FFTPlans != 0 || s.FFTPlanBytes != 0 {
		t.Fatalf("after Collect: %d plans, %d bytes", s.FFTPlans, s.FFTPlanBytes)
	}
	live := d.Stats().LiveBytes
	run := func(n int) {
		x, _ := FromFloat32(d, make([]float32, n))
		y, err := Rfft1dPacked(x, 1, n)
		if err != nil {
			t.Fatal(err)
		}
		releaseAll([]*Buffer{x, y})
	}
	run(1024)
	s := d.Stats()
	p, _ := cpu.NewRfftPlan(1024)
	if s.FFTPlans != 1 || s.FFTPlanBytes != p.Bytes() || s.LiveBytes != live {
		t.Errorf("one plan: %d plans, %d bytes (want %d), live %d (want %d)", s.FFTPlans, s.FFTPlanBytes, p.Bytes(), s.LiveBytes, live)
	}
	for n := 2; n < 2+fftPlanLimit+6; n++ {
		run(n)
	}
	if s := d.Stats(); s.FFTPlans != fftPlanLimit {
		t.Errorf("%d plans cached, want the bound %d", s.FFTPlans, fftPlanLimit)
	}
	d.fft.mu.Lock()
	_, has1024 := d.fft.plans[1024]
	_, hasLast := d.fft.plans[1+fftPlanLimit+6]
	d.fft.mu.Unlock()
	if has1024 || !hasLast {
		t.Errorf("LRU: 1024 cached %v (want false), the newest %v (want true)", has1024, hasLast)
	}
	if err := d.Collect(true); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.FFTPlans != 0 || s.FFTPlanBytes != 0 || s.LiveBytes != live {
		t.Errorf("after Collect: %+v", s)
	}
}

// TestFFTSharedConstants: FFT_MAX_PRIME of ptx/fft.cu is cpu.FFTMaxPrime.
func TestFFTSharedConstants(t *testing.T) {
	src, err := os.ReadFile("../ptx/fft.cu")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define FFT_MAX_PRIME (\d+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no FFT_MAX_PRIME in ptx/fft.cu")
	}
	if v, _ := strconv.Atoi(string(m[1])); v != cpu.FFTMaxPrime {
		t.Errorf("FFT_MAX_PRIME = %d, cpu.FFTMaxPrime = %d", v, cpu.FFTMaxPrime)
	}
}

// ExampleRfft1dPacked transforms one row of four samples and back.
func ExampleRfft1dPacked() {
	x, _ := FromFloat32(CPU(), []float32{1, 2, 3, 4})
	defer x.Release()
	spec, _ := Rfft1dPacked(x, 1, 4) // (1, 3, 2): [re, im] for bins 0, 1, 2
	defer spec.Release()
	s, _ := spec.Float32s()
	fmt.Println(s)
	y, _ := Irfft1dPacked(spec, 1, 4)
	defer y.Release()
	v, _ := y.Float32s()
	fmt.Println(v)
	// Output:
	// [10 0 -2 2 -2 0]
	// [1 2 3 4]
}

// BenchmarkRfft: batched real transforms on the default device, a power of two and a length of
// radices 4, 2, 3 and 5.
func BenchmarkRfft(b *testing.B) {
	d := Default()
	for _, sh := range [][2]int{{64, 8192}, {64, 6000}} {
		batch, n := sh[0], sh[1]
		x, err := FromFloat32(d, fftRows(batch, n))
		if err != nil {
			b.Fatal(err)
		}
		spec, err := Rfft1dPacked(x, batch, n)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("rfft/%dx%d", batch, n), func(b *testing.B) {
			b.SetBytes(4 * int64(batch*n))
			for b.Loop() {
				y, err := Rfft1dPacked(x, batch, n)
				if err != nil {
					b.Fatal(err)
				}
				y.Release()
			}
			d.Sync()
		})
		b.Run(fmt.Sprintf("irfft/%dx%d", batch, n), func(b *testing.B) {
			b.SetBytes(4 * int64(batch*n))
			for b.Loop() {
				y, err := Irfft1dPacked(spec, batch, n)
				if err != nil {
					b.Fatal(err)
				}
				y.Release()
			}
			d.Sync()
		})
		releaseAll([]*Buffer{x, spec})
	}
}
