package cpu

// The selective scan (diagonal state-space model) family: the twins of ptx/scan.cu. Layout: X,
// the states out, dY, dX and the time-varying A, B, dA, dB are row-major (batch, seqLen, state);
// h0 and dH0 are (batch, state); the constant-coefficient A, B are (state) and their per-channel
// gradient partials (batch, state). A channel is c = b*state + j; the twins compute the channels
// [lo, hi) (one GPU thread each), walking time sequentially: the association of every result is
// the plain recurrence, for every seqLen, batch and state. Products are wrapped in float32(...)
// so that no compiler fuses them into an fma: each product and each sum is one rounded float32
// operation, as on the GPU (nvcc --fmad=false).
//
// The loops run time outermost and the channels of one batch row innermost, so that the inner
// loop is contiguous; each channel's chain of operations is the one stated, whatever the loop
// order.

// scanRows calls f(b, j0, j1) for the parts of the channels [lo, hi) in each batch row b: the
// state indices [j0, j1).
func scanRows(state, lo, hi int, f func(b, j0, j1 int)) {
	if state == 0 {
		return
	}
	for b := lo / state; b*state < hi; b++ {
		f(b, max(lo-b*state, 0), min(hi-b*state, state))
	}
}

// SelectiveScanDiagFwd writes the states of the channels [lo, hi) of the diagonal scan with
// coefficients a, b (state) constant over time, input x (batch, seqLen, state) and initial states
// h0 (batch, state):
//
//	h := h0[b,j]
//	for t := 0; t < seqLen; t++ {
//		h = float32(a[j]*h) + float32(b[j]*x[b,t,j])   // two rounded products, one rounded sum
//		out[b,t,j] = h
//	}
func SelectiveScanDiagFwd(out, a, b, x, h0 []float32, seqLen, state, lo, hi int) {
	scanRows(state, lo, hi, func(bi, j0, j1 int) {
		base := bi * seqLen * state
		prev := h0[bi*state : bi*state+state]
		for t := range seqLen {
			row := base + t*state
			o, xr := out[row:row+state], x[row:row+state]
			for j := j0; j < j1; j++ {
				o[j] = float32(a[j]*prev[j]) + float32(b[j]*xr[j])
			}
			prev = o
		}
	})
}

// SelectiveScanDiagVarFwd writes the states of the channels [lo, hi) of the diagonal scan with
// time-varying coefficients a, b and input x, all (batch, seqLen, state), and initial states h0
// (batch, state):
//
//	h := h0[b,j]
//	for t := 0; t < seqLen; t++ {
//		h = float32(a[b,t,j]*h) + float32(b[b,t,j]*x[b,t,j])
//		out[b,t,j] = h
//	}
func SelectiveScanDiagVarFwd(out, a, b, x, h0 []float32, seqLen, state, lo, hi int) {
	scanRows(state, lo, hi, func(bi, j0, j1 int) {
		base := bi * seqLen * state
		prev := h0[bi*state : bi*state+state]
		for t := range seqLen {
			row := base + t*state
			o, ar, br, xr := out[row:row+state], a[row:row+state], b[row:row+state], x[row:row+state]
			for j := j0; j < j1; j++ {
				o[j] = float32(ar[j]*prev[j]) + float32(br[j]*xr[j])
			}
			prev = o
		}
	})
}

// SelectiveScanDiagBwd writes the gradients of SelectiveScanDiagFwd for the channels [lo, hi):
// dX (batch, seqLen, state), dH0 (batch, state), and the per-channel partials dAp, dBp (batch,
// state) of the coefficient gradients (SelectiveScanSumBatch sums them over the batch). out holds
// the forward's states, dY the cotangent (both (batch, seqLen, state)); hPrev is out[b,t-1,j],
// h0[b,j] at t = 0:
//
//	g, pa, pb := 0, 0, 0
//	for t := seqLen - 1; t >= 0; t-- {
//		total := dY[b,t,j] + g
//		pa = pa + float32(total*hPrev)
//		pb = pb + float32(total*x[b,t,j])
//		dX[b,t,j] = total * b[j]
//		g = total * a[j]
//	}
//	dAp[b,j], dBp[b,j], dH0[b,j] = pa, pb, g
func SelectiveScanDiagBwd(dAp, dBp, dX, dH0, a, b, x, h0, out, dY []float32, seqLen, state, lo, hi int) {
	scanRows(state, lo, hi, func(bi, j0, j1 int) {
		base, c0 := bi*seqLen*state, bi*state
		pa, pb, g := dAp[c0:c0+state], dBp[c0:c0+state], dH0[c0:c0+state]
		for j := j0; j < j1; j++ {
			pa[j], pb[j], g[j] = 0, 0, 0
		}
		for t := seqLen - 1; t >= 0; t-- {
			row := base + t*state
			prev := h0[c0 : c0+state]
			if t > 0 {
				prev = out[row-state : row]
			}
			dy, xr, dx := dY[row:row+state], x[row:row+state], dX[row:row+state]
			for j := j0; j < j1; j++ {
				total := dy[j] + g[j]
				pa[j] += float32(total * prev[j])
				pb[j] += float32(total * xr[j])
				dx[j] = float32(total * b[j])
				g[j] = float32(total * a[j])
			}
		}
	})
}

// SelectiveScanDiagVarBwd writes the gradients of SelectiveScanDiagVarFwd for the channels
// [lo, hi): dA, dB, dX (batch, seqLen, state) and dH0 (batch, state); out holds the forward's
// states, dY the cotangent, hPrev is out[b,t-1,j], h0[b,j] at t = 0:
//
//	g := 0
//	for t := seqLen - 1; t >= 0; t-- {
//		total := dY[b,t,j] + g          // g[t] = dY[t] + A[t+1]*g[t+1]
//		dA[b,t,j] = total * hPrev
//		dB[b,t,j] = total * x[b,t,j]
//		dX[b,t,j] = total * b[b,t,j]
//		g = total * a[b,t,j]
//	}
//	dH0[b,j] = g                        // A[0]*g[0]
func SelectiveScanDiagVarBwd(dA, dB, dX, dH0, a, b, x, h0, out, dY []float32, seqLen, state, lo, hi int) {
	scanRows(state, lo, hi, func(bi, j0, j1 int) {
		base, c0 := bi*seqLen*state, bi*state
		g := dH0[c0 : c0+state]
		for j := j0; j < j1; j++ {
			g[j] = 0
		}
		for t := seqLen - 1; t >= 0; t-- {
			row := base + t*state
			prev := h0[c0 : c0+state]
			if t > 0 {
				prev = out[row-state : row]
			}
			r := row + state
			dy, xr, ar, br := dY[row:r], x[row:r], a[row:r], b[row:r]
			da, db, dx := dA[row:r], dB[row:r], dX[row:r]
			for j := j0; j < j1; j++ {
				total := dy[j] + g[j]
				da[j] = float32(total * prev[j])
				db[j] = float32(total * xr[j])
				dx[j] = float32(total * br[j])
				g[j] = float32(total * ar[j])
			}
		}
	})
}

// SelectiveScanSumBatch writes, for the states [lo, hi), the sums over the batch of the
// per-channel partials pa, pb (batch, state), in ascending batch order (batch >= 1):
//
//	dA[j] = pa[0,j]; for b := 1; b < batch; b++ { dA[j] = dA[j] + pa[b,j] }   // dB from pb likewise
func SelectiveScanSumBatch(dA, dB, pa, pb []float32, batch, state, lo, hi int) {
	if batch == 0 {
		return
	}
	copy(dA[lo:hi], pa[lo:hi])
	copy(dB[lo:hi], pb[lo:hi])
	for b := 1; b < batch; b++ {
		ra, rb := pa[b*state:b*state+state], pb[b*state:b*state+state]
		for j := lo; j < hi; j++ {
			dA[j] += ra[j]
			dB[j] += rb[j]
		}
	}
}
