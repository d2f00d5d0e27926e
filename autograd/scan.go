package autograd

import (
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// SelectiveScan returns the states of the diagonal selective scan (the seeds'
// selectiveScanDiag) with coefficients constant over time:
//
//	h[t,j] = a[j]*h[t-1,j] + b[j]*x[t,j],   h[-1,j] = h0[j]
//
// x is one sequence (seqLen, state) with h0 of shape (state), or a batch (batch, seqLen, state)
// with h0 of shape (batch, state); a and b are (state), shared by the batch. The result has x's
// shape. The arithmetic is ops.SelectiveScanDiagBatchedFwd's (two rounded products and one
// rounded sum per step, the same bits on every device). Gradients flow to all four operands
// (ops.SelectiveScanDiagBatchedBwd, from the states the node holds as its value); those of a and
// b are summed over time and then over the batch in a fixed order.
func (t *Tape) SelectiveScan(a, b, x, h0 Var) Var {
	return t.selectiveScan("selective_scan", false, a, b, x, h0)
}

// SelectiveScanVar returns the states of the time-varying diagonal selective scan (the seeds'
// selectiveScanDiagVar, with its backward):
//
//	h[t,j] = a[t,j]*h[t-1,j] + b[t,j]*x[t,j],   h[-1,j] = h0[j]
//
// a, b and x share one shape, (seqLen, state) with h0 of shape (state), or (batch, seqLen,
// state) with h0 of shape (batch, state); the result has that shape. This is the scan of a
// Mamba-style block: the caller computes the discretized transition a = exp(Δ·A) and the input
// term (b the discretized input matrix, x the input broadcast over the state; or b = 1 and x the
// product, which gives h = a*h + x exactly) with tape ops, and gradients flow back through them.
// The arithmetic is ops.SelectiveScanDiagVarBatchedFwd's; the backward
// (ops.SelectiveScanDiagVarBatchedBwd) walks time backward per channel: g[t] = dY[t] +
// a[t+1]*g[t+1], da[t] = g[t]*h[t-1], db[t] = g[t]*x[t], dx[t] = g[t]*b[t], dh0 = a[0]*g[0].
func (t *Tape) SelectiveScanVar(a, b, x, h0 Var) Var {
	return t.selectiveScan("selective_scan_var", true, a, b, x, h0)
}

func (t *Tape) selectiveScan(op string, varying bool, a, b, x, h0 Var) Var {
	vs, ok := t.args(op, a, b, x, h0)
	if !ok || !t.liveArgs(op, vs) {
		return Var{}
	}
	sa, sb, sx, sh := vs[0].shape, vs[1].shape, vs[2].shape, vs[3].shape
	if len(sx) != 2 && len(sx) != 3 {
		return t.failf(op, "x %v: want (seqLen, state) or (batch, seqLen, state)", sx)
	}
	batch, seqLen, state := 1, sx[len(sx)-2], sx[len(sx)-1]
	wantH := []int{state}
	if len(sx) == 3 {
		batch, wantH = sx[0], []int{sx[0], state}
	}
	wantC := []int{state}
	if varying {
		wantC = sx
	}
	if !slices.Equal(sa, wantC) || !slices.Equal(sb, wantC) {
		return t.failf(op, "a %v and b %v: want %v for x %v", sa, sb, wantC, sx)
	}
	if !slices.Equal(sh, wantH) {
		return t.failf(op, "h0 %v: want %v for x %v", sh, wantH, sx)
	}
	fwd, bwd := ops.SelectiveScanDiagBatchedFwd, ops.SelectiveScanDiagBatchedBwd
	if varying {
		fwd, bwd = ops.SelectiveScanDiagVarBatchedFwd, ops.SelectiveScanDiagVarBatchedBwd
	}
	va, vb, vx, vh := vs[0].buf, vs[1].buf, vs[2].buf, vs[3].buf
	y, err := fwd(va, vb, vx, vh, batch, seqLen, state)
	return t.record(op, slices.Clone(sx), y, err, nil, []Var{a, b, x, h0}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		dA, dB, dX, dH0, err := bwd(va, vb, vx, vh, y, g, batch, seqLen, state)
		if err != nil {
			return nil, err
		}
		out := []*ops.Buffer{dA, dB, dX, dH0}
		for k, n := range need {
			if !n {
				out[k].Release()
				out[k] = nil
			}
		}
		return out, nil
	})
}
