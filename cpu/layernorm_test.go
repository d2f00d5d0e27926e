package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Layer norm twins (LayerNormFwd, LayerNormBwd) against float64 references.

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
	gamma, beta = make([]float32, cols), make([]float32, cols)
	for c := range gamma {
		gamma[c] = float32(1 + 0.5*rng.NormFloat64())
		beta[c] = float32(0.5 * rng.NormFloat64())
	}
	return x, gamma, beta
}

func lnFwd(x, gamma, beta []float32, rows, cols int) (out, xhat, invStd []float32) {
	out, xhat, invStd = make([]float32, rows*cols), make([]float32, rows*cols), make([]float32, rows)
	LayerNormFwd(out, xhat, invStd, x, gamma, beta, cols, 1/float32(cols), lnEps, 0, rows)
	return out, xhat, invStd
}

func lnBwd(dout, xhat, invStd, gamma []float32, rows, cols int) (dx, dg, db []float32) {
	chunks := (rows + ColChunk - 1) / ColChunk
	dx, dg, db = make([]float32, rows*cols), make([]float32, chunks*cols), make([]float32, chunks*cols)
	LayerNormBwd(dx, dg, db, dout, xhat, invStd, gamma, rows, cols, float32(cols), 1/float32(cols), 0, chunks)
	return dx, dg, db
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
			out, xhat, invStd := lnFwd(x, gamma, beta, rows, cols)
			for r := 0; r < rows; r++ {
				xr := x[r*cols : (r+1)*cols]
				var mean, ss, abs float64
				for _, v := range xr {
					mean += float64(v)
					abs += math.Abs(float64(v))
				}
				mean /= float64(cols)
				for _, v := range xr {
					ss += (float64(v) - mean) * (float64(v) - mean)
				}
				sd := math.Sqrt(ss/float64(cols) + lnEps)
				// The float32 mean is off by a few ulp of the mean absolute value, which shifts
				// every x - mean by that much.
				shift := abs / float64(cols) / sd
				worst[0] = max(worst[0], lnCheck(t, "invStd", r, invStd[r], 1/sd, 1/sd, 3))
				for c, v := range xr {
					h := (float64(v) - mean) / sd
					i := r*cols + c
					worst[1] = max(worst[1], lnCheck(t, "xhat", i, xhat[i], h, math.Abs(h)+shift, 6))
					o := h*float64(gamma[c]) + float64(beta[c])
					sc := (math.Abs(h)+shift)*math.Abs(float64(gamma[c])) + math.Abs(float64(beta[c]))
					worst[2] = max(worst[2], lnCheck(t, "out", i, out[i], o, sc, 6))
				}
			}
			// Any split of the rows computes the same bits.
			o2, h2, s2 := make([]float32, rows*cols), make([]float32, rows*cols), make([]float32, rows)
			mid := rows / 2
			LayerNormFwd(o2, h2, s2, x, gamma, beta, cols, 1/float32(cols), lnEps, mid, rows)
			LayerNormFwd(o2, h2, s2, x, gamma, beta, cols, 1/float32(cols), lnEps, 0, mid)
			if !lnBitsEqual(o2, out) || !lnBitsEqual(h2, xhat) || !lnBitsEqual(s2, invStd) {
				t.Fatalf("%dx%d: split rows give other bits", rows, cols)
			}
		}
	}
	t.Logf("max error (ulp of scale): invStd %.3g, xhat %.3g, out %.3g", worst[0], worst[1], worst[2])
}

func TestLayerNormBwd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	worst := [3]float64{}
	for _, rows := range lnRows {
		for _, cols := range lnCols {
			x, gamma, beta := lnInputs(rng, rows, cols)
			_, xhat, invStd := lnFwd(x, gamma, beta, rows, cols)
			dout := make([]float32, rows*cols)
			for i := range dout {
				dout[i] = float32(rng.NormFloat64())
			}
			dx, dg, db := lnBwd(dout, xhat, invStd, gamma, rows, cols)
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
				is := float64(invStd[r])
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
			// Any split of the chunks computes the same bits.
			dx2, dg2, db2 := make([]float32, rows*cols), make([]float32, chunks*cols), make([]float32, chunks*cols)
			mid := chunks / 2
			LayerNormBwd(dx2, dg2, db2, dout, xhat, invStd, gamma, rows, cols, float32(cols), 1/float32(cols), mid, chunks)
			LayerNormBwd(dx2, dg2, db2, dout, xhat, invStd, gamma, rows, cols, float32(cols), 1/float32(cols), 0, mid)
			if !lnBitsEqual(dx2, dx) || !lnBitsEqual(dg2, dg) || !lnBitsEqual(db2, db) {
				t.Fatalf("%dx%d: split chunks give other bits", rows, cols)
			}
		}
	}
	t.Logf("max error (ulp of scale): dx %.3g, dgamma %.3g, dbeta %.3g", worst[0], worst[1], worst[2])
}

// TestLayerNormNaN: a NaN in a row makes that row's outputs (and, backward, that column's
// partials of its chunk) NaN and leaves everything else as it was.
func TestLayerNormNaN(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows, cols, nr, nc = 130, 300, 65, 257
	nan := float32(math.NaN())
	x, gamma, beta := lnInputs(rng, rows, cols)
	out, xhat, invStd := lnFwd(x, gamma, beta, rows, cols)
	xn := append([]float32(nil), x...)
	xn[nr*cols+nc] = nan
	outN, xhatN, invStdN := lnFwd(xn, gamma, beta, rows, cols)
	for r := 0; r < rows; r++ {
		if lnIsNaN(invStdN[r]) != (r == nr) {
			t.Errorf("invStd[%d] = %g", r, invStdN[r])
		}
		for c := 0; c < cols; c++ {
			i := r*cols + c
			if r == nr {
				if !lnIsNaN(outN[i]) || !lnIsNaN(xhatN[i]) {
					t.Fatalf("row %d col %d: out %g xhat %g, want NaN", r, c, outN[i], xhatN[i])
				}
			} else if math.Float32bits(outN[i]) != math.Float32bits(out[i]) || math.Float32bits(xhatN[i]) != math.Float32bits(xhat[i]) {
				t.Fatalf("row %d col %d changed", r, c)
			}
		}
	}

	dout := make([]float32, rows*cols)
	for i := range dout {
		dout[i] = float32(rng.NormFloat64())
	}
	dx, dg, db := lnBwd(dout, xhat, invStd, gamma, rows, cols)
	dn := append([]float32(nil), dout...)
	dn[nr*cols+nc] = nan
	dxN, dgN, dbN := lnBwd(dn, xhat, invStd, gamma, rows, cols)
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
	// A NaN in xhat poisons S2, hence the whole row of dx, and the dgamma partial of its column.
	hn := append([]float32(nil), xhat...)
	hn[nr*cols+nc] = nan
	dxN, dgN, dbN = lnBwd(dout, hn, invStd, gamma, rows, cols)
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

func lnBitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
