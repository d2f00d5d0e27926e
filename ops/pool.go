package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The pooling family (ptx/pool.cu; cpu/pool.go): max, average and smooth-max (log-sum-exp)
// pooling of spatial rank 1 to 8, forward and backward, channel-first: an input of shape (C,
// spatial...) (the seeds' single sample) or (N, C, spatial...) (a batch, PyTorch's layout), the
// leading axes flattened into nc channels pooled alike. The seeds' entry points are the
// single-sample forms (MaxPool2dFwd, MaxPoolFwd, AvgPool2dFwd, ... with their Bwd).
//
// Conventions (the seeds' and the runtime reference's, sections 2.18, 3.11 and 3.12):
//   - Output size per axis (poolOutDim): 0 when in == 0 or p > k/2 or in + 2p < k, else
//     (in + 2p - k)/s + 1. An empty output is a result, not an error (its backward is zeros).
//   - Padding cells are skipped by max pooling, skipped by average pooling's sum and counted in
//     its divisor with CountIncludePad (the seeds' and PyTorch's default), and read as value 0
//     by smooth max pooling (in its pivot and its sum), receiving no gradient.
//   - Max pooling keeps the first maximum in row-major window order (ties: first) and treats
//     NaN as the maximum (the first NaN); its gradient goes to that element only. A window
//     whose cells are all -Inf gives -Inf (the reference's running best from -FLT_MAX would
//     give -FLT_MAX; we keep PyTorch's value).
//   - Smooth max pooling: y = pivot + log(Σ exp(β(v - pivot)))/β with the pivot the window's
//     maximum (β > 0) or minimum (β < 0, a smooth minimum); β must be finite and non-zero after
//     rounding to float32. A cell equal to the pivot contributes exp(0) = 1 even when infinite,
//     so a window holding +Inf gives +Inf (β > 0). Its gradient is the softmax weight
//     exp(β(v - pivot))/Σ of each in-bounds cell times the output gradient.
//
// Arithmetic: fixed order per element (cpu/pool.go's doc comments state it): a window's cells in
// row-major order, and in the backward the windows containing an input element in ascending
// order, gather-style with one owner per element and no atomics. The backwards are therefore
// deterministic in both modes; pooling has no fast (atomic) path, since the gather costs one
// pass over the input gradient and a few reads of small per-window buffers.
var (
	maxPoolFwdOp = row(&kernelOp{name: "max_pool_fwd", kernel: ptx.MaxPoolFwd, outs: 1, ins: 1, idx: 1,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) { cpu.MaxPoolFwd(h.b[0], h.b[1], h.idx[0], h.s[0], lo, hi) }})
	maxPoolArgmaxOp = row(&kernelOp{name: "max_pool_argmax", kernel: ptx.MaxPoolArgmax, outs: 1, ins: 1, idx: 1,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) { cpu.MaxPoolArgmax(h.b[0], h.b[1], h.idx[0], h.s[0], lo, hi) }})
	maxPoolFwdArgmaxOp = row(&kernelOp{name: "max_pool_fwd_argmax", kernel: ptx.MaxPoolFwdArgmax, outs: 2, ins: 1, idx: 1,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.MaxPoolFwdArgmax(h.b[0], h.b[1], h.b[2], h.idx[0], h.s[0], lo, hi)
		}})
	maxPoolBwdOp = row(&kernelOp{name: "max_pool_bwd", kernel: ptx.MaxPoolBwd, outs: 1, ins: 2, idx: 1,
		grid: strided(product(0, 1)), units: product(0, 1),
		cpu: func(h *hostArgs, lo, hi int) { cpu.MaxPoolBwd(h.b[0], h.b[1], h.b[2], h.idx[0], h.s[0], lo, hi) }})
	avgPoolFwdOp = row(&kernelOp{name: "avg_pool_fwd", kernel: ptx.AvgPoolFwd, outs: 1, ins: 1, idx: 1,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) { cpu.AvgPoolFwd(h.b[0], h.b[1], h.idx[0], h.s[0], h.s[3] != 0, lo, hi) }})
	avgPoolBwdOp = row(&kernelOp{name: "avg_pool_bwd", kernel: ptx.AvgPoolBwd, outs: 1, ins: 1, idx: 1,
		grid: strided(product(0, 1)), units: product(0, 1),
		cpu: func(h *hostArgs, lo, hi int) { cpu.AvgPoolBwd(h.b[0], h.b[1], h.idx[0], h.s[0], h.s[3] != 0, lo, hi) }})
	smoothMaxPoolFwdOp = row(&kernelOp{name: "smooth_max_pool_fwd", kernel: ptx.SmoothMaxPoolFwd, outs: 1, ins: 1, idx: 1,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) { cpu.SmoothMaxPoolFwd(h.b[0], h.b[1], h.idx[0], h.s[0], h.f[0], lo, hi) }})
	smoothMaxPoolStatsOp = row(&kernelOp{name: "smooth_max_pool_stats", kernel: ptx.SmoothMaxPoolStats, outs: 2, ins: 1, idx: 1,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SmoothMaxPoolStats(h.b[0], h.b[1], h.b[2], h.idx[0], h.s[0], h.f[0], lo, hi)
		}})
	smoothMaxPoolBwdOp = row(&kernelOp{name: "smooth_max_pool_bwd", kernel: ptx.SmoothMaxPoolBwd, outs: 1, ins: 4, idx: 1,
		grid: strided(product(0, 1)), units: product(0, 1),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SmoothMaxPoolBwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.idx[0], h.s[0], h.f[0], lo, hi)
		}})
)

// PoolParams is the geometry of a pooling of spatial rank d = len(Kernel), 1 to 8.
type PoolParams struct {
	// Kernel is the window size per spatial axis, each >= 1.
	Kernel []int
	// Stride is the step per axis, each >= 1; nil means Kernel (PyTorch's default).
	Stride []int
	// Padding is the implicit padding at both ends of each axis, each >= 0; nil means none. A
	// padding above Kernel/2 gives an empty output on that axis (the seeds' poolOutDim).
	Padding []int
	// CountIncludePad makes average pooling divide by the whole window volume, padding included
	// (the seeds' and PyTorch's default: the seeds' forms and the nn modules set it); false
	// divides by the number of in-bounds cells. Other poolings ignore it.
	CountIncludePad bool
	// Beta is smooth max pooling's β, finite and non-zero as a float32 (β < 0: smooth minimum).
	// Other poolings ignore it.
	Beta float64
}

// poolMaxValue bounds every size of one axis (input, window, stride, padding): the kernels'
// coordinates are 32-bit.
const poolMaxValue = 1 << 30

// poolMaxWindow bounds the window volume: max pooling's argmax offsets are exact floats.
const poolMaxWindow = 1 << 24

// poolPlan is a checked pooling geometry.
type poolPlan struct {
	inN, outN int
	outShape  []int
	sizes     []int    // the kernels' sizes: nc, the input and output volumes of a channel
	geom      []uint32 // the kernels' geometry array (cpu.PoolGeomLen entries, axes right-aligned)
}

// indices uploads the geometry array to d.
func (pl *poolPlan) indices(d *Device) (*Indices, error) {
	host := scratchU32(cpu.PoolGeomLen)
	copy(host, pl.geom)
	return newIndices(d, host)
}

// run launches op on the plan's geometry (uploaded for the call) into fresh outputs.
func (pl *poolPlan) run(op *kernelOp, outLens []int, ins []*Buffer, sizes []int, scalars ...float32) ([]*Buffer, error) {
	ix, err := pl.indices(ins[0].dev)
	if err != nil {
		return nil, opErr(op.name, err)
	}
	defer ix.Release()
	return op.call(outLens, ins, []*Indices{ix}, sizes, scalars...)
}

func (pl *poolPlan) run1(op *kernelOp, outLen int, ins []*Buffer, sizes []int, scalars ...float32) (*Buffer, error) {
	outs, err := pl.run(op, []int{outLen}, ins, sizes, scalars...)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// PoolOutDim is the seeds' poolOutDim: the output size of one axis of input size in, window k,
// stride s and padding p (k, s >= 1, in, p >= 0): 0 when in == 0, p > k/2 or in + 2p < k, else
// (in + 2p - k)/s + 1.
func PoolOutDim(in, k, s, p int) int {
	if in == 0 || k == 0 || p > k/2 || in+2*p < k {
		return 0
	}
	return (in+2*p-k)/s + 1
}

// PoolOutShape returns the output shape of a pooling of an input of shape inShape ((C,
// spatial...) or (N, C, spatial...), spatial of rank len(p.Kernel)): the leading axes, then
// PoolOutDim of each spatial axis. It returns the errors of the poolings for bad geometry.
func PoolOutShape(inShape []int, p PoolParams) ([]int, error) {
	pl, err := planPool("pool", inShape, p)
	if err != nil {
		return nil, err
	}
	return pl.outShape, nil
}

func planPool(op string, inShape []int, p PoolParams) (*poolPlan, error) {
	d := len(p.Kernel)
	if d < 1 || d > cpu.PoolAxes {
		return nil, fmt.Errorf("ops: %s: kernel %v has rank %d: want 1 to %d spatial axes", op, p.Kernel, d, cpu.PoolAxes)
	}
	if len(inShape) != d+1 && len(inShape) != d+2 {
		return nil, fmt.Errorf("ops: %s: input shape %v for a rank-%d kernel %v: want (C, spatial...) or (N, C, spatial...) of %d or %d axes",
			op, inShape, d, p.Kernel, d+1, d+2)
	}
	stride, pad := p.Stride, p.Padding
	if stride == nil {
		stride = p.Kernel
	}
	if pad == nil {
		pad = make([]int, d)
	}
	if len(stride) != d || len(pad) != d {
		return nil, fmt.Errorf("ops: %s: kernel %v, stride %v and padding %v: want %d entries each", op, p.Kernel, stride, pad, d)
	}
	for _, n := range inShape {
		if n < 0 {
			return nil, fmt.Errorf("ops: %s: input shape %v has a negative size", op, inShape)
		}
	}
	lead := len(inShape) - d
	spatial := inShape[lead:]
	nc, ok := mulFits(inShape[:lead]...)
	if !ok {
		return nil, fmt.Errorf("ops: %s: input shape %v overflows", op, inShape)
	}
	kv := 1
	out := slices.Clone(inShape[:lead])
	const A = cpu.PoolAxes
	geom := make([]uint32, cpu.PoolGeomLen)
	for a := range A { // leading axes of size 1, window 1, stride 1, padding 0
		geom[a], geom[A+a], geom[2*A+a], geom[3*A+a] = 1, 1, 1, 1
	}
	for a := range d {
		in, k, s, pp := spatial[a], p.Kernel[a], stride[a], pad[a]
		switch {
		case k < 1 || s < 1 || pp < 0:
			return nil, fmt.Errorf("ops: %s: axis %d has kernel %d, stride %d, padding %d: want kernel >= 1, stride >= 1, padding >= 0",
				op, a, k, s, pp)
		case in > poolMaxValue || k > poolMaxValue || s > poolMaxValue || pp > poolMaxValue:
			return nil, fmt.Errorf("ops: %s: axis %d has input %d, kernel %d, stride %d, padding %d: each must be at most 2^30",
				op, a, in, k, s, pp)
		}
		if kv *= k; kv >= poolMaxWindow {
			return nil, fmt.Errorf("ops: %s: kernel %v has a window of at least 2^24 cells", op, p.Kernel)
		}
		o := PoolOutDim(in, k, s, pp)
		out = append(out, o)
		at := A - d + a
		geom[at], geom[A+at], geom[2*A+at], geom[3*A+at], geom[4*A+at] = uint32(in), uint32(o), uint32(k), uint32(s), uint32(pp)
	}
	inN, ok1 := mulFits(inShape...)
	outN, ok2 := mulFits(out...)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("ops: %s: input shape %v (output %v) overflows", op, inShape, out)
	}
	inVol, _ := mulFits(spatial...)
	outVol, _ := mulFits(out[lead:]...)
	return &poolPlan{inN: inN, outN: outN, outShape: out, sizes: []int{nc, inVol, outVol}, geom: geom}, nil
}

// poolBeta checks smooth max pooling's β: finite and non-zero after rounding to float32.
func poolBeta(op string, beta float64) (float32, error) {
	b := float32(beta)
	if b == 0 || math.IsInf(float64(b), 0) || b != b {
		return 0, fmt.Errorf("ops: %s: beta %v is %v as a float32: want finite and non-zero", op, beta, b)
	}
	return b, nil
}

// poolForward checks x against the plan and runs a forward row.
func poolForward(op string, kop *kernelOp, x *Buffer, inShape []int, p PoolParams, scalars ...float32) (*Buffer, error) {
	outs, err := poolForwardN(op, kop, 1, x, inShape, p, scalars...)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// poolForwardN is poolForward for a row of n outputs, each of the output's length.
func poolForwardN(op string, kop *kernelOp, n int, x *Buffer, inShape []int, p PoolParams, scalars ...float32) ([]*Buffer, error) {
	pl, err := planPool(op, inShape, p)
	if err != nil {
		return nil, err
	}
	if x == nil {
		return nil, fmt.Errorf("ops: %s: x is nil", op)
	}
	if err := checkLen(op, x, pl.inN, fmt.Sprintf("x %v", inShape)); err != nil {
		return nil, err
	}
	sizes := pl.sizes
	if kop == avgPoolFwdOp {
		sizes = append(sizes, b2i(p.CountIncludePad))
	}
	outLens := make([]int, n)
	for i := range outLens {
		outLens[i] = pl.outN
	}
	if pl.outN == 0 {
		outs := make([]*Buffer, 0, n)
		for range n {
			b, err := newBuffer(x.dev, 0)
			if err != nil {
				releaseAll(outs)
				return nil, err
			}
			outs = append(outs, b)
		}
		return outs, nil
	}
	return pl.run(kop, outLens, []*Buffer{x}, sizes, scalars...)
}

// poolOperand is an operand a backward reads beside gradOut: x (the input's length) or the
// argmax offsets (the output's).
type poolOperand struct {
	name    string
	b       *Buffer
	ofInput bool
}

// poolBackward checks gradOut and the extra operands of a backward (each non-nil, of its length,
// on gradOut's device) and returns the plan, or zeros when the output or input is empty.
func poolBackward(op string, gradOut *Buffer, inShape []int, p PoolParams, extra ...poolOperand) (*poolPlan, *Buffer, error) {
	pl, err := planPool(op, inShape, p)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range extra {
		if e.b == nil {
			return nil, nil, fmt.Errorf("ops: %s: %s is nil", op, e.name)
		}
		n, shape := pl.outN, pl.outShape
		if e.ofInput {
			n, shape = pl.inN, inShape
		}
		if err := checkLen(op, e.b, n, fmt.Sprintf("%s %v", e.name, shape)); err != nil {
			return nil, nil, err
		}
	}
	if gradOut == nil {
		return nil, nil, fmt.Errorf("ops: %s: gradOut is nil", op)
	}
	if err := checkLen(op, gradOut, pl.outN, fmt.Sprintf("gradOut %v", pl.outShape)); err != nil {
		return nil, nil, err
	}
	for _, e := range extra {
		if err := onDevice(op, gradOut, e.b.dev); err != nil {
			return nil, nil, err
		}
	}
	if pl.outN == 0 || pl.inN == 0 {
		z, err := Zeros(gradOut.dev, pl.inN)
		return nil, z, err
	}
	return pl, nil, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// MaxPoolND returns the max pooling of x, of shape inShape ((C, spatial...) or (N, C,
// spatial...)), with p's kernel, stride and padding; the result has PoolOutShape(inShape, p).
// Each output is the first maximum of the in-bounds cells of its window (NaN counts as the
// maximum); cpu.MaxPoolFwd states the arithmetic.
func MaxPoolND(x *Buffer, inShape []int, p PoolParams) (*Buffer, error) {
	return poolForward("max_pool", maxPoolFwdOp, x, inShape, p)
}

// MaxPoolNDWithOffsets returns MaxPoolND's result and, from the same pass, each output's argmax
// offset: the row-major position of the chosen cell in its window, as a float32
// (cpu.MaxPoolFwdArgmax). A training step keeps the offsets (one float per output, as PyTorch
// keeps its indices) and hands them to MaxPoolNDBackwardOffsets, which then does not read x.
func MaxPoolNDWithOffsets(x *Buffer, inShape []int, p PoolParams) (y, offsets *Buffer, err error) {
	outs, err := poolForwardN("max_pool", maxPoolFwdArgmaxOp, 2, x, inShape, p)
	if err != nil {
		return nil, nil, err
	}
	return outs[0], outs[1], nil
}

// MaxPoolNDBackward returns the gradient of MaxPoolND with respect to x for the output gradient
// gradOut: each output's gradient goes to its window's first maximum (the argmax, computed again
// from x), summed per input element over the windows in ascending order (cpu.MaxPoolBwd).
func MaxPoolNDBackward(x, gradOut *Buffer, inShape []int, p PoolParams) (*Buffer, error) {
	const op = "max_pool_bwd"
	pl, z, err := poolBackward(op, gradOut, inShape, p, poolOperand{"x", x, true})
	if pl == nil {
		return z, err
	}
	ix, err := pl.indices(x.dev)
	if err != nil {
		return nil, opErr(op, err)
	}
	defer ix.Release()
	offsets, err := maxPoolArgmaxOp.call1(pl.outN, []*Buffer{x}, []*Indices{ix}, pl.sizes)
	if err != nil {
		return nil, err
	}
	defer offsets.Release()
	return maxPoolBwdOp.call1(pl.inN, []*Buffer{offsets, gradOut}, []*Indices{ix}, pl.sizes)
}

// MaxPoolNDBackwardOffsets is MaxPoolNDBackward from the offsets of MaxPoolNDWithOffsets (of
// the same x, inShape and p) instead of x: the same result, one pass fewer. Offsets that name
// no cell of their window (not an integer in [0, window volume), or a padded cell) send no
// gradient.
func MaxPoolNDBackwardOffsets(offsets, gradOut *Buffer, inShape []int, p PoolParams) (*Buffer, error) {
	const op = "max_pool_bwd"
	pl, z, err := poolBackward(op, gradOut, inShape, p, poolOperand{"offsets", offsets, false})
	if pl == nil {
		return z, err
	}
	return pl.run1(maxPoolBwdOp, pl.inN, []*Buffer{offsets, gradOut}, pl.sizes)
}

// AvgPoolND returns the average pooling of x (shape inShape as MaxPoolND's): the in-bounds cells
// of each window summed in row-major order and divided by the window volume (p.CountIncludePad)
// or by the number of in-bounds cells (cpu.AvgPoolFwd).
func AvgPoolND(x *Buffer, inShape []int, p PoolParams) (*Buffer, error) {
	return poolForward("avg_pool", avgPoolFwdOp, x, inShape, p)
}

// AvgPoolNDBackward returns the gradient of AvgPoolND with respect to x (of shape inShape) for
// the output gradient gradOut: per input element, the sum over the windows containing it, in
// ascending order, of gradOut/divisor (cpu.AvgPoolBwd).
func AvgPoolNDBackward(gradOut *Buffer, inShape []int, p PoolParams) (*Buffer, error) {
	const op = "avg_pool_bwd"
	pl, z, err := poolBackward(op, gradOut, inShape, p)
	if pl == nil {
		return z, err
	}
	return pl.run1(avgPoolBwdOp, pl.inN, []*Buffer{gradOut}, append(pl.sizes, b2i(p.CountIncludePad)))
}

// SmoothMaxPoolND returns the smooth max pooling of x (shape inShape as MaxPoolND's) with
// β = p.Beta: y = pivot + log(Σ exp(β(v - pivot)))/β over each window's cells, padding read as
// 0, the pivot its maximum (β > 0) or minimum (β < 0); cpu.SmoothMaxPoolFwd states the
// arithmetic (exp and log are the project's float32 algorithms).
func SmoothMaxPoolND(x *Buffer, inShape []int, p PoolParams) (*Buffer, error) {
	const op = "smooth_max_pool"
	b, err := poolBeta(op, p.Beta)
	if err != nil {
		return nil, err
	}
	return poolForward(op, smoothMaxPoolFwdOp, x, inShape, p, b)
}

// SmoothMaxPoolNDBackward returns the gradient of SmoothMaxPoolND with respect to x: per input
// element, the sum over the windows containing it, in ascending order, of gradOut times the
// element's softmax weight exp(β(v - pivot))/Σ (the window statistics computed again from x;
// cpu.SmoothMaxPoolBwd). Padding receives no gradient.
func SmoothMaxPoolNDBackward(x, gradOut *Buffer, inShape []int, p PoolParams) (*Buffer, error) {
	const op = "smooth_max_pool_bwd"
	b, err := poolBeta(op, p.Beta)
	if err != nil {
		return nil, err
	}
	pl, z, err := poolBackward(op, gradOut, inShape, p, poolOperand{"x", x, true})
	if pl == nil {
		return z, err
	}
	ix, err := pl.indices(x.dev)
	if err != nil {
		return nil, opErr(op, err)
	}
	defer ix.Release()
	stats, err := smoothMaxPoolStatsOp.call([]int{pl.outN, pl.outN}, []*Buffer{x}, []*Indices{ix}, pl.sizes, b)
	if err != nil {
		return nil, err
	}
	defer releaseAll(stats)
	return smoothMaxPoolBwdOp.call1(pl.inN, []*Buffer{x, stats[0], stats[1], gradOut}, []*Indices{ix}, pl.sizes, b)
}

// pool2d is the geometry of the seeds' 2-D entry points: one stride and one padding for both
// axes.
func pool2d(inC, inH, inW, kH, kW, stride, padding int) ([]int, PoolParams) {
	return []int{inC, inH, inW}, PoolParams{Kernel: []int{kH, kW}, Stride: []int{stride, stride},
		Padding: []int{padding, padding}, CountIncludePad: true}
}

// poolSeedND is the geometry of the seeds' N-D entry points: four arrays of one length.
func poolSeedND(op string, inSpatial, kernel, stride, padding []int, inC int) ([]int, PoolParams, error) {
	d := len(inSpatial)
	if len(kernel) != d || len(stride) != d || len(padding) != d {
		return nil, PoolParams{}, fmt.Errorf("ops: %s: inSpatial %v, kernel %v, stride %v, padding %v: want arrays of one length",
			op, inSpatial, kernel, stride, padding)
	}
	if d == 0 {
		return nil, PoolParams{}, fmt.Errorf("ops: %s: d=0 is not supported", op)
	}
	return append([]int{inC}, inSpatial...), PoolParams{Kernel: kernel, Stride: stride, Padding: padding, CountIncludePad: true}, nil
}

// MaxPool2dFwd is the seeds' maxpool2d_fwd: max pooling of one sample x (inC, inH, inW) with a
// kH x kW window, one stride and one padding for both axes (MaxPoolND).
func MaxPool2dFwd(x *Buffer, inC, inH, inW, kH, kW, stride, padding int) (*Buffer, error) {
	s, p := pool2d(inC, inH, inW, kH, kW, stride, padding)
	return MaxPoolND(x, s, p)
}

// MaxPool2dBwd is the seeds' maxpool2d_bwd: the gradient of MaxPool2dFwd (MaxPoolNDBackward).
func MaxPool2dBwd(x, gradOut *Buffer, inC, inH, inW, kH, kW, stride, padding int) (*Buffer, error) {
	s, p := pool2d(inC, inH, inW, kH, kW, stride, padding)
	return MaxPoolNDBackward(x, gradOut, s, p)
}

// MaxPoolFwd is the seeds' maxpool_fwd: N-D max pooling of one sample x (inC, inSpatial...),
// with per-axis kernel, stride and padding (all of len(inSpatial), 1 to 8).
func MaxPoolFwd(x *Buffer, inSpatial, kernel, stride, padding []int, inC int) (*Buffer, error) {
	s, p, err := poolSeedND("max_pool", inSpatial, kernel, stride, padding, inC)
	if err != nil {
		return nil, err
	}
	return MaxPoolND(x, s, p)
}

// MaxPoolBwd is the seeds' maxpool_bwd: the gradient of MaxPoolFwd.
func MaxPoolBwd(x, gradOut *Buffer, inSpatial, kernel, stride, padding []int, inC int) (*Buffer, error) {
	s, p, err := poolSeedND("max_pool_bwd", inSpatial, kernel, stride, padding, inC)
	if err != nil {
		return nil, err
	}
	return MaxPoolNDBackward(x, gradOut, s, p)
}

// AvgPool2dFwd is the seeds' avgpool2d_fwd: average pooling of one sample (count_include_pad:
// the divisor is kH*kW).
func AvgPool2dFwd(x *Buffer, inC, inH, inW, kH, kW, stride, padding int) (*Buffer, error) {
	s, p := pool2d(inC, inH, inW, kH, kW, stride, padding)
	return AvgPoolND(x, s, p)
}

// AvgPool2dBwd is the seeds' avgpool2d_bwd: the gradient of AvgPool2dFwd (it reads no input).
func AvgPool2dBwd(gradOut *Buffer, inC, inH, inW, kH, kW, stride, padding int) (*Buffer, error) {
	s, p := pool2d(inC, inH, inW, kH, kW, stride, padding)
	return AvgPoolNDBackward(gradOut, s, p)
}

// AvgPoolFwd is the seeds' avgpool_fwd: N-D average pooling of one sample (count_include_pad).
func AvgPoolFwd(x *Buffer, inSpatial, kernel, stride, padding []int, inC int) (*Buffer, error) {
	s, p, err := poolSeedND("avg_pool", inSpatial, kernel, stride, padding, inC)
	if err != nil {
		return nil, err
	}
	return AvgPoolND(x, s, p)
}

// AvgPoolBwd is the seeds' avgpool_bwd: the gradient of AvgPoolFwd.
func AvgPoolBwd(gradOut *Buffer, inSpatial, kernel, stride, padding []int, inC int) (*Buffer, error) {
	s, p, err := poolSeedND("avg_pool_bwd", inSpatial, kernel, stride, padding, inC)
	if err != nil {
		return nil, err
	}
	return AvgPoolNDBackward(gradOut, s, p)
}

// SmoothMaxPool2dFwd is the seeds' smooth_maxpool2d_fwd: smooth max pooling of one sample with
// β = beta (SmoothMaxPoolND).
func SmoothMaxPool2dFwd(x *Buffer, beta float64, inC, inH, inW, kH, kW, stride, padding int) (*Buffer, error) {
	s, p := pool2d(inC, inH, inW, kH, kW, stride, padding)
	p.Beta = beta
	return SmoothMaxPoolND(x, s, p)
}

// SmoothMaxPool2dBwd is the seeds' smooth_maxpool2d_bwd: the gradient of SmoothMaxPool2dFwd.
func SmoothMaxPool2dBwd(x, gradOut *Buffer, beta float64, inC, inH, inW, kH, kW, stride, padding int) (*Buffer, error) {
	s, p := pool2d(inC, inH, inW, kH, kW, stride, padding)
	p.Beta = beta
	return SmoothMaxPoolNDBackward(x, gradOut, s, p)
}

// SmoothMaxPoolFwd is the seeds' smooth_maxpool_fwd: N-D smooth max pooling of one sample.
func SmoothMaxPoolFwd(x *Buffer, beta float64, inSpatial, kernel, stride, padding []int, inC int) (*Buffer, error) {
	s, p, err := poolSeedND("smooth_max_pool", inSpatial, kernel, stride, padding, inC)
	if err != nil {
		return nil, err
	}
	p.Beta = beta
	return SmoothMaxPoolND(x, s, p)
}

// SmoothMaxPoolBwd is the seeds' smooth_maxpool_bwd: the gradient of SmoothMaxPoolFwd.
func SmoothMaxPoolBwd(x, gradOut *Buffer, beta float64, inSpatial, kernel, stride, padding []int, inC int) (*Buffer, error) {
	s, p, err := poolSeedND("smooth_max_pool_bwd", inSpatial, kernel, stride, padding, inC)
	if err != nil {
		return nil, err
	}
	p.Beta = beta
	return SmoothMaxPoolNDBackward(x, gradOut, s, p)
}
