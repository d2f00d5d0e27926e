package ops

import (
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

// Softmax returns exp(x - max) / sum(exp(x - max)) along each row of a (rows, cols) matrix.
func Softmax(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("softmax", x, rows, cols); err != nil {
		return nil, err
	}
	return softmaxOp.call1(rows*cols, []*Buffer{x}, nil, []int{rows, cols})
}

// LogSoftmax returns (x - max) - log(sum(exp(x - max))) along each row.
func LogSoftmax(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("log_softmax", x, rows, cols); err != nil {
		return nil, err
	}
	return logSoftmaxOp.call1(rows*cols, []*Buffer{x}, nil, []int{rows, cols})
}

// MaskedSoftmax is the hard-masked row softmax: entries whose mask is 0 are excluded from the
// row max and sum and output 0; a fully blocked row is all zeros.
func MaskedSoftmax(x, mask *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("masked_softmax", x, rows, cols); err != nil {
		return nil, err
	}
	if err := matrix("masked_softmax", mask, rows, cols); err != nil {
		return nil, err
	}
	return maskedSoftmaxOp.call1(rows*cols, []*Buffer{x, mask}, nil, []int{rows, cols})
}

// SoftmaxBwd returns the VJP of Softmax from its output y and the cotangent g:
// y * (g - sum(g*y)) per row.
func SoftmaxBwd(y, g *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("softmax_bwd", y, rows, cols); err != nil {
		return nil, err
	}
	if err := matrix("softmax_bwd", g, rows, cols); err != nil {
		return nil, err
	}
	return softmaxBwdOp.call1(rows*cols, []*Buffer{y, g}, nil, []int{rows, cols})
}

// LogSoftmaxBwd returns the VJP of LogSoftmax from its output y and the cotangent g:
// g - exp(y) * sum(g) per row.
func LogSoftmaxBwd(y, g *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("log_softmax_bwd", y, rows, cols); err != nil {
		return nil, err
	}
	if err := matrix("log_softmax_bwd", g, rows, cols); err != nil {
		return nil, err
	}
	return logSoftmaxBwdOp.call1(rows*cols, []*Buffer{y, g}, nil, []int{rows, cols})
}
