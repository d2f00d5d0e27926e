package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Layer norm twins (LayerNormFwd, LayerNormBwd) against float64 references, and against the
// scheme they replaced (the forward returning xhat and invStd, the backward reading them), which
// they must match bit for bit.

var (
	lnRows = []int{1, 63, 64, 65, 200}
	lnCols = []int{1, 31, 256, 257, 4099, 5000}
)

const lnEps = 1e-6

// lnInputs returns x (rows of offset + noise, the offset varying per row), gamma and beta.
func lnInputs(rng *rand.Rand, rows, cols int) (x, gamma, beta []float32) {
	x = make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		off := float32(rng.NormFloat64())
		sd := float32(math.Exp(rng.Float64()*4 - 2))
		for c := 0; c < cols; c++ {
			x[r*cols+c] = off + float32(sd*float32(rng.NormFloat64()))
		}
	}
	gamma, beta = lnParams(rng, cols)
	return x, gamma, beta
}

func lnParams(rng *rand.Rand, cols int) (gamma, beta []float32) {
	gamma, beta = make([]float32, cols), make([]float32, cols)
	for c := range gamma {
		gamma[c] = float32(1 + 0.5*rng.NormFloat64())
		beta[c] = float32(0.5 * rng.NormFloat64())
	}
	return gamma, beta
}

func lnNormal(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func lnFwd(x, gamma, beta []float32, rows, cols int) (out, mean, sd []float32) {
	out, mean, sd = make([]float32, rows*cols), make([]float32, rows), make([]float32, rows)
	LayerNormFwd(out, mean, sd, x, gamma, beta, cols, 1/float32(cols), lnEps, 0, rows)
	return out, mean, sd
}

func lnBwd(dout, x, mean, sd, gamma []float32, rows, cols int) (dx, dg, db []float32) {
	chunks := (rows + ColChunk - 1) / ColChunk
	dx, dg, db = make([]float32, rows*cols), make([]float32, chunks*cols), make([]float32, chunks*cols)
	LayerNormBwd(dx, dg, db, dout, x, mean, sd, gamma, rows, cols, float32(cols), 1/float32(cols), 0, chunks)
	return dx, dg, db
}

// lnXhat returns (x - mean[r]) / sd[r], float32.
func lnXhat(x, mean, sd []float32, rows, cols int) []float32 {
	h := make([]float32, rows*cols)
	for i, v := range x {
		h[i] = (v - mean[i/cols]) / sd[i/cols]
	}
	return h
}

// lnCheck fails when |got - want| > ulps * 2^-23 * scale (scale: the magnitude the result's
// rounding errors are relative to) and returns the error in those units.
func lnCheck(t *testing.T, what string, i int, got float32, want, scale, ulps float64) float64 {
	e := math.Abs(float64(got)-want) / (scale * 0x1p-23)
	if scale == 0 && float64(got) == want {
		e = 0
	}
	if !(e <= ulps) {
		t.Helper()
		t.Fatalf("%s[%d] = %g, want %g (%.3g ulp of %g)", what, i, got, want, e, scale)
	}
	return e
}

func TestLayerNormFwd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := [3]float64{}
	for _, rows := range lnRows {
		for _, cols := range lnCols {
			x, gamma, beta := lnInputs(rng, rows, cols)
			out, mean, sd := lnFwd(x, gamma, beta, rows, cols)
			for r := 0; r < rows; r++ {
				xr := x[r*cols : (r+1)*cols]
				var m, ss, abs float64
				for _, v := range xr {
					m += float64(v)
					abs += math.Abs(float64(v))
				}
				m /= float64(cols)
				for _, v := range xr {
					ss += (float64(v) - m) * (float64(v) - m)
				}
				s := math.Sqrt(ss/float64(cols) + lnEps)
				// The float32 mean is off by a few ulp of the mean absolute value, which shifts
				// every x - mean by that much.
				worst[0] = max(worst[0], lnCheck(t, "mean", r, mean[r], m, abs/float64(cols), 16))
				worst[0] = max(worst[0], lnCheck(t, "sd", r, sd[r], s, s, 3))
				shift := abs / float64(cols) / s
				for c, v := range xr {
					h := (float64(v) - m) / s
					i := r*cols + c
					o := h*float64(gamma[c]) + float64(beta[c])
					sc := (math.Abs(h)+shift)*math.Abs(float64(gamma[c])) + math.Abs(float64(beta[c]))
					worst[1] = max(worst[1], lnCheck(t, "out", i, out[i], o, sc, 6))
				}
			}
			// Any split of the rows computes the same bits.
			o2, m2, s2 := make([]float32, rows*cols), make([]float32, rows), make([]float32, rows)
			mid := rows / 2
			LayerNormFwd(o2, m2, s2, x, gamma, beta, cols, 1/float32(cols), lnEps, mid, rows)
			LayerNormFwd(o2, m2, s2, x, gamma, beta, cols, 1/float32(cols), lnEps, 0, mid)
			if !lnBitsEqual(o2, out) || !lnBitsEqual(m2, mean) || !lnBitsEqual(s2, sd) {
				t.Fatalf("%dx%d: split rows give other bits", rows, cols)
			}
		}
	}
	t.Logf("max error (ulp of scale): mean/sd %.3g, out %.3g", worst[0], worst[1])
}

func TestLayerNormBwd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	worst := [3]float64{}
	for _, rows := range lnRows {
		for _, cols := range lnCols {
			x, gamma, beta := lnInputs(rng, rows, cols)
			_, mean, sd := lnFwd(x, gamma, beta, rows, cols)
			xhat := lnXhat(x, mean, sd, rows, cols)
			dout := lnNormal(rng, rows*cols)
			dx, dg, db := lnBwd(dout, x, mean, sd, gamma, rows, cols)
			n := float64(cols)
			for r := 0; r < rows; r++ {
				o, h := dout[r*cols:(r+1)*cols], xhat[r*cols:(r+1)*cols]
				var s1, s2, a1, a2 float64
				for c := range o {
					d := float64(o[c]) * float64(gamma[c])
					s1 += d
					s2 += d * float64(h[c])
					a1 += math.Abs(d)
					a2 += math.Abs(d * float64(h[c]))
				}
				is := 1 / float64(sd[r])
				for c := range o {
					d := float64(o[c]) * float64(gamma[c])
					hc := float64(h[c])
					want := (n*d - s1 - hc*s2) * is / n
					// The terms n*dxh, S1 and xhat*S2 (and the row sums' own rounding, a few
					// ulp of the sums of magnitudes) cancel; the error is relative to them.
					scale := (n*math.Abs(d) + a1 + math.Abs(hc)*a2) * is / n
					worst[0] = max(worst[0], lnCheck(t, "dx", r*cols+c, dx[r*cols+c], want, scale, 8))
				}
			}
			// The partials are the chunked column sums of dout*xhat and dout, rows ascending
			// from -0.0 (stage 1 of the two-stage column sum), bit for bit.
			chunks := (rows + ColChunk - 1) / ColChunk
			for ch := 0; ch < chunks; ch++ {
				for c := 0; c < cols; c++ {
					g, b := negZero, negZero
					for r := ch * ColChunk; r < min(rows, (ch+1)*ColChunk); r++ {
						g += float32(dout[r*cols+c] * xhat[r*cols+c])
						b += dout[r*cols+c]
					}
					if i := ch*cols + c; math.Float32bits(dg[i]) != math.Float32bits(g) ||
						math.Float32bits(db[i]) != math.Float32bits(b) {
						t.Fatalf("%dx%d: chunk %d column %d: partials %g %g, want %g %g", rows, cols, ch, c, dg[i], db[i], g, b)
					}
				}
			}
			// Stage 2 (chunks ascending from -0.0) gives the column sums.
			for c := 0; c < cols; c++ {
				g, b := negZero, negZero
				for ch := 0; ch < chunks; ch++ {
					g += dg[ch*cols+c]
					b += db[ch*cols+c]
				}
				var wg, wb, ag, ab float64
				for r := 0; r < rows; r++ {
					p := float64(dout[r*cols+c]) * float64(xhat[r*cols+c])
					wg += p
					wb += float64(dout[r*cols+c])
					ag += math.Abs(p)
					ab += math.Abs(float64(dout[r*cols+c]))
				}
				// Sequential sums of up to 64 + 4 terms: at most that many ulp of the magnitudes,
				// a few in practice.
				worst[1] = max(worst[1], lnCheck(t, "dgamma", c, g, wg, ag, 16))
				worst[2] = max(worst[2], lnCheck(t, "dbeta", c, b, wb, ab, 16))
			}
			lnCheckSplits(t, dx, dg, db, dout, x, mean, sd, gamma, rows, cols)
		}
	}
	t.Logf("max error (ulp of scale): dx %.3g, dgamma %.3g, dbeta %.3g", worst[0], worst[1], worst[2])
}

// lnCheckSplits checks that LayerNormBwd computes the bits (dx, dg, db) however its chunks are
// split: two halves (upper first), and every chunk on its own, last first, into buffers holding
// garbage.
func lnCheckSplits(t *testing.T, dx, dg, db, dout, x, mean, sd, gamma []float32, rows, cols int) {
	t.Helper()
	chunks := (rows + ColChunk - 1) / ColChunk
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 12345
		}
		return v
	}
	run := func(splits [][2]int) {
		dx2, dg2, db2 := fill(rows*cols), fill(chunks*cols), fill(chunks*cols)
		for _, s := range splits {
			LayerNormBwd(dx2, dg2, db2, dout, x, mean, sd, gamma, rows, cols, float32(cols), 1/float32(cols), s[0], s[1])
		}
		if !lnBitsEqual(dx2, dx) || !lnBitsEqual(dg2, dg) || !lnBitsEqual(db2, db) {
			t.Fatalf("%dx%d: chunks split as %v give other bits", rows, cols, splits)
		}
	}
	run([][2]int{{chunks / 2, chunks}, {0, chunks / 2}})
	var each [][2]int
	for ch := chunks - 1; ch >= 0; ch-- {
		each = append(each, [2]int{ch, ch + 1})
	}
	run(each)
}

// lnTreeSum is a row sum as a 256-thread block computes it, written out on its own: partial t
// folds val(t), val(t+256), ... from -0.0, then p[t] += p[t+s] for s = 128, ..., 1.
func lnTreeSum(cols int, val func(c int) float32) float32 {
	var p [256]float32
	for t := range p {
		p[t] = negZero
		for c := t; c < cols; c += 256 {
			p[t] = p[t] + val(c)
		}
	}
	for s := 128; s >= 1; s /= 2 {
		for t := 0; t < s; t++ {
			p[t] = p[t] + p[t+s]
		}
	}
	return p[0]
}

// lnOldFwd is the scheme LayerNormFwd replaced, one operation at a time: it returned out, xhat
// and invStd.
func lnOldFwd(x, gamma, beta []float32, rows, cols int) (out, xhat, invStd []float32) {
	out, xhat, invStd = make([]float32, rows*cols), make([]float32, rows*cols), make([]float32, rows)
	invCols := 1 / float32(cols)
	for r := 0; r < rows; r++ {
		xr := x[r*cols : (r+1)*cols]
		mean := lnTreeSum(cols, func(c int) float32 { return xr[c] })
		mean = float32(mean * invCols)
		q := lnTreeSum(cols, func(c int) float32 {
			d := xr[c] - mean
			return float32(d * d)
		})
		v := float32(q * invCols)
		sd := float32(math.Sqrt(float64(v + lnEps))) // correctly rounded: sqrt of a float32 in float64
		invStd[r] = 1 / sd
		for c := range xr {
			i := r*cols + c
			xhat[i] = (xr[c] - mean) / sd
			p := float32(xhat[i] * gamma[c])
			out[i] = p + beta[c]
		}
	}
	return out, xhat, invStd
}

// lnOldBwd is the backward LayerNormBwd replaced, from xhat and invStd, one operation at a time,
// returning dx and the chunk partials.
func lnOldBwd(dout, xhat, invStd, gamma []float32, rows, cols int) (dx, dg, db []float32) {
	chunks := (rows + ColChunk - 1) / ColChunk
	dx, dg, db = make([]float32, rows*cols), make([]float32, chunks*cols), make([]float32, chunks*cols)
	colsScale, invCols := float32(cols), 1/float32(cols)
	for r := 0; r < rows; r++ {
		o, h := dout[r*cols:(r+1)*cols], xhat[r*cols:(r+1)*cols]
		s1 := lnTreeSum(cols, func(c int) float32 { return float32(o[c] * gamma[c]) })
		s2 := lnTreeSum(cols, func(c int) float32 {
			d := float32(o[c] * gamma[c])
			return float32(d * h[c])
		})
		for c := range o {
			d := float32(o[c] * gamma[c])
			a := float32(d * colsScale)
			a = a - s1
			b := float32(h[c] * s2)
			a = a - b
			a = float32(a * invStd[r])
			dx[r*cols+c] = float32(a * invCols)
		}
	}
	for ch := 0; ch < chunks; ch++ {
		for c := 0; c < cols; c++ {
			g, b := negZero, negZero
			for r := ch * ColChunk; r < min(rows, (ch+1)*ColChunk); r++ {
				g = g + float32(dout[r*cols+c]*xhat[r*cols+c])
				b = b + dout[r*cols+c]
			}
			dg[ch*cols+c], db[ch*cols+c] = g, b
		}
	}
	return dx, dg, db
}

// TestLayerNormXhatScheme: out, dx and the dgamma/dbeta partials are bit for bit those of the
// scheme that kept xhat and invStd (lnOldFwd, lnOldBwd), on rows with offsets up to 3e7 (where
// x - mean cancels) and spreads from 1e-4 to 1e3, and 1/sd is the old invStd.
func TestLayerNormXhatScheme(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	offsets := []float64{0, 1, -3, 1e3, -1e4, 1e5, 3e7}
	for _, rows := range []int{1, 5, 64, 65, 130} {
		for _, cols := range []int{1, 2, 33, 256, 257, 4097} {
			x := make([]float32, rows*cols)
			for r := 0; r < rows; r++ {
				off := offsets[r%len(offsets)] * (1 + 0.1*rng.Float64())
				spread := math.Pow(10, rng.Float64()*7-4)
				for c := 0; c < cols; c++ {
					x[r*cols+c] = float32(off + spread*rng.NormFloat64())
				}
			}
			if rows > 2 {
				for c := 0; c < cols; c++ {
					x[2*cols+c] = 7.25 // a constant row: var = 0, sd = sqrt(eps)
				}
			}
			gamma, beta := lnParams(rng, cols)
			out, mean, sd := lnFwd(x, gamma, beta, rows, cols)
			oldOut, xhat, invStd := lnOldFwd(x, gamma, beta, rows, cols)
			if i := lnFirstDiff(out, oldOut); i >= 0 {
				t.Fatalf("%dx%d: out[%d] = %g, old scheme %g", rows, cols, i, out[i], oldOut[i])
			}
			for r := range sd {
				if math.Float32bits(1/sd[r]) != math.Float32bits(invStd[r]) {
					t.Fatalf("%dx%d: 1/sd[%d] = %g, old invStd %g", rows, cols, r, 1/sd[r], invStd[r])
				}
			}
			if i := lnFirstDiff(lnXhat(x, mean, sd, rows, cols), xhat); i >= 0 {
				t.Fatalf("%dx%d: recomputed xhat differs at %d", rows, cols, i)
			}
			dout := lnNormal(rng, rows*cols)
			dx, dg, db := lnBwd(dout, x, mean, sd, gamma, rows, cols)
			wx, wg, wb := lnOldBwd(dout, xhat, invStd, gamma, rows, cols)
			for k, p := range [][2][]float32{{dx, wx}, {dg, wg}, {db, wb}} {
				if i := lnFirstDiff(p[0], p[1]); i >= 0 {
					t.Fatalf("%dx%d: output %d of the backward [%d] = %g, old scheme %g", rows, cols, k, i, p[0][i], p[1][i])
				}
			}
			lnCheckSplits(t, dx, dg, db, dout, x, mean, sd, gamma, rows, cols)
		}
	}
}

// TestLayerNormNaN: a NaN in a row makes that row's outputs (and, backward, that column's
// partials of its chunk) NaN and leaves everything else as it was.
func TestLayerNormNaN(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows, cols, nr, nc = 130, 300, 65, 257
	nan := float32(math.NaN())
	x, gamma, beta := lnInputs(rng, rows, cols)
	out, mean, sd := lnFwd(x, gamma, beta, rows, cols)
	xn := append([]float32(nil), x...)
	xn[nr*cols+nc] = nan
	outN, meanN, sdN := lnFwd(xn, gamma, beta, rows, cols)
	for r := 0; r < rows; r++ {
		if lnIsNaN(meanN[r]) != (r == nr) || lnIsNaN(sdN[r]) != (r == nr) {
			t.Errorf("mean[%d] = %g, sd[%d] = %g", r, meanN[r], r, sdN[r])
		}
		for c := 0; c < cols; c++ {
			i := r*cols + c
			if r == nr {
				if !lnIsNaN(outN[i]) {
					t.Fatalf("row %d col %d: out %g, want NaN", r, c, outN[i])
				}
			} else if math.Float32bits(outN[i]) != math.Float32bits(out[i]) {
				t.Fatalf("row %d col %d changed", r, c)
			}
		}
	}

	dout := lnNormal(rng, rows*cols)
	dx, dg, db := lnBwd(dout, x, mean, sd, gamma, rows, cols)
	dn := append([]float32(nil), dout...)
	dn[nr*cols+nc] = nan
	dxN, dgN, dbN := lnBwd(dn, x, mean, sd, gamma, rows, cols)
	for i := range dx {
		if r := i / cols; r == nr {
			if !lnIsNaN(dxN[i]) {
				t.Fatalf("dx[%d] = %g, want NaN", i, dxN[i])
			}
		} else if math.Float32bits(dxN[i]) != math.Float32bits(dx[i]) {
			t.Fatalf("dx[%d] changed", i)
		}
	}
	for i := range dg {
		if ch, c := i/cols, i%cols; ch == nr/ColChunk && c == nc {
			if !lnIsNaN(dgN[i]) || !lnIsNaN(dbN[i]) {
				t.Fatalf("partials[%d] = %g %g, want NaN", i, dgN[i], dbN[i])
			}
		} else if math.Float32bits(dgN[i]) != math.Float32bits(dg[i]) || math.Float32bits(dbN[i]) != math.Float32bits(db[i]) {
			t.Fatalf("partials[%d] changed", i)
		}
	}
	// A NaN in x (with the clean mean and sd) makes that xhat NaN: it poisons S2, hence the whole
	// row of dx, and the dgamma partial of its column, not the dbeta one.
	dxN, dgN, dbN = lnBwd(dout, xn, mean, sd, gamma, rows, cols)
	for c := 0; c < cols; c++ {
		if !lnIsNaN(dxN[nr*cols+c]) {
			t.Fatalf("dx[%d,%d] = %g, want NaN", nr, c, dxN[nr*cols+c])
		}
	}
	if i := nr/ColChunk*cols + nc; !lnIsNaN(dgN[i]) || lnIsNaN(dbN[i]) {
		t.Fatalf("partials %g %g, want NaN and a number", dgN[i], dbN[i])
	}
}

func lnIsNaN(v float32) bool { return v != v }

func lnBitsEqual(a, b []float32) bool { return len(a) == len(b) && lnFirstDiff(a, b) < 0 }

// lnFirstDiff returns the first index where a and b differ in bits (NaN payloads aside), or -1.
func lnFirstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(lnIsNaN(a[i]) && lnIsNaN(b[i])) {
			return i
		}
	}
	return -1
}

// TestLayerNormFwdLevels: every kernel set of this machine (the one-pass AVX-512 rows of
// layerNormRowsFast, the vector kernels of AVX2) gives the bits of the pure-Go loops (what -tags
// noasm runs), NaN payloads included, on rows of whole and partial 256-column chunks, with rows
// of infinities, NaNs, signed zeros, huge and tiny values, and with eps 0 (a zero variance).
func TestLayerNormFwdLevels(t *testing.T) {
	inf, nan := float32(math.Inf(1)), math.Float32frombits(0x7fc01234)
	specials := []float32{inf, -inf, nan, 0, negZero, 3e38, -3e38, 1e-45, 1e19, -2e-38}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, cols := range []int{1, 2, 15, 16, 17, 255, 256, 257, 300, 1000, 1023, 1024, 1025, 4096, 5000} {
		const rows = 14
		x, gamma, beta := lnInputs(rng, rows, cols)
		fill := func(r int, f func(c int) float32) {
			for c := 0; c < cols; c++ {
				x[r*cols+c] = f(c)
			}
		}
		fill(1, func(c int) float32 { return 2.5 })                                 // constant: variance 0
		fill(2, func(c int) float32 { return negZero })                             // all -0
		fill(3, func(c int) float32 { return []float32{0, negZero}[c%2] })          // signed zeros
		fill(4, func(c int) float32 { return float32(rng.NormFloat64() * 1e19) })   // squares overflow
		fill(5, func(c int) float32 { return float32(rng.NormFloat64() * 1e-30) })  // squares underflow
		fill(6, func(c int) float32 { return specials[c%len(specials)] })           // everything
		fill(7, func(c int) float32 { return specials[rng.IntN(len(specials))] })   // at random
		x[8*cols+cols-1] = inf                                                      // one infinity at the end
		x[9*cols+cols/2] = nan                                                      // one NaN
		x[10*cols] = -inf                                                           // one at the start
		fill(11, func(c int) float32 { return math.Float32frombits(rng.Uint32()) }) // any bits
		fill(12, func(c int) float32 { return float32(1e6 + rng.NormFloat64()) })   // large mean
		gamma[cols/3], beta[cols-1] = nan, -inf
		for _, eps := range []float32{lnEps, 0} {
			// run computes the rows on the kernel set level, in one call or split into [5, 6),
			// [0, 5) and [6, rows) (the same bits).
			run := func(level string, split bool) (out, mean, sd []float32) {
				defer useVecLevel(useVecLevel(level))
				out, mean, sd = make([]float32, rows*cols), make([]float32, rows), make([]float32, rows)
				for i := range out {
					out[i] = -12345
				}
				ranges := [][2]int{{0, rows}}
				if split {
					ranges = [][2]int{{5, 6}, {0, 5}, {6, rows}}
				}
				for _, r := range ranges {
					LayerNormFwd(out, mean, sd, x, gamma, beta, cols, 1/float32(cols), eps, r[0], r[1])
				}
				return out, mean, sd
			}
			wo, wm, ws := run("go", false)
			for _, l := range vecLevels() {
				for _, split := range []bool{false, true} {
					o, m, s := run(l, split)
					for _, c := range []struct {
						what      string
						got, want []float32
						per       int
					}{{"out", o, wo, cols}, {"mean", m, wm, 1}, {"sd", s, ws, 1}} {
						for i := range c.want {
							if math.Float32bits(c.got[i]) != math.Float32bits(c.want[i]) {
								t.Fatalf("%s (split %v) cols=%d eps=%g: %s[%d] (row %d) = %#08x (%g), Go loops %#08x (%g)",
									l, split, cols, eps, c.what, i, i/c.per, math.Float32bits(c.got[i]), c.got[i],
									math.Float32bits(c.want[i]), c.want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestLayerNormFwdLarge: outputs of 1 MiB and more (the non-temporal stores of the AVX-512 rows,
// where the rows are 64-byte aligned; ordinary ones where they are not, at an odd offset or with
// cols not a multiple of 16) give the bits of the pure-Go loops, and nothing around out is written.
func TestLayerNormFwdLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, cols := range []int{1024, 1000, 4096, 272} {
		rows := (1<<20)/(4*cols) + 3
		x, gamma, beta := lnInputs(rng, rows, cols)
		x[7*cols+3] = float32(math.Inf(1))
		for _, off := range []int{0, 1, 16} {
			run := func(level string) (out, mean, sd []float32) {
				defer useVecLevel(useVecLevel(level))
				buf := make([]float32, rows*cols+off+16)
				for i := range buf {
					buf[i] = -12345
				}
				out, mean, sd = buf[off:off+rows*cols], make([]float32, rows), make([]float32, rows)
				LayerNormFwd(out, mean, sd, x, gamma, beta, cols, 1/float32(cols), lnEps, 0, rows)
				for i, v := range buf {
					if (i < off || i >= off+rows*cols) && v != -12345 {
						t.Fatalf("%s cols=%d off=%d: buf[%d] written", level, cols, off, i)
					}
				}
				return out, mean, sd
			}
			wo, wm, ws := run("go")
			for _, l := range vecLevels()[:len(vecLevels())-1] {
				o, m, s := run(l)
				if i := lnFirstDiff(o, wo); i >= 0 || !lnBitsEqual(m, wm) || !lnBitsEqual(s, ws) {
					t.Fatalf("%s cols=%d off=%d: other bits than the Go loops (out from %d)", l, cols, off, i)
				}
			}
		}
	}
}

// BenchmarkLayerNormFwd times LayerNormFwd split as the ops CPU backend splits it (Parallel over
// rows, at least 2^15 elements a range): 4096 x 1024 (ops' benchmark shape against PyTorch,
// internal/bench/cpu-torch-norm.sh), 4096 x 4096 (from memory) and 32 x 1024 (in the cache: the
// arithmetic alone).
func BenchmarkLayerNormFwd(b *testing.B) {
	for _, s := range [][2]int{{4096, 1024}, {4096, 4096}, {32, 1024}} {
		rows, cols := s[0], s[1]
		b.Run(fmt.Sprintf("%dx%d", rows, cols), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			x, gamma, beta := lnInputs(rng, rows, cols)
			out, mean, sd := make([]float32, rows*cols), make([]float32, rows), make([]float32, rows)
			b.SetBytes(int64(8 * rows * cols))
			for b.Loop() {
				Parallel(rows, max(1, (1<<15)/cols), func(lo, hi int) {
					LayerNormFwd(out, mean, sd, x, gamma, beta, cols, 1/float32(cols), lnEps, lo, hi)
				})
			}
		})
	}
}
