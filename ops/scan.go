package ops

import (
	"fmt"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The selective scan family (ptx/scan.cu; cpu/scan.go): the diagonal state-space recurrence
//
//	h[b,t,j] = A[j]*h[b,t-1,j] + B[j]*X[b,t,j]            (coefficients constant over time)
//	h[b,t,j] = A[b,t,j]*h[b,t-1,j] + B[b,t,j]*X[b,t,j]    (time-varying, "Var")
//
// with h[b,-1,j] = h0[b,j], every h written. Layout (row-major): X, the states, their cotangent
// dY, and the time-varying A and B are (batch, seqLen, state); h0 is (batch, state); the
// constant A and B are (state), shared by the batch. The seeds' entry points are the batch-1
// forms, with the seeds' operand order and layout: (A, B, X, h0, seqLen, state).
//
// For a Mamba-style block the caller forms the time-varying operands with tape ops: the
// discretized transition A[b,t,j] = exp(Δ[b,t,·]·a_j) and the input term B[b,t,j]*X[b,t,j] with
// B the discretized input matrix and X the input broadcast over the state (or B = 1 and X the
// product already formed: a product by 1 is exact, so the bits are those of h = A*h + X).
//
// Association (the arithmetic contract): every result is the plain sequential recurrence in time,
// one thread per (batch, state) channel, for every seqLen, batch and state: two rounded products
// and one rounded sum per step (cpu.SelectiveScanDiagFwd states it). The result of a sample
// depends on its own values only (not on the batch it is in, nor on the device). A chunked scan
// over time (local scans from 0, chunk carries combined, then fixed up) would change that
// association for every problem of a given seqLen, whatever its channel count, and costs a second
// pass over X; with batch*state channels of a training step (8*16384 in the benchmark shape, 128
// thousand threads, each step's loads contiguous across a warp) the sequential kernel already
// streams at memory speed, so the chunked form is not used: it would only help problems of a few
// thousand channels, whose scans are short in absolute time. It would enter as a function of
// seqLen alone, written once in both scan.cu and cpu/scan.go with a TestSharedConstants row.
//
// Backward: the forward's states are its output (a tape keeps them as the node's value), so the
// backward reads them instead of recomputing; it walks time backward per channel with g = 0,
// total = dY[t] + g, g = total*A, and the gradients of the constant A and B are reduced over time
// (descending, per channel) and then over the batch (ascending, SelectiveScanSumBatch): a fixed
// order, no atomics, in either mode.
var (
	scanFwdOp = row(&kernelOp{name: "selective_scan_diag_fwd", kernel: ptx.SelectiveScanDiagFwd, outs: 1, ins: 4,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SelectiveScanDiagFwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.s[1], h.s[2], lo, hi)
		}})
	scanVarFwdOp = row(&kernelOp{name: "selective_scan_diag_var_fwd", kernel: ptx.SelectiveScanDiagVarFwd, outs: 1, ins: 4,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SelectiveScanDiagVarFwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.s[1], h.s[2], lo, hi)
		}})
	scanBwdOp = row(&kernelOp{name: "selective_scan_diag_bwd", kernel: ptx.SelectiveScanDiagBwd, outs: 4, ins: 6,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SelectiveScanDiagBwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.b[5], h.b[6], h.b[7], h.b[8], h.b[9],
				h.s[1], h.s[2], lo, hi)
		}})
	scanVarBwdOp = row(&kernelOp{name: "selective_scan_diag_var_bwd", kernel: ptx.SelectiveScanDiagVarBwd, outs: 4, ins: 6,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SelectiveScanDiagVarBwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.b[5], h.b[6], h.b[7], h.b[8], h.b[9],
				h.s[1], h.s[2], lo, hi)
		}})
	scanSumBatchOp = row(&kernelOp{name: "selective_scan_sum_batch", kernel: ptx.SelectiveScanSumBatch, outs: 2, ins: 2,
		grid: strided(size(1)), units: size(1),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SelectiveScanSumBatch(h.b[0], h.b[1], h.b[2], h.b[3], h.s[0], h.s[1], lo, hi)
		}})
)

// scanArgs checks the operands of a scan: x (and every extra buffer, e.g. out and dY) of
// batch*seqLen*state elements, h0 of batch*state, a and b of state (or batch*seqLen*state when
// varying). It returns batch*seqLen*state.
func scanArgs(op string, varying bool, a, b, x, h0 *Buffer, batch, seqLen, state int, extra ...*Buffer) (int, error) {
	if batch < 0 || seqLen < 0 || state < 0 {
		return 0, fmt.Errorf("ops: %s: negative size (batch %d, seqLen %d, state %d)", op, batch, seqLen, state)
	}
	n, ok := mulFits(batch, seqLen, state)
	if !ok {
		return 0, fmt.Errorf("ops: %s: (batch %d, seqLen %d, state %d) overflows", op, batch, seqLen, state)
	}
	coef, what := state, "(state)"
	if varying {
		coef, what = n, "(batch, seqLen, state)"
	}
	checks := []struct {
		buf  *Buffer
		want int
		what string
	}{{a, coef, "A " + what}, {b, coef, "B " + what}, {x, n, "X (batch, seqLen, state)"}, {h0, batch * state, "h0 (batch, state)"}}
	for k, e := range extra {
		checks = append(checks, struct {
			buf  *Buffer
			want int
			what string
		}{e, n, []string{"out (batch, seqLen, state)", "dY (batch, seqLen, state)"}[k]})
	}
	for _, c := range checks {
		if c.buf == nil {
			return 0, fmt.Errorf("ops: %s: %s is nil", op, c.what)
		}
		if err := checkLen(op, c.buf, c.want, c.what); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// SelectiveScanDiagFwd returns the states of the seeds' diagonal selective scan (selective_scan_diag_fwd):
// a, b and h0 of length state, x (seqLen, state) row-major, and h[t,j] = a[j]*h[t-1,j] + b[j]*x[t,j]
// from h[-1,j] = h0[j], (seqLen, state). The arithmetic is cpu.SelectiveScanDiagFwd's.
func SelectiveScanDiagFwd(a, b, x, h0 *Buffer, seqLen, state int) (*Buffer, error) {
	return SelectiveScanDiagBatchedFwd(a, b, x, h0, 1, seqLen, state)
}

// SelectiveScanDiagBatchedFwd is SelectiveScanDiagFwd over a batch: x and the result are (batch,
// seqLen, state), h0 is (batch, state), and the coefficients a, b (state) are shared by every
// sample and time step. Each sample's states are those SelectiveScanDiagFwd gives it alone.
func SelectiveScanDiagBatchedFwd(a, b, x, h0 *Buffer, batch, seqLen, state int) (*Buffer, error) {
	const op = "selective_scan_diag_fwd"
	n, err := scanArgs(op, false, a, b, x, h0, batch, seqLen, state)
	if err != nil {
		return nil, err
	}
	return scanFwdOp.call1(n, []*Buffer{a, b, x, h0}, nil, []int{batch, seqLen, state})
}

// SelectiveScanDiagVarFwd returns the states of the seeds' time-varying diagonal selective scan
// (selective_scan_diag_var_fwd): a, b and x are (seqLen, state), h0 is (state), and
// h[t,j] = a[t,j]*h[t-1,j] + b[t,j]*x[t,j] from h[-1,j] = h0[j] (cpu.SelectiveScanDiagVarFwd).
func SelectiveScanDiagVarFwd(a, b, x, h0 *Buffer, seqLen, state int) (*Buffer, error) {
	return SelectiveScanDiagVarBatchedFwd(a, b, x, h0, 1, seqLen, state)
}

// SelectiveScanDiagVarBatchedFwd is SelectiveScanDiagVarFwd over a batch: a, b, x and the result
// are (batch, seqLen, state), h0 is (batch, state). This is the scan of a Mamba-style block, the
// coefficients computed per sample and token by the caller.
func SelectiveScanDiagVarBatchedFwd(a, b, x, h0 *Buffer, batch, seqLen, state int) (*Buffer, error) {
	const op = "selective_scan_diag_var_fwd"
	n, err := scanArgs(op, true, a, b, x, h0, batch, seqLen, state)
	if err != nil {
		return nil, err
	}
	return scanVarFwdOp.call1(n, []*Buffer{a, b, x, h0}, nil, []int{batch, seqLen, state})
}

// SelectiveScanDiagBwd returns the gradients of SelectiveScanDiagFwd (the seeds'
// selective_scan_diag_bwd) for the cotangent dY of its states out (both (seqLen, state)): dA, dB
// (state), dX (seqLen, state) and dH0 (state). Per channel, backward in time from g = 0:
// total = dY[t] + g; dA += total*hPrev (hPrev = out[t-1], h0 at t = 0); dB += total*x[t];
// dX[t] = total*b; g = total*a; dH0 = g at the end (cpu.SelectiveScanDiagBwd).
func SelectiveScanDiagBwd(a, b, x, h0, out, dY *Buffer, seqLen, state int) (dA, dB, dX, dH0 *Buffer, err error) {
	return SelectiveScanDiagBatchedBwd(a, b, x, h0, out, dY, 1, seqLen, state)
}

// SelectiveScanDiagBatchedBwd returns the gradients of SelectiveScanDiagBatchedFwd: dA, dB
// (state), dX (batch, seqLen, state), dH0 (batch, state). The coefficient gradients are reduced
// over time per channel (descending t, as SelectiveScanDiagBwd) and then over the batch in
// ascending order (cpu.SelectiveScanSumBatch; with batch 1 the channel's sums are the result);
// a batch of 0 gives zero dA and dB.
func SelectiveScanDiagBatchedBwd(a, b, x, h0, out, dY *Buffer, batch, seqLen, state int) (dA, dB, dX, dH0 *Buffer, err error) {
	const op = "selective_scan_diag_bwd"
	n, err := scanArgs(op, false, a, b, x, h0, batch, seqLen, state, out, dY)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if batch == 0 {
		return scanZeroBwd(a.dev, state)
	}
	c := batch * state
	outs, err := scanBwdOp.call([]int{c, c, n, c}, []*Buffer{a, b, x, h0, out, dY}, nil, []int{batch, seqLen, state})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if batch == 1 {
		return outs[0], outs[1], outs[2], outs[3], nil
	}
	sums, err := scanSumBatchOp.call([]int{state, state}, outs[:2], nil, []int{batch, state})
	releaseAll(outs[:2])
	if err != nil {
		releaseAll(outs[2:])
		return nil, nil, nil, nil, err
	}
	return sums[0], sums[1], outs[2], outs[3], nil
}

// scanZeroBwd is the gradient of an empty batch: zero dA, dB (state), empty dX and dH0.
func scanZeroBwd(d *Device, state int) (dA, dB, dX, dH0 *Buffer, err error) {
	bufs := make([]*Buffer, 4)
	for k, n := range []int{state, state, 0, 0} {
		if bufs[k], err = Zeros(d, n); err != nil {
			releaseAll(bufs[:k])
			return nil, nil, nil, nil, err
		}
	}
	return bufs[0], bufs[1], bufs[2], bufs[3], nil
}

// SelectiveScanDiagVarBwd returns the gradients of SelectiveScanDiagVarFwd for the cotangent dY of
// its states out: dA, dB, dX (seqLen, state) and dH0 (state). With g[t] = dY[t] + a[t+1]*g[t+1]
// (g[seqLen-1] = dY[seqLen-1] + 0): dA[t] = g[t]*hPrev, dB[t] = g[t]*x[t], dX[t] = g[t]*b[t],
// dH0 = a[0]*g[0] (cpu.SelectiveScanDiagVarBwd).
func SelectiveScanDiagVarBwd(a, b, x, h0, out, dY *Buffer, seqLen, state int) (dA, dB, dX, dH0 *Buffer, err error) {
	return SelectiveScanDiagVarBatchedBwd(a, b, x, h0, out, dY, 1, seqLen, state)
}

// SelectiveScanDiagVarBatchedBwd returns the gradients of SelectiveScanDiagVarBatchedFwd: dA, dB,
// dX (batch, seqLen, state) and dH0 (batch, state), each element written by its channel's
// backward walk (no reduction).
func SelectiveScanDiagVarBatchedBwd(a, b, x, h0, out, dY *Buffer, batch, seqLen, state int) (dA, dB, dX, dH0 *Buffer, err error) {
	const op = "selective_scan_diag_var_bwd"
	n, err := scanArgs(op, true, a, b, x, h0, batch, seqLen, state, out, dY)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	c := batch * state
	outs, err := scanVarBwdOp.call([]int{n, n, n, c}, []*Buffer{a, b, x, h0, out, dY}, nil, []int{batch, seqLen, state})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return outs[0], outs[1], outs[2], outs[3], nil
}
