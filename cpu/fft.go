package cpu

import (
	"fmt"
	"math"
	"math/bits"
)

// Our own FFT: the plans and the twins of ptx/fft.cu. Everything that shapes the arithmetic is a
// function of the transform length alone (NewRfftPlan); the twiddle factors, the odd radices'
// constants, the Bluestein chirp and its transform are computed once on the host in float64 by
// UnitRoot (every angle reduced exactly with integer arithmetic, then a series whose float64
// operations are all explicitly rounded, so that every GOARCH builds the same bits) and rounded
// to float32; every float32 operation below is one correctly rounded +, - or * (no fma), in the
// order written, on both devices.
//
// Complex values are pairs of float32 (re, im) stored interleaved. The complex product used
// everywhere (cmul) is
//
//	mul(a, b) = (a.re*b.re - a.im*b.im, a.re*b.im + a.im*b.re)
//
// each product rounded, then the difference or sum rounded.
//
// The transforms:
//
//   - A complex FFT of length N (an FFTPlan) is a sequence of Stockham auto-sort stages (FFTStage)
//     of radices 4, then 2, then the odd primes 3, 5, 7, 11, 13 (ascending), the factorization of
//     N in that order, ping-ponging between two buffers; N = 1 has no stage.
//   - A length N with a prime factor above FFTMaxPrime uses Bluestein's chirp-z algorithm:
//     a[t] = x[t]*c[t] (c[t] = exp(-i*pi*(t*t mod 2N)/N)) zero-padded to M, the least power of two
//     >= 2N-1 (BluesteinPre); A = FFT_M(a); D = conj(A*B) (BluesteinMul, B the float64 FFT of the
//     conjugate chirp divided by M, rounded); E = FFT_M(D); X[k] = c[k]*conj(E[k]) (BluesteinPost).
//   - rfft of an even length n: the row read as n/2 complex values z[t] = x[2t] + i*x[2t+1],
//     Z = FFT_{n/2}(z), then RfftPost splits Z into the n/2+1 bins. rfft of an odd n: the row
//     widened to complex (FFTWiden), FFT_n, then the first n/2+1 bins (RfftPostOdd).
//   - irfft of an even n: IrfftPre folds the n/2+1 bins into P (n/2 complex values), E =
//     FFT_{n/2}(P), IrfftOut writes x[2t] = E[t].re*s and x[2t+1] = -E[t].im*s, s = float32(1/n)
//     (correctly rounded); an odd n: IrfftPreOdd builds the conjugate of the Hermitian spectrum,
//     E = FFT_n(P), IrfftOutOdd writes x[t] = E[t].re*s. The inverse thus multiplies by the
//     rounded reciprocal of n, as TorchLean's cuFFT path scales by 1.0f/n.

// FFTMaxPrime is the largest prime radix of the mixed-radix stages (FFT_MAX_PRIME in
// ptx/fft.cu); lengths with a larger prime factor use Bluestein.
const FFTMaxPrime = 13

// FFTMaxLen is the largest transform length (rfft n) a plan accepts: every index within a row
// then fits in 32 bits, also Bluestein's padded length.
const FFTMaxLen = 1 << 28

// FFTStep is one Stockham stage of a complex FFT of length N: radix R and span S (the product
// of the radices of the stages before it). Rc is the offset in the plan's table of the odd
// radix's constants (the kernel FFTStage of an odd radix reads them), 0 for radices 2 and 4.
type FFTStep struct {
	Radix, Span, Rc int
}

// FFTPlan is a complex FFT of length N: its stages and, with Blue set, Bluestein's algorithm
// (whose stages are those of Blue.Inner, of length Blue.M). Tw is the offset in the plan's table
// of the twiddles W_N^i = exp(-2*pi*i*i/N), i < N, as (re, im) pairs.
type FFTPlan struct {
	N      int
	Stages []FFTStep
	Tw     int
	Blue   *Bluestein
}

// Bluestein is the chirp-z part of a plan: the padded length M (a power of two), the FFT of
// length M, and the offsets of the chirp c[t], t < N, and of B[j], j < M, in the plan's table.
type Bluestein struct {
	M     int
	Inner *FFTPlan
	Chirp int
	B     int
}

// RfftPlan is the plan of the real transforms of length N: the complex FFT (of N/2 for an even
// N, of N for an odd one), Post the offset of W_N^k, k < N/2 (even N only), Scale the float32
// nearest to 1/N, and Table every float32 constant the kernels read.
type RfftPlan struct {
	N     int
	C     *FFTPlan
	Post  int
	Scale float32
	Table []float32
}

// Bytes is the size of the plan's table.
func (p *RfftPlan) Bytes() int64 { return 4 * int64(len(p.Table)) }

// FFTFactors returns the radices of the mixed-radix stages of a length n >= 1, in stage order
// (4s, one 2 when needed, then odd primes ascending; empty for n = 1), and false when n has a
// prime factor above FFTMaxPrime.
func FFTFactors(n int) ([]int, bool) {
	var f []int
	for n%4 == 0 {
		f, n = append(f, 4), n/4
	}
	if n%2 == 0 {
		f, n = append(f, 2), n/2
	}
	for _, p := range []int{3, 5, 7, 11, 13} {
		for n%p == 0 {
			f, n = append(f, p), n/p
		}
	}
	return f, n == 1
}

// NewRfftPlan returns the plan of the real transforms of length n, 1 <= n <= FFTMaxLen.
func NewRfftPlan(n int) (*RfftPlan, error) {
	if n < 1 || n > FFTMaxLen {
		return nil, fmt.Errorf("cpu: FFT length %d outside [1, %d]", n, FFTMaxLen)
	}
	p := &RfftPlan{N: n, Scale: recip32(n)}
	b := &tableBuilder{rc: map[int]int{}}
	c := n
	if n%2 == 0 {
		c = n / 2
	}
	p.C = b.plan(c)
	if n%2 == 0 {
		p.Post = b.roots(n, n/2)
	}
	p.Table = b.t
	return p, nil
}

// recip32 is 1/n rounded once to the nearest float32 (ties to even).
func recip32(n int) float32 {
	// 1/n in float64 is within half an ulp of 2^-53 relative; the float32 rounding of it differs
	// from the direct rounding only if that float64 falls on a float32 midpoint, which is then
	// resolved with the exact remainder.
	q := 1 / float64(n)
	f := float32(q)
	// Check against the neighbours: the float32 nearest to 1/n minimizes |f*n - 1| (exact in
	// float64 for f of 24 bits and n < 2^29).
	best, bestErr := f, math.Abs(float64(float64(f)*float64(n))-1)
	for _, g := range []float32{math.Nextafter32(f, 0), math.Nextafter32(f, 2)} {
		if e := math.Abs(float64(float64(g)*float64(n)) - 1); e < bestErr || e == bestErr && math.Float32bits(g)&1 == 0 {
			best, bestErr = g, e
		}
	}
	return best
}

// tableBuilder lays out a plan's table.
type tableBuilder struct {
	t  []float32
	rc map[int]int // odd radix -> offset of its constants
}

// roots appends W_n^k = exp(-2*pi*i*k/n) for k < count and returns the offset: the float32
// roundings of UnitRoot(n - k, n), cos(2*pi*k/n) and -sin(2*pi*k/n), exact at multiples of pi/4
// (zeros are +0) and conjugate-symmetric to the bit (W^(n-k) = conj(W^k)); see appendRoots.
func (b *tableBuilder) roots(n, count int) int {
	off := len(b.t)
	b.t = appendRoots(b.t, n, count)
	return off
}

// plan appends the tables of a complex FFT of length n and returns it.
func (b *tableBuilder) plan(n int) *FFTPlan {
	f, ok := FFTFactors(n)
	if !ok {
		m := 1 << bits.Len(uint(2*n-2))
		p := &FFTPlan{N: n, Blue: &Bluestein{M: m, Inner: b.plan(m)}}
		p.Blue.Chirp = len(b.t)
		// The chirp c[t] = exp(-i*pi*q/n) = W_{2n}^q, q = t*t mod 2n: with (cc, cs) = UnitRoot(q, 2n)
		// = conj(c[t]), c[t] is stored as float32(cc), float32(0 - cs) (UnitRoot(2n - q, 2n) to the
		// bit); B = FFT_M(conj(c) at j and M-j) / M in float64.
		w := make([]complex128, m)
		for t := range n {
			q := (uint64(t) * uint64(t)) % uint64(2*n)
			cc, cs := UnitRoot(q, uint64(2*n))
			b.t = append(b.t, float32(cc), float32(0-cs))
			w[t] = complex(cc, cs)
			if t > 0 {
				w[m-t] = w[t]
			}
		}
		fft64(w)
		p.Blue.B = len(b.t)
		for _, v := range w {
			b.t = append(b.t, float32(real(v)/float64(m)), float32(imag(v)/float64(m)))
		}
		return p
	}
	p := &FFTPlan{N: n}
	span := 1
	for _, r := range f {
		st := FFTStep{Radix: r, Span: span}
		if r%2 == 1 {
			st.Rc = b.radixConsts(r)
		}
		p.Stages = append(p.Stages, st)
		span *= r
	}
	if len(f) > 0 {
		p.Tw = b.roots(n, n)
	}
	return p
}

// radixConsts appends (once per plan) the constants of the odd radix r: for j, k = 1 .. h
// (h = (r-1)/2), C(j, k) = cos(2*pi*(j*k mod r)/r) and S(j, k) = sin(2*pi*(j*k mod r)/r)
// (UnitRoot(j*k mod r, r) rounded to float32) at 2*((j-1)*h + k-1) and the slot after it. It
// returns their offset.
func (b *tableBuilder) radixConsts(r int) int {
	if off, ok := b.rc[r]; ok {
		return off
	}
	off := len(b.t)
	h := (r - 1) / 2
	for j := 1; j <= h; j++ {
		for k := 1; k <= h; k++ {
			c, s := UnitRoot(uint64(j*k%r), uint64(r))
			b.t = append(b.t, float32(c), float32(s))
		}
	}
	b.rc[r] = off
	return off
}

// fft64 is an in-place radix-2 FFT in float64 (len(x) a power of two), sign -1, unnormalized,
// twiddles W_n^(k*step) = UnitRoot(n - k*step, n) (appendRoots): the host's reference for
// Bluestein's B.
func fft64(x []complex128) {
	n := len(x)
	tw := appendRoots([]float64(nil), n, n/2)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j |= bit
		if i < j {
			x[i], x[j] = x[j], x[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		half := size / 2
		step := n / size
		for k := range half {
			wr, wi := tw[2*k*step], tw[2*k*step+1]
			for s := 0; s < n; s += size {
				u, y := x[s+k], x[s+k+half]
				// w*y with every product rounded (no fma on any architecture).
				v := complex(float64(wr*real(y))-float64(wi*imag(y)), float64(wr*imag(y))+float64(wi*real(y)))
				x[s+k], x[s+k+half] = u+v, u-v
			}
		}
	}
}

// cmul is the complex product of the file comment.
func cmul(ar, ai, br, bi float32) (float32, float32) {
	return float32(ar*br) - float32(ai*bi), float32(ar*bi) + float32(ai*br)
}

// FFTStage runs one Stockham stage (radix R, span S) of complex FFTs of length n on rows
// [lo, hi) of src into dst, both (rows, n) complex (2n floats a row); tw holds W_n^i, i < n, and
// rc the odd radix's constants (radixConsts). With m = n/R, for each j < m of a row:
//
//	k = j mod S
//	v[r] = src[j + r*m]                              // r < R
//	v[r] = mul(v[r], tw[r*k*(n/(S*R))])             // r >= 1, only when k != 0
//	y = butterfly_R(v)                               // fft4, fft2 or fftOdd below
//	dst[(j/S)*S*R + k + r*S] = y[r]
func FFTStage(dst, src, tw, rc []float32, n, span, radix, lo, hi int) {
	m := n / radix
	step := n / (span * radix)
	var vr, vi [FFTMaxPrime]float32
	for row := lo; row < hi; row++ {
		s, d := src[2*row*n:2*(row+1)*n], dst[2*row*n:2*(row+1)*n]
		for j := range m {
			k := j % span
			for r := range radix {
				vr[r], vi[r] = s[2*(j+r*m)], s[2*(j+r*m)+1]
			}
			if k != 0 {
				for r := 1; r < radix; r++ {
					w := 2 * (r * k * step)
					vr[r], vi[r] = cmul(vr[r], vi[r], tw[w], tw[w+1])
				}
			}
			switch radix {
			case 4:
				fft4(&vr, &vi)
			case 2:
				fft2(&vr, &vi)
			default:
				fftOdd(&vr, &vi, radix, rc)
			}
			base := (j/span)*span*radix + k
			for r := range radix {
				o := 2 * (base + r*span)
				d[o], d[o+1] = vr[r], vi[r]
			}
		}
	}
}

// fft2: y0 = v0 + v1, y1 = v0 - v1.
func fft2(vr, vi *[FFTMaxPrime]float32) {
	vr[0], vr[1] = vr[0]+vr[1], vr[0]-vr[1]
	vi[0], vi[1] = vi[0]+vi[1], vi[0]-vi[1]
}

// fft4, the forward radix-4 butterfly:
//
//	a0 = v0 + v2; a1 = v0 - v2; a2 = v1 + v3; a3 = v1 - v3
//	y0 = a0 + a2; y2 = a0 - a2
//	y1 = (a1.re + a3.im, a1.im - a3.re); y3 = (a1.re - a3.im, a1.im + a3.re)
func fft4(vr, vi *[FFTMaxPrime]float32) {
	a0r, a0i := vr[0]+vr[2], vi[0]+vi[2]
	a1r, a1i := vr[0]-vr[2], vi[0]-vi[2]
	a2r, a2i := vr[1]+vr[3], vi[1]+vi[3]
	a3r, a3i := vr[1]-vr[3], vi[1]-vi[3]
	vr[0], vi[0] = a0r+a2r, a0i+a2i
	vr[2], vi[2] = a0r-a2r, a0i-a2i
	vr[1], vi[1] = a1r+a3i, a1i-a3r
	vr[3], vi[3] = a1r-a3i, a1i+a3r
}

// fftOdd, the forward butterfly of an odd prime radix p (h = (p-1)/2, C and S from rc):
//
//	t_j = v_j + v_{p-j}; d_j = v_j - v_{p-j}            // j = 1 .. h
//	y0 = (((v0 + t_1) + t_2) + ...) + t_h
//	for k = 1 .. h:
//	  a = v0 + C(1,k)*t_1;  a = a + C(j,k)*t_j          // j = 2 .. h, in order
//	  b = S(1,k)*d_1;       b = b + S(j,k)*d_j          // (real times complex: each part)
//	  y_k = (a.re + b.im, a.im - b.re); y_{p-k} = (a.re - b.im, a.im + b.re)
func fftOdd(vr, vi *[FFTMaxPrime]float32, p int, rc []float32) {
	h := (p - 1) / 2
	var tr, ti, dr, di [FFTMaxPrime/2 + 1]float32
	y0r, y0i := vr[0], vi[0]
	for j := 1; j <= h; j++ {
		tr[j], ti[j] = vr[j]+vr[p-j], vi[j]+vi[p-j]
		dr[j], di[j] = vr[j]-vr[p-j], vi[j]-vi[p-j]
		y0r, y0i = y0r+tr[j], y0i+ti[j]
	}
	var yr, yi [FFTMaxPrime]float32
	for k := 1; k <= h; k++ {
		c, s := rc[2*(k-1)], rc[2*(k-1)+1]
		ar, ai := vr[0]+float32(c*tr[1]), vi[0]+float32(c*ti[1])
		br, bi := float32(s*dr[1]), float32(s*di[1])
		for j := 2; j <= h; j++ {
			c, s := rc[2*((j-1)*h+k-1)], rc[2*((j-1)*h+k-1)+1]
			ar, ai = ar+float32(c*tr[j]), ai+float32(c*ti[j])
			br, bi = br+float32(s*dr[j]), bi+float32(s*di[j])
		}
		yr[k], yi[k] = ar+bi, ai-br
		yr[p-k], yi[p-k] = ar-bi, ai+br
	}
	vr[0], vi[0] = y0r, y0i
	for k := 1; k < p; k++ {
		vr[k], vi[k] = yr[k], yi[k]
	}
}

// FFTWiden writes the complex (x[i], 0) for elements [lo, hi) of x into dst.
func FFTWiden(dst, x []float32, lo, hi int) {
	for i := lo; i < hi; i++ {
		dst[2*i], dst[2*i+1] = x[i], 0
	}
}

// RfftPost writes rows [lo, hi) of the (rows, h+1, 2) half spectrum of an even length n = 2h
// from Z (rows, h) complex, the FFT of the row read as complex, and w[k] = W_n^k, k < h:
//
//	X[0] = (Z[0].re + Z[0].im, 0);  X[h] = (Z[0].re - Z[0].im, 0)
//	for 0 < k < h, with a = Z[k], b = Z[h-k]:
//	  s = (a.re + b.re, a.im - b.im)            // a + conj(b)
//	  e = (a.re - b.re, a.im + b.im)            // a - conj(b)
//	  t = mul(w[k], (e.im, -e.re))              // W^k * (-i) * e
//	  X[k] = ((s.re + t.re) * 0.5, (s.im + t.im) * 0.5)
func RfftPost(dst, z, w []float32, h, lo, hi int) {
	for row := lo; row < hi; row++ {
		zr, x := z[2*row*h:2*(row+1)*h], dst[2*row*(h+1):2*(row+1)*(h+1)]
		x[0], x[1] = zr[0]+zr[1], 0
		x[2*h], x[2*h+1] = zr[0]-zr[1], 0
		for k := 1; k < h; k++ {
			ar, ai, br, bi := zr[2*k], zr[2*k+1], zr[2*(h-k)], zr[2*(h-k)+1]
			sr, si := ar+br, ai-bi
			er, ei := ar-br, ai+bi
			tr, ti := cmul(w[2*k], w[2*k+1], ei, -er)
			x[2*k], x[2*k+1] = float32((sr+tr)*0.5), float32((si+ti)*0.5)
		}
	}
}

// RfftPostOdd copies bins 0 .. (n-1)/2 of rows [lo, hi) of the (rows, n) complex spectrum z
// into the (rows, (n-1)/2+1, 2) half spectrum dst (n odd).
func RfftPostOdd(dst, z []float32, n, lo, hi int) {
	bins := n/2 + 1
	for row := lo; row < hi; row++ {
		copy(dst[2*row*bins:2*(row+1)*bins], z[2*row*n:2*row*n+2*bins])
	}
}

// IrfftPre folds rows [lo, hi) of the (rows, h+1, 2) half spectrum X of an even length n = 2h
// into P (rows, h) complex, with w[k] = W_n^k; the imaginary parts of X[0] and X[h] are never
// read:
//
//	P[0] = (X[0].re + X[h].re, -(X[0].re - X[h].re))
//	for 0 < k < h, with a = X[k], b = X[h-k]:
//	  e = (a.re + b.re, a.im - b.im)                    // a + conj(b)
//	  d = (a.re - b.re, a.im + b.im)                    // a - conj(b)
//	  o = (d.re*w.re + d.im*w.im, d.im*w.re - d.re*w.im)  // d * conj(w[k]): products, then the sum
//	  P[k] = (e.re - o.im, -(e.im + o.re))              // conj(e + i*o)
func IrfftPre(dst, x, w []float32, h, lo, hi int) {
	for row := lo; row < hi; row++ {
		xr, p := x[2*row*(h+1):2*(row+1)*(h+1)], dst[2*row*h:2*(row+1)*h]
		p[0], p[1] = xr[0]+xr[2*h], -(xr[0] - xr[2*h])
		for k := 1; k < h; k++ {
			ar, ai, br, bi := xr[2*k], xr[2*k+1], xr[2*(h-k)], xr[2*(h-k)+1]
			er, ei := ar+br, ai-bi
			dr, di := ar-br, ai+bi
			wr, wi := w[2*k], w[2*k+1]
			odr := float32(dr*wr) + float32(di*wi)
			oi := float32(di*wr) - float32(dr*wi)
			p[2*k], p[2*k+1] = er-oi, -(ei + odr)
		}
	}
}

// IrfftPreOdd builds rows [lo, hi) of P (rows, n) complex, the conjugate of the Hermitian
// spectrum of the (rows, (n-1)/2+1, 2) half spectrum X (n odd; the imaginary part of X[0] never
// read):
//
//	P[0] = (X[0].re, 0); P[k] = (X[k].re, -X[k].im) for 0 < k <= (n-1)/2; P[k] = X[n-k] above
func IrfftPreOdd(dst, x []float32, n, lo, hi int) {
	bins := n/2 + 1
	for row := lo; row < hi; row++ {
		xr, p := x[2*row*bins:2*(row+1)*bins], dst[2*row*n:2*(row+1)*n]
		p[0], p[1] = xr[0], 0
		for k := 1; k < bins; k++ {
			p[2*k], p[2*k+1] = xr[2*k], -xr[2*k+1]
		}
		for k := bins; k < n; k++ {
			p[2*k], p[2*k+1] = xr[2*(n-k)], xr[2*(n-k)+1]
		}
	}
}

// IrfftOut writes elements [lo, hi) of the real rows of an even length from E, the FFT of P read
// as floats: y[i] = e[i]*s for even i, y[i] = -(e[i]*s) for odd i (the conjugate, scaled).
func IrfftOut(dst, e []float32, s float32, lo, hi int) {
	for i := lo; i < hi; i++ {
		v := float32(e[i] * s)
		if i%2 == 1 {
			v = -v
		}
		dst[i] = v
	}
}

// IrfftOutOdd writes elements [lo, hi) of the real rows of an odd length from E, the (rows, n)
// complex FFT of P: y[i] = E[i].re * s.
func IrfftOutOdd(dst, e []float32, s float32, lo, hi int) {
	for i := lo; i < hi; i++ {
		dst[i] = float32(e[2*i] * s)
	}
}

// BluesteinPre writes rows [lo, hi) of a (rows, m) complex: a[t] = mul(x[t], c[t]) for t < n, 0
// for n <= t < m; x is (rows, n) complex, c the chirp.
func BluesteinPre(dst, x, c []float32, n, m, lo, hi int) {
	for row := lo; row < hi; row++ {
		xr, a := x[2*row*n:2*(row+1)*n], dst[2*row*m:2*(row+1)*m]
		for t := range n {
			a[2*t], a[2*t+1] = cmul(xr[2*t], xr[2*t+1], c[2*t], c[2*t+1])
		}
		clear(a[2*n:])
	}
}

// BluesteinMul writes rows [lo, hi) of D = conj(mul(A, B)), all (rows, m) complex but B (m):
// D[j] = (p.re, -p.im) with p = mul(A[j], B[j]).
func BluesteinMul(dst, a, b []float32, m, lo, hi int) {
	for i := 2 * lo * m; i < 2*hi*m; i += 2 {
		j := i % (2 * m)
		re, im := cmul(a[i], a[i+1], b[j], b[j+1])
		dst[i], dst[i+1] = re, -im
	}
}

// BluesteinPost writes rows [lo, hi) of X (rows, n) complex from E (rows, m): X[k] = mul(c[k],
// (E[k].re, -E[k].im)).
func BluesteinPost(dst, e, c []float32, n, m, lo, hi int) {
	for row := lo; row < hi; row++ {
		er, x := e[2*row*m:2*row*m+2*n], dst[2*row*n:2*(row+1)*n]
		for k := range n {
			x[2*k], x[2*k+1] = cmul(c[2*k], c[2*k+1], er[2*k], -er[2*k+1])
		}
	}
}

// FFT runs the complex FFT of plan p (whose table is tab) on the (rows, p.N) complex src with
// the twins above, in the order the GPU runs them, and returns the result (src itself when p
// has no stage; src is never written). The host's reference for ops, whose calls it composes.
func (p *FFTPlan) FFT(src, tab []float32, rows int) []float32 {
	if p.Blue != nil {
		bl := p.Blue
		a := make([]float32, 2*rows*bl.M)
		BluesteinPre(a, src, tab[bl.Chirp:], p.N, bl.M, 0, rows)
		e := bl.Inner.FFT(a, tab, rows)
		BluesteinMul(a, e, tab[bl.B:], bl.M, 0, rows)
		e = bl.Inner.FFT(a, tab, rows)
		x := make([]float32, 2*rows*p.N)
		BluesteinPost(x, e, tab[bl.Chirp:], p.N, bl.M, 0, rows)
		return x
	}
	cur := src
	bufs := [2][]float32{}
	for i, st := range p.Stages {
		if bufs[i%2] == nil {
			bufs[i%2] = make([]float32, 2*rows*p.N)
		}
		FFTStage(bufs[i%2], cur, tab[p.Tw:], tab[st.Rc:], p.N, st.Span, st.Radix, 0, rows)
		cur = bufs[i%2]
	}
	return cur
}

// Rfft is the whole real transform of plan p on the (rows, p.N) real x with the twins: the
// (rows, p.N/2+1, 2) half spectrum.
func (p *RfftPlan) Rfft(x []float32, rows int) []float32 {
	n, bins := p.N, p.N/2+1
	out := make([]float32, 2*rows*bins)
	if n%2 == 0 {
		z := p.C.FFT(x, p.Table, rows)
		RfftPost(out, z, p.Table[p.Post:], n/2, 0, rows)
		return out
	}
	c := make([]float32, 2*rows*n)
	FFTWiden(c, x, 0, rows*n)
	RfftPostOdd(out, p.C.FFT(c, p.Table, rows), n, 0, rows)
	return out
}

// Irfft is the whole inverse real transform of plan p on the (rows, p.N/2+1, 2) half spectrum
// with the twins: the (rows, p.N) real rows.
func (p *RfftPlan) Irfft(spec []float32, rows int) []float32 {
	n := p.N
	out := make([]float32, rows*n)
	if n%2 == 0 {
		pre := make([]float32, rows*n)
		IrfftPre(pre, spec, p.Table[p.Post:], n/2, 0, rows)
		IrfftOut(out, p.C.FFT(pre, p.Table, rows), p.Scale, 0, rows*n)
		return out
	}
	pre := make([]float32, 2*rows*n)
	IrfftPreOdd(pre, spec, n, 0, rows)
	IrfftOutOdd(out, p.C.FFT(pre, p.Table, rows), p.Scale, 0, rows*n)
	return out
}
