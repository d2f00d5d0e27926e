package ops

import (
	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// Row softmax along the last axis of a row-major (rows, cols) buffer (leading axes folded into
// rows), one fused pass per row statistic; the order of every reduction depends on the shape only.
var (
	softmaxOp = &shapeOp{"softmax", ptx.SoftmaxFwd, 1, gridRows, rowsSpace, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.SoftmaxFwd(o, in[0], b, lo, hi) }}
	logSoftmaxOp = &shapeOp{"log_softmax", ptx.LogSoftmaxFwd, 1, gridRows, rowsSpace, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.LogSoftmaxFwd(o, in[0], b, lo, hi) }}
	maskedSoftmaxOp = &shapeOp{"masked_softmax", ptx.MaskedSoftmaxFwd, 2, gridRows, rowsSpace, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.MaskedSoftmaxFwd(o, in[0], in[1], b, lo, hi) }}
	softmaxBwdOp = &shapeOp{"softmax_bwd", ptx.SoftmaxBwd, 2, gridRows, rowsSpace, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.SoftmaxBwd(o, in[0], in[1], b, lo, hi) }}
	logSoftmaxBwdOp = &shapeOp{"log_softmax_bwd", ptx.LogSoftmaxBwd, 2, gridRows, rowsSpace, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.LogSoftmaxBwd(o, in[0], in[1], b, lo, hi) }}
)

func rowsSpace(a, b int) int { return a }

// Softmax returns exp(x - max) / sum(exp(x - max)) along each row of a (rows, cols) matrix.
func Softmax(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("softmax", x, rows, cols); err != nil {
		return nil, err
	}
	return softmaxOp.run([]*Buffer{x}, rows, cols, rows*cols)
}

// LogSoftmax returns (x - max) - log(sum(exp(x - max))) along each row.
func LogSoftmax(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("log_softmax", x, rows, cols); err != nil {
		return nil, err
	}
	return logSoftmaxOp.run([]*Buffer{x}, rows, cols, rows*cols)
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
	return maskedSoftmaxOp.run([]*Buffer{x, mask}, rows, cols, rows*cols)
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
	return softmaxBwdOp.run([]*Buffer{y, g}, rows, cols, rows*cols)
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
	return logSoftmaxBwdOp.run([]*Buffer{y, g}, rows, cols, rows*cols)
}
