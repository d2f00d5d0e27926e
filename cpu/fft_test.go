package cpu

import (
	"math"
	"math/cmplx"
	"testing"
)

// dft64 is the direct DFT of the real row x in float64, bins 0 .. n/2, angles reduced exactly.
func dft64(x []float32) []complex128 {
	n := len(x)
	out := make([]complex128, n/2+1)
	for k := range out {
		var s complex128
		for t, v := range x {
			a := 2 * math.Pi * float64(k*t%n) / float64(n)
			s += complex(float64(v), 0) * cmplx.Rect(1, -a)
		}
		out[k] = s
	}
	return out
}

// TestRfftPlanAgainstDFT: the composed twins against a direct float64 DFT over lengths of every
// path (no stage, each radix, Bluestein for odd and even lengths), with a relative L2 error
// bound of 8*log2(n)*2^-24, and the inverse back to the input.
func TestRfftPlanAgainstDFT(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17, 25, 30, 34, 49, 97, 121, 143, 169, 194, 210, 256, 1000, 1001} {
		p, err := NewRfftPlan(n)
		if err != nil {
			t.Fatal(err)
		}
		const rows = 3
		x := make([]float32, rows*n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.37+1) + 0.25*math.Cos(float64(i*i)*0.011))
		}
		got := p.Rfft(x, rows)
		bins := n/2 + 1
		bound := 8 * math.Max(1, math.Log2(float64(n))) * 0x1p-24
		for r := range rows {
			want := dft64(x[r*n : (r+1)*n])
			var num, den float64
			for k, w := range want {
				g := complex(float64(got[2*(r*bins+k)]), float64(got[2*(r*bins+k)+1]))
				num += math.Pow(cmplx.Abs(g-w), 2)
				den += math.Pow(cmplx.Abs(w), 2)
			}
			if e := math.Sqrt(num / den); e > bound {
				t.Errorf("n=%d row %d: relative L2 error %.3g > %.3g", n, r, e, bound)
			}
		}
		back := p.Irfft(got, rows)
		var num, den float64
		for i := range x {
			num += math.Pow(float64(back[i]-x[i]), 2)
			den += math.Pow(float64(x[i]), 2)
		}
		if e := math.Sqrt(num / den); e > 2*bound {
			t.Errorf("n=%d: round trip relative L2 error %.3g > %.3g", n, e, 2*bound)
		}
	}
}

// TestRfftSeedVector is the seeds' test vector: rfft([1,2,3,4]) = [(10,0), (-2,2), (-2,0)].
func TestRfftSeedVector(t *testing.T) {
	p, _ := NewRfftPlan(4)
	got := p.Rfft([]float32{1, 2, 3, 4}, 1)
	want := []float32{10, 0, -2, 2, -2, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rfft([1 2 3 4]) = %v, want %v", got, want)
		}
	}
	if back := p.Irfft(got, 1); back[0] != 1 || back[1] != 2 || back[2] != 3 || back[3] != 4 {
		t.Fatalf("irfft = %v", back)
	}
}

func TestFFTFactorsAndRecip(t *testing.T) {
	for n, want := range map[int][]int{1: nil, 2: {2}, 8: {4, 2}, 1000: {4, 2, 5, 5, 5}, 4096: {4, 4, 4, 4, 4, 4}, 12: {4, 3}, 143: {11, 13}} {
		got, ok := FFTFactors(n)
		if !ok || len(got) != len(want) {
			t.Errorf("FFTFactors(%d) = %v, %v; want %v", n, got, ok, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("FFTFactors(%d) = %v, want %v", n, got, want)
			}
		}
	}
	if _, ok := FFTFactors(97); ok {
		t.Error("97 has no Bluestein route")
	}
	for _, n := range []int{1, 3, 7, 10, 97, 1000, 6000, 8191, 1 << 20, FFTMaxLen - 1} {
		if got, want := recip32(n), float32(1)/float32(n); n < 1<<24 && got != want {
			t.Errorf("recip32(%d) = %g, 1.0f/n = %g", n, got, want)
		}
	}
}

// TestRfftPlanTables: every constant of a plan's table is the float32 rounding of UnitRoot's
// value (twiddles W_N^k = UnitRoot(N-k, N), the odd radices' C and S = UnitRoot(j*k mod r, r),
// the chirp c[t] = UnitRoot(2N - t*t mod 2N, 2N), RfftPost's W_n^k), the twiddles are
// conjugate-symmetric to the bit, and exact (with +0) at multiples of pi/2.
func TestRfftPlanTables(t *testing.T) {
	w32 := func(r, n int) (float32, float32) {
		c, s := UnitRoot(uint64(r), uint64(n))
		return float32(c), float32(s)
	}
	bitsEq := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	var checkPlan func(p *FFTPlan, tab []float32)
	checkPlan = func(p *FFTPlan, tab []float32) {
		n := p.N
		if p.Blue != nil {
			for k := range n {
				q := k * k % (2 * n)
				c, s := w32(2*n-q, 2*n)
				if g := tab[p.Blue.Chirp+2*k:]; !bitsEq(g[0], c) || !bitsEq(g[1], s) {
					t.Errorf("N=%d chirp[%d] = (%v, %v), want (%v, %v)", n, k, g[0], g[1], c, s)
				}
			}
			checkPlan(p.Blue.Inner, tab)
			return
		}
		if len(p.Stages) == 0 {
			return
		}
		tw := tab[p.Tw:]
		for k := range n {
			c, s := w32((n-k)%n, n)
			if !bitsEq(tw[2*k], c) || !bitsEq(tw[2*k+1], s) {
				t.Fatalf("N=%d W^%d = (%v, %v), want (%v, %v)", n, k, tw[2*k], tw[2*k+1], c, s)
			}
			if k > 0 && (!bitsEq(tw[2*(n-k)], tw[2*k]) || !bitsEq(tw[2*(n-k)+1], 0-tw[2*k+1])) {
				t.Fatalf("N=%d: W^%d = (%v, %v) is not the conjugate of W^%d", n, n-k, tw[2*(n-k)], tw[2*(n-k)+1], k)
			}
			if 4*k%n == 0 {
				want := [4][2]float32{{1, 0}, {0, -1}, {-1, 0}, {0, 1}}[4*k/n]
				if !bitsEq(tw[2*k], want[0]) || !bitsEq(tw[2*k+1], want[1]) {
					t.Errorf("N=%d W^%d = (%v, %v), want exactly %v", n, k, tw[2*k], tw[2*k+1], want)
				}
			}
		}
		for _, st := range p.Stages {
			r, h := st.Radix, (st.Radix-1)/2
			if r%2 == 0 {
				continue
			}
			for j := 1; j <= h; j++ {
				for k := 1; k <= h; k++ {
					c, s := w32(j*k%r, r)
					o := st.Rc + 2*((j-1)*h+k-1)
					if !bitsEq(tab[o], c) || !bitsEq(tab[o+1], s) {
						t.Errorf("radix %d C, S(%d, %d) = (%v, %v), want (%v, %v)", r, j, k, tab[o], tab[o+1], c, s)
					}
				}
			}
		}
	}
	for _, n := range []int{1, 2, 3, 8, 12, 30, 97, 194, 1000, 1024, 2002, 6000, 8192} {
		p, err := NewRfftPlan(n)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(p.C, p.Table)
		if n%2 == 0 {
			for k := range n / 2 {
				c, s := w32((n-k)%n, n)
				if g := p.Table[p.Post+2*k:]; !bitsEq(g[0], c) || !bitsEq(g[1], s) {
					t.Errorf("n=%d post W^%d = (%v, %v), want (%v, %v)", n, k, g[0], g[1], c, s)
				}
			}
		}
	}
}
