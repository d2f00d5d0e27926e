package ops

import (
	"fmt"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The layer norm family (ptx/norm.cu, cpu/norm.go): the row statistics fold in the order of the
// row reductions, so both devices give the same bits.

// newLayerNormFwdOp is the layer norm forward on kernel k with grid g (layer_norm_fwd and
// layer_norm_fwd_row compute the same values, for any grid; the CPU twin is one).
func newLayerNormFwdOp(k *ptx.Kernel, g grid) *kernelOp {
	return row(&kernelOp{name: "layer_norm_fwd", kernel: k, outs: 3, ins: 3,
		grid: g, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.LayerNormFwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.b[5], h.s[1], h.f[0], h.f[1], lo, hi)
		}})
}

// LayerNormEps is the epsilon of the layer norm of the seeds.
const LayerNormEps = 1e-6

var (
	layerNormFwdOp = newLayerNormFwdOp(ptx.LayerNormFwd, rowGrid{size(0)})
	// Rows of 1024 < cols <= 4096: layer_norm_fwd_row, one block per row (the hardware's block
	// scheduler then balances the multiprocessors to the end; faster than rowGrid's 32 blocks per
	// multiprocessor striding over the rows: BENCHMARKS.md, "Figures behind the code").
	layerNormFwdRowOp = newLayerNormFwdOp(ptx.LayerNormFwdRow, blockGrid{size(0)})
	layerNormBwdOp    = row(&kernelOp{name: "layer_norm_bwd", kernel: ptx.LayerNormBwd, outs: 3, ins: 5,
		grid: blockGrid{layerNormBwdBlocks}, units: chunksOf(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.LayerNormBwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.b[5], h.b[6], h.b[7], h.s[0], h.s[1], h.f[0], h.f[1], lo, hi)
		}})
)

// layerNormRegCols is the longest row norm.cu holds in registers (SM_THREADS * SM_REG), and
// layerNormFusedRows the fewest rows for which layer_norm_bwd takes its fused path with short rows
// (LN_FUSED_ROWS); layerNormRowCols is the shortest row layer_norm_fwd_row takes (beyond it).
const layerNormRegCols, layerNormFusedRows, layerNormRowCols = 4096, 4096, 1024

// layerNormBwdBlocks is the grid of layer_norm_bwd (see norm.cu): one block per chunk of 64
// rows when rows are short and many, else one per row plus one per 256 columns of each chunk.
func layerNormBwdBlocks(s []int) int {
	rows, cols, chunks := s[0], s[1], colChunks(s[0])
	if cols <= layerNormRegCols && rows >= layerNormFusedRows {
		return chunks
	}
	return rows + chunks*((cols+255)/256)
}

// chunksOf returns the function giving the number of cpu.ColChunk-row chunks of sizes[k] rows.
func chunksOf(k int) func(s []int) int { return func(s []int) int { return colChunks(s[k]) } }

// LayerNormFwd normalizes each row of the (rows, cols) matrix x and applies the per-column gamma
// and beta (length cols). Per row, with every operation rounded separately (no contraction) and
// row sums in the order of ReduceSumByRow:
//
//	mean = sum(x) * (1/cols);  var = sum((x - mean)^2) * (1/cols);  sd = sqrt(var + eps)
//	xhat = (x - mean) / sd;    out = xhat*gamma + beta
//
// It returns out and the per-row statistics mean and sd (length rows each), which LayerNormBwd
// takes with x. This departs from the reference's layer_norm_fwd, which returns
// (out, normalized, invStd): like PyTorch, it keeps two per-row vectors instead of the normalized
// matrix, saving a rows*cols write here and a rows*cols read in the backward; the values of out
// and of every gradient are the same. eps (finite, >= 0; rounded to float32) is usually
// LayerNormEps. The statistics are float32 throughout: a row whose sum or sum of squared
// deviations overflows (elements near 1e19 and beyond) gets an infinite or NaN mean or sd, and
// outputs of 0 or NaN, where PyTorch (which accumulates in float32 too, by Welford's method)
// may still be finite.
func LayerNormFwd(x, gamma, beta *Buffer, rows, cols int, eps float64) (out, mean, sd *Buffer, err error) {
	const op = "layer_norm_fwd"
	if err := checkEps(op, eps); err != nil {
		return nil, nil, nil, err
	}
	if err := matrix(op, "x", x, rows, cols); err != nil {
		return nil, nil, nil, err
	}
	if cols == 0 {
		return nil, nil, nil, fmt.Errorf("ops: %s: rows of 0 columns", op)
	}
	if err := checkLen(op, gamma, cols, "gamma"); err != nil {
		return nil, nil, nil, err
	}
	if err := checkLen(op, beta, cols, "beta"); err != nil {
		return nil, nil, nil, err
	}
	fwd := layerNormFwdOp
	if cols > layerNormRowCols && cols <= layerNormRegCols {
		fwd = layerNormFwdRowOp
	}
	o, err := fwd.call([]int{rows * cols, rows, rows}, []*Buffer{x, gamma, beta}, nil,
		[]int{rows, cols}, 1/float32(cols), float32(eps))
	if err != nil {
		return nil, nil, nil, err
	}
	return o[0], o[1], o[2], nil
}

// LayerNormBwd returns the VJP of LayerNormFwd for the cotangent dOut, from the forward's input x
// and its per-row mean and sd: dX (rows, cols) and the parameter gradients dGamma = column sums
// of dOut*xhat and dBeta = column sums of dOut (in the order of ReduceSumByColumn). Per row it
// recomputes xhat = (x - mean) / sd and invStd = 1/sd with the forward's operations (so xhat is
// the forward's, bit for bit), and with dxh = dOut*gamma, S1 = sum(dxh), S2 = sum(dxh*xhat):
// dX = ((dxh*cols - S1) - xhat*S2) * invStd * (1/cols). The reference's layer_norm_bwd takes
// (normalized, invStd) instead of (x, mean, sd); the values are the same (see LayerNormFwd).
func LayerNormBwd(dOut, x, mean, sd, gamma *Buffer, rows, cols int) (dX, dGamma, dBeta *Buffer, err error) {
	const op = "layer_norm_bwd"
	if err := matrix(op, "dOut", dOut, rows, cols); err != nil {
		return nil, nil, nil, err
	}
	if cols == 0 {
		return nil, nil, nil, fmt.Errorf("ops: %s: rows of 0 columns", op)
	}
	if err := matrix(op, "x", x, rows, cols); err != nil {
		return nil, nil, nil, err
	}
	if err := checkLen(op, mean, rows, "mean"); err != nil {
		return nil, nil, nil, err
	}
	if err := checkLen(op, sd, rows, "sd"); err != nil {
		return nil, nil, nil, err
	}
	if err := checkLen(op, gamma, cols, "gamma"); err != nil {
		return nil, nil, nil, err
	}
	if rows == 0 {
		return zeros3(dOut.dev, 0, cols, cols)
	}
	n := colChunks(rows)
	o, err := layerNormBwdOp.call([]int{rows * cols, n * cols, n * cols}, []*Buffer{dOut, x, mean, sd, gamma}, nil,
		[]int{rows, cols}, float32(cols), 1/float32(cols))
	if err != nil {
		return nil, nil, nil, err
	}
	defer o[1].Release()
	defer o[2].Release()
	dGamma, err = sumByColOp.call1(cols, []*Buffer{o[1]}, nil, []int{1, n, cols}, 1)
	if err == nil {
		dBeta, err = sumByColOp.call1(cols, []*Buffer{o[2]}, nil, []int{1, n, cols}, 1)
	}
	if err != nil {
		releaseAll([]*Buffer{o[0], dGamma})
		return nil, nil, nil, err
	}
	return o[0], dGamma, dBeta, nil
}

// zeros3 returns three zero buffers of the given lengths.
func zeros3(d *Device, a, b, c int) (x, y, z *Buffer, err error) {
	var bs [3]*Buffer
	for k, n := range []int{a, b, c} {
		if bs[k], err = Zeros(d, n); err != nil {
			releaseAll(bs[:k])
			return nil, nil, nil, err
		}
	}
	return bs[0], bs[1], bs[2], nil
}
