package ops

import (
	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// Row softmax along the last axis of a row-major (rows, cols) buffer (leading axes folded into
// rows), one fused pass per row statistic; the order of every reduction depends on the shape only.
var (
	softmaxOp = row(&kernelOp{name: "softmax", kernel: ptx.SoftmaxFwd, outs: 1, ins: 1,
		grid: rowGrid{size(0)}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.SoftmaxFwd(h.b[0], h.b[1], h.s[1], lo, hi) }})
	logSoftmaxOp = row(&kernelOp{name: "log_softmax", kernel: ptx.LogSoftmaxFwd, outs: 1, ins: 1,
		grid: rowGrid{size(0)}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.LogSoftmaxFwd(h.b[0], h.b[1], h.s[1], lo, hi) }})
	// Rows longer than softmax_fwd's register path (4096 elements), up to softmaxLongCols: the
	// *_long kernels, which hold the whole row in registers across a block of up to 1024 threads
	// (same values as the 256-thread kernels, see softmax.cu), or their *_long_async variants.
	softmaxLongOp = row(&kernelOp{name: "softmax", outs: 1, ins: 1,
		grid: pickedGrid(softmaxLongLaunch(ptx.SoftmaxFwdLong, ptx.SoftmaxFwdLongAsync)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.SoftmaxFwd(h.b[0], h.b[1], h.s[1], lo, hi) }})
	logSoftmaxLongOp = row(&kernelOp{name: "log_softmax", outs: 1, ins: 1,
		grid: pickedGrid(softmaxLongLaunch(ptx.LogSoftmaxFwdLong, ptx.LogSoftmaxFwdLongAsync)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.LogSoftmaxFwd(h.b[0], h.b[1], h.s[1], lo, hi) }})
	maskedSoftmaxOp = row(&kernelOp{name: "masked_softmax", kernel: ptx.MaskedSoftmaxFwd, outs: 1, ins: 2,
		grid: rowGrid{size(0)}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.MaskedSoftmaxFwd(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }})
	softmaxBwdOp = row(&kernelOp{name: "softmax_bwd", kernel: ptx.SoftmaxBwd, outs: 1, ins: 2,
		grid: rowGrid{size(0)}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.SoftmaxBwd(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }})
	logSoftmaxBwdOp = row(&kernelOp{name: "log_softmax_bwd", kernel: ptx.LogSoftmaxBwd, outs: 1, ins: 2,
		grid: rowGrid{size(0)}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.LogSoftmaxBwd(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }})
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
// current one; they run one block per multiprocessor over the rows. They are faster for rows of
// 3 or 4 groups; rows of 16384 or fewer elements, which fit two or more blocks per
// multiprocessor, and rows whose length is not a multiple of 4 (4-byte copies) were as fast or
// faster with *_long, so they keep it (BENCHMARKS.md, "Figures behind the code").
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
