package autograd

import (
	"github.com/torchlean-go/torchlean/ops"
)

// PoolParams is the geometry of a pooling (ops.PoolParams): Kernel per spatial axis (rank 1 to
// 8), Stride (nil: Kernel), Padding (nil: none), CountIncludePad for average pooling and Beta for
// smooth max pooling.
type PoolParams = ops.PoolParams

// MaxPool returns the max pooling of x over its last len(p.Kernel) axes: x is a batch (N, C,
// spatial...) as in PyTorch or one sample (C, spatial...) as in the seeds' maxPool; the result
// has ops.PoolOutShape(shape, p) (an axis whose padding exceeds half its window, or whose padded
// input is shorter than the window, is empty: the seeds' poolOutDim). Each output is the first
// maximum of its window's in-bounds cells (NaN counts as the maximum; padding is skipped), and
// its gradient goes to that element only (fixed order, no atomics). Where x requires grad, the
// forward also keeps each output's argmax offset (ops.MaxPoolNDWithOffsets: one float per
// output, as PyTorch keeps its indices; released once the backward has used it, or by Reset)
// and the backward reads it (ops.MaxPoolNDBackwardOffsets); elsewhere it computes the values
// only (ops.MaxPoolND).
func (t *Tape) MaxPool(x Var, p PoolParams) Var {
	const op = "max_pool"
	vx, ok := t.arg(op, x)
	if !ok || !t.liveArgs(op, []value{vx}) {
		return Var{}
	}
	if t.noGrad || !t.nodes[x.id].requires {
		return t.pool(op, x, p, ops.MaxPoolND, ops.MaxPoolNDBackward)
	}
	p = clonePool(p) // the caller may reuse its slices
	shape := vx.shape
	y, offsets, err := ops.MaxPoolNDWithOffsets(vx.buf, shape, p)
	var out []int
	if err == nil {
		out, err = ops.PoolOutShape(shape, p)
	}
	var work []releaser
	if offsets != nil {
		work = []releaser{offsets}
	}
	return t.record(op, out, y, err, work, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.MaxPoolNDBackwardOffsets(offsets, g, shape, p) })
	})
}

// AvgPool returns the average pooling of x (shapes as MaxPool): each window's in-bounds cells
// summed in row-major order and divided by the window volume when p.CountIncludePad (PyTorch's
// and the seeds' default; set it), else by the number of in-bounds cells (ops.AvgPoolND). The
// gradient spreads each output's gradient over its window the same way.
func (t *Tape) AvgPool(x Var, p PoolParams) Var {
	return t.pool("avg_pool", x, p, ops.AvgPoolND, func(_, g *ops.Buffer, shape []int, p PoolParams) (*ops.Buffer, error) {
		return ops.AvgPoolNDBackward(g, shape, p)
	})
}

// SmoothMaxPool returns the smooth max pooling of x (shapes as MaxPool) with β = p.Beta (finite
// and non-zero as a float32): y = pivot + log(Σ exp(β(v - pivot)))/β over each window, padding
// read as 0, the pivot the window's maximum (β > 0) or minimum (β < 0: a smooth minimum). The
// gradient of each in-bounds cell is the output's gradient times its softmax weight
// exp(β(v - pivot))/Σ (ops.SmoothMaxPoolND, ops.SmoothMaxPoolNDBackward).
func (t *Tape) SmoothMaxPool(x Var, p PoolParams) Var {
	return t.pool("smooth_max_pool", x, p, ops.SmoothMaxPoolND, ops.SmoothMaxPoolNDBackward)
}

// MaxPool2d is the seeds' maxPool2d: max pooling of x, (C, H, W) or (N, C, H, W), with a kH x kW
// window, one stride for both axes and no padding.
func (t *Tape) MaxPool2d(x Var, kH, kW, stride int) Var {
	return t.MaxPool(x, pool2d(kH, kW, stride, 0))
}

// MaxPool2dPad is the seeds' maxPool2dPad: MaxPool2d with one padding for both axes
// (PyTorch's F.max_pool2d(x, (kH, kW), stride, padding)).
func (t *Tape) MaxPool2dPad(x Var, kH, kW, stride, padding int) Var {
	return t.MaxPool(x, pool2d(kH, kW, stride, padding))
}

// AvgPool2d is the seeds' avgPool2d: average pooling of x, (C, H, W) or (N, C, H, W), with a
// kH x kW window, one stride for both axes and no padding.
func (t *Tape) AvgPool2d(x Var, kH, kW, stride int) Var {
	return t.AvgPool(x, pool2d(kH, kW, stride, 0))
}

// AvgPool2dPad is the seeds' avgPool2dPad: AvgPool2d with one padding for both axes, counted in
// the divisor (count_include_pad, PyTorch's F.avg_pool2d default).
func (t *Tape) AvgPool2dPad(x Var, kH, kW, stride, padding int) Var {
	return t.AvgPool(x, pool2d(kH, kW, stride, padding))
}

// SmoothMaxPool2d is the seeds' smoothMaxPool2d: smooth max pooling of x, (C, H, W) or (N, C,
// H, W), with β = beta, a kH x kW window, one stride and no padding.
func (t *Tape) SmoothMaxPool2d(x Var, kH, kW, stride int, beta float64) Var {
	p := pool2d(kH, kW, stride, 0)
	p.Beta = beta
	return t.SmoothMaxPool(x, p)
}

// SmoothMaxPool2dPad is the seeds' smoothMaxPool2dPad: SmoothMaxPool2d with one padding for
// both axes (padding cells read as 0).
func (t *Tape) SmoothMaxPool2dPad(x Var, kH, kW, stride, padding int, beta float64) Var {
	p := pool2d(kH, kW, stride, padding)
	p.Beta = beta
	return t.SmoothMaxPool(x, p)
}

// pool2d is the geometry of the 2-D forms (count_include_pad, as the seeds).
func pool2d(kH, kW, stride, padding int) PoolParams {
	return PoolParams{Kernel: []int{kH, kW}, Stride: []int{stride, stride}, Padding: []int{padding, padding},
		CountIncludePad: true}
}

// pool records a pooling: fwd on x's value, bwd(x, g) its VJP.
func (t *Tape) pool(op string, x Var, p PoolParams,
	fwd func(x *ops.Buffer, shape []int, p PoolParams) (*ops.Buffer, error),
	bwd func(x, g *ops.Buffer, shape []int, p PoolParams) (*ops.Buffer, error)) Var {
	vx, ok := t.arg(op, x)
	if !ok || !t.liveArgs(op, []value{vx}) {
		return Var{}
	}
	p = clonePool(p) // the caller may reuse its slices
	shape := vx.shape
	y, err := fwd(vx.buf, shape, p)
	var out []int
	if err == nil {
		out, err = ops.PoolOutShape(shape, p)
	}
	return t.record(op, out, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return bwd(vx.buf, g, shape, p) })
	})
}

func clonePool(p PoolParams) PoolParams {
	cp := func(s []int) []int {
		if s == nil {
			return nil
		}
		return append([]int(nil), s...)
	}
	p.Kernel, p.Stride, p.Padding = cp(p.Kernel), cp(p.Stride), cp(p.Padding)
	return p
}
