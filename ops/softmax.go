package ops

import (
	"fmt"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// Row softmax along the last axis of a row-major (rows, cols) buffer (leading axes folded into
// rows), one fused pass per row statistic; the order of every reduction depends on the shape only.
var (
	softmaxOp = &kernelOp{name: "softmax", kernel: ptx.SoftmaxFwd, outs: 1, ins: 1,
		geometry: perRow(size(0)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.SoftmaxFwd(h.b[0], h.b[1], h.s[1], lo, hi) }}
	logSoftmaxOp = &kernelOp{name: "log_softmax", kernel: ptx.LogSoftmaxFwd, outs: 1, ins: 1,
		geometry: perRow(size(0)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.LogSoftmaxFwd(h.b[0], h.b[1], h.s[1], lo, hi) }}
	// Rows longer than softmax_fwd's register path (4096 elements), up to softmaxLongCols: the
	// *_long kernels, which hold the whole row in registers across a block of up to 1024 threads
	// (same values as the 256-thread kernels, see softmax.cu), or their *_long_async variants.
	softmaxLongOp = &kernelOp{name: "softmax", outs: 1, ins: 1,
		geometry: chosenOn(softmaxLongLaunch(ptx.SoftmaxFwdLong, ptx.SoftmaxFwdLongAsync)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.SoftmaxFwd(h.b[0], h.b[1], h.s[1], lo, hi) }}
	logSoftmaxLongOp = &kernelOp{name: "log_softmax", outs: 1, ins: 1,
		geometry: chosenOn(softmaxLongLaunch(ptx.LogSoftmaxFwdLong, ptx.LogSoftmaxFwdLongAsync)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.LogSoftmaxFwd(h.b[0], h.b[1], h.s[1], lo, hi) }}
	maskedSoftmaxOp = &kernelOp{name: "masked_softmax", kernel: ptx.MaskedSoftmaxFwd, outs: 1, ins: 2,
		geometry: perRow(size(0)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.MaskedSoftmaxFwd(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }}
	softmaxBwdOp = &kernelOp{name: "softmax_bwd", kernel: ptx.SoftmaxBwd, outs: 1, ins: 2,
		geometry: perRow(size(0)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.SoftmaxBwd(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }}
	logSoftmaxBwdOp = &kernelOp{name: "log_softmax_bwd", kernel: ptx.LogSoftmaxBwd, outs: 1, ins: 2,
		geometry: perRow(size(0)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.LogSoftmaxBwd(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }}
)

// The launch of softmax_fwd_long and log_softmax_fwd_long (ptx/softmax.cu: SM_THREADS,
// SM_LONG, SM_LONG_GROUPS): rows of softmaxShortCols < cols <= softmaxLongCols elements, one
// block per row of 256 threads per softmaxLongPerThread*256 elements (at most 1024 threads).
const (
	softmaxShortCols     = 4096
	softmaxLongPerThread = 32
	softmaxLongCols      = 4 * 256 * softmaxLongPerThread
)

// softmaxLongLaunch returns the launch of a *_long kernel or, where the device and the row allow,
// of its *_long_async variant (softmax_sm80.cu), which computes the same values.
//
// The async kernels keep each block's next row streaming into shared memory while it computes the
// current one; they run one block per multiprocessor over the rows. Measured on an H100 (a
// standalone sweep of the kernels, one run; BENCHMARKS.md, 2026-11-24): 4096 rows of 32768,
// 0.400 ms against 0.518 for *_long (torch 0.678); of 24576, 0.301 against 0.374; rows of 16384
// or fewer elements, which fit two or more blocks per multiprocessor, and rows whose length is
// not a multiple of 4 (4-byte copies) were as fast or faster with *_long, so they keep it.
func softmaxLongLaunch(long, async *ptx.Kernel) func(s []int, d gpuFacts) launchShape {
	return func(s []int, d gpuFacts) launchShape {
		rows, cols := s[0], s[1]
		chain := (cols + 255) / 256 // elements per partial
		groups := (chain + softmaxLongPerThread - 1) / softmaxLongPerThread
		block := [3]uint32{uint32(256 * groups), 1, 1}
		shared := 4 * ((cols + 3) &^ 3)
		if softmaxAsync && d.arch >= async.Module.Arch() && groups >= 3 && cols%4 == 0 &&
			shared+softmaxLongStatic <= d.sharedOptin {
			return launchShape{kernel: async, grid: [3]uint32{uint32(max(1, min(rows, d.sms))), 1, 1},
				block: block, shared: uint32(shared)}
		}
		return launchShape{kernel: long, grid: [3]uint32{uint32(max(1, min(rows, 1<<31-1))), 1, 1}, block: block}
	}
}

// softmaxLongStatic is the static shared memory of the *_long kernels (two 4 x 256 float arrays).
const softmaxLongStatic = 2 * 4 * 256 * 4

// softmaxLong lets softmaxFwdOp pick the *_long kernels (tests turn it off to run the 256-thread
// kernels on long rows).
var softmaxLong = true

// softmaxAsync lets softmaxLongLaunch pick the *_long_async kernels (tests turn it off to run
// *_long on devices that have both).
var softmaxAsync = true

// softmaxFwdOp returns the op computing rows of cols elements: short and very long rows take the
// 256-thread kernel, the others the *_long one.
func softmaxFwdOp(short, long *kernelOp, cols int) *kernelOp {
	if softmaxLong && cols > softmaxShortCols && cols <= softmaxLongCols {
		return long
	}
	return short
}

// Softmax returns exp(x - max) / sum(exp(x - max)) along each row of a (rows, cols) matrix. A
// row whose max is ±Inf or NaN (e.g. all -Inf) gives NaN throughout, as in PyTorch.
func Softmax(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("softmax", "x", x, rows, cols); err != nil {
		return nil, err
	}
	return softmaxFwdOp(softmaxOp, softmaxLongOp, cols).call1(rows*cols, []*Buffer{x}, nil, []int{rows, cols})
}

// LogSoftmax returns (x - max) - log(sum(exp(x - max))) along each row. The sum's order is
// cpu.LogSoftmaxFwd's: for rows of 8192 < cols <= 32768 it differs from Softmax's (the long-row
// kernel's thread groups each sum their part of the row), within rounding.
func LogSoftmax(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("log_softmax", "x", x, rows, cols); err != nil {
		return nil, err
	}
	return softmaxFwdOp(logSoftmaxOp, logSoftmaxLongOp, cols).call1(rows*cols, []*Buffer{x}, nil, []int{rows, cols})
}

// MaskedSoftmax is the hard-masked row softmax: entries whose mask is 0 are excluded from the
// row max and sum and output 0; a fully blocked row is all zeros, while a row whose allowed
// entries are all -Inf gives NaN at those entries (as Softmax of an all -Inf row). (This is the
// reference's masked softmax; the attention kernels of the seeds fill blocked scores with
// -1000.0 instead.)
// SoftmaxBwd is its VJP too: blocked entries have y = 0 and get no gradient.
func MaskedSoftmax(x, mask *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("masked_softmax", "x", x, rows, cols); err != nil {
		return nil, err
	}
	if err := matrix("masked_softmax", "mask", mask, rows, cols); err != nil {
		return nil, err
	}
	return maskedSoftmaxOp.call1(rows*cols, []*Buffer{x, mask}, nil, []int{rows, cols})
}

// SoftmaxBwd returns the VJP of Softmax from its output y and the cotangent g:
// y * (g - sum(g*y)) per row.
func SoftmaxBwd(y, g *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("softmax_bwd", "y", y, rows, cols); err != nil {
		return nil, err
	}
	if err := matrix("softmax_bwd", "g", g, rows, cols); err != nil {
		return nil, err
	}
	return softmaxBwdOp.call1(rows*cols, []*Buffer{y, g}, nil, []int{rows, cols})
}

// LogSoftmaxBwd returns the VJP of LogSoftmax from its output y and the cotangent g:
// g - exp(y) * sum(g) per row.
func LogSoftmaxBwd(y, g *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("log_softmax_bwd", "y", y, rows, cols); err != nil {
		return nil, err
	}
	if err := matrix("log_softmax_bwd", "g", g, rows, cols); err != nil {
		return nil, err
	}
	return logSoftmaxBwdOp.call1(rows*cols, []*Buffer{y, g}, nil, []int{rows, cols})
}

// newLayerNormFwdOp is the layer norm forward on kernel k with grid g (layer_norm_fwd and
// layer_norm_fwd_row compute the same values, for any grid; the CPU twin is one).
func newLayerNormFwdOp(k *ptx.Kernel, g geometry) *kernelOp {
	return &kernelOp{name: "layer_norm_fwd", kernel: k, outs: 3, ins: 3,
		geometry: g, cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.LayerNormFwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.b[5], h.s[1], h.f[0], h.f[1], lo, hi)
		}}
}

// LayerNormEps is the epsilon of the layer norm of the seeds.
const LayerNormEps = 1e-6

var (
	layerNormFwdOp = newLayerNormFwdOp(ptx.LayerNormFwd, perRow(size(0)))
	// Rows of 1024 < cols <= 4096: layer_norm_fwd_row, one block per row (the hardware's block
	// scheduler then balances the multiprocessors to the end). Measured on an H200
	// (internal/bench/rowkern, 16384 x 4096, three alternations): 0.1412-0.1415 ms against
	// 0.1489-0.1493 with perRow's 32 blocks per multiprocessor, each striding over the rows.
	layerNormFwdRowOp = newLayerNormFwdOp(ptx.LayerNormFwdRow, blocks(size(0)))
	layerNormBwdOp    = &kernelOp{name: "layer_norm_bwd", kernel: ptx.LayerNormBwd, outs: 3, ins: 5,
		geometry: blocks(layerNormBwdBlocks), cpuUnits: chunksOf(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.LayerNormBwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.b[5], h.b[6], h.b[7], h.s[0], h.s[1], h.f[0], h.f[1], lo, hi)
		}}
)

// layerNormBwdBlocks is the grid of layer_norm_bwd (see softmax.cu): one block per chunk of 64
// rows when rows are short and many, else one per row plus one per 256 columns of each chunk.
func layerNormBwdBlocks(s []int) int {
	rows, cols, chunks := s[0], s[1], colChunks(s[0])
	if cols <= 4096 && rows >= 4096 {
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
	if cols > 1024 && cols <= 4096 {
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
