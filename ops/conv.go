package ops

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The convolution family (ptx/conv.cu; cpu/conv.go): N-D convolution and transposed
// convolution, spatial rank 1 to 8, forward and backward, in the batched channel-first layout
// PyTorch trains with and in the seeds' single-sample layout (a batch of one).
//
// Layout (row-major): x (N, C_in, in...), y (N, C_out, out...), a convolution's weight
// (C_out, C_in/groups, k...), a transposed convolution's weight (C_in, C_out/groups, k...)
// (PyTorch's), bias (C_out). Output sizes (torchlean-runtime.md 3.11, with dilation):
//
//	conv:       out = (in + 2*pad - (dil*(k-1)+1))/stride + 1, or 0 when in + 2*pad < dil*(k-1)+1
//	transposed: out = max(0, (in-1)*stride - 2*pad + dil*(k-1) + 1 + outputPadding), 0 when in = 0
//
// A kernel larger than the padded input is no error: the output is empty along that axis (the
// seeds' outDim rule), and the gradients of an empty output are zeros.
//
// Arithmetic (DESIGN.md rules 1 and 3; cpu.ConvFwd, cpu.ConvBwdInput, cpu.ConvBwdWeight and
// cpu.ConvBwdBias state it as code): every output has one owner whose sum starts at +0 and takes
// one single-rounding fma per term, in a fixed order, then adds the bias (one rounding) when
// there is one:
//   - forward: input channels of the group ascending, then kernel offsets in row-major order;
//     padded cells enter as +0 terms;
//   - input gradient (and the transposed forward): output channels of the group ascending, then
//     kernel offsets row-major, only the offsets whose position (i + pad - kk*dil) is a multiple
//     of the stride on every axis (a position past dY's edge enters as a +0 term);
//   - weight gradient: samples ascending, then output positions row-major (padding as +0);
//   - bias gradient: a plain sum over samples, then positions, ascending.
//
// A transposed convolution is the input gradient of the convolution with the roles of the
// channels swapped (its forward), and its backward is that convolution's forward (input
// gradient) and weight gradient. No atomics in either mode. GPU: tiled implicit GEMMs where
// convTileFwd, convTileBwdInput and convTileBwdWeight say so (sizes only), direct kernels (one
// thread per output) elsewhere; CPU: implicit GEMMs on the matmul family's micro-kernels. Every
// one computes the same sums term for term: the same bits.
var (
	convFwdOp = row(&kernelOp{name: "conv_fwd", kernel: ptx.ConvFwd, outs: 1, ins: 3, idx: 1,
		grid: strided(product(0, 2, 5)), units: oneUnit, whole: true,
		cpu: func(h *hostArgs, _, _ int) {
			s := h.s
			cpu.ConvFwd(h.b[0], h.b[1], h.b[2], h.b[3], h.idx[0], s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] != 0)
		}})
	convBwdInputOp = row(&kernelOp{name: "conv_bwd_input", kernel: ptx.ConvBwdInput, outs: 1, ins: 3, idx: 1,
		grid: strided(product(0, 1, 4)), units: oneUnit, whole: true,
		cpu: func(h *hostArgs, _, _ int) {
			s := h.s
			cpu.ConvBwdInput(h.b[0], h.b[1], h.b[2], h.b[3], h.idx[0], s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] != 0)
		}})
	convBwdWeightOp = row(&kernelOp{name: "conv_bwd_weight", kernel: ptx.ConvBwdWeight, outs: 1, ins: 2, idx: 1,
		grid: strided(func(s []int) int { return s[2] * (s[1] / s[3]) * s[6] }), units: oneUnit, whole: true,
		cpu: func(h *hostArgs, _, _ int) {
			s := h.s
			cpu.ConvBwdWeight(h.b[0], h.b[1], h.b[2], h.idx[0], s[0], s[1], s[2], s[3], s[4], s[5], s[6])
		}})
	// The tiled forms (ptx/conv.cu, conv_*_tile): the same parameters and twins as the rows
	// above, the grid from the tile counts (the kernels walk their tiles grid-stride, so any
	// count is correct).
	convFwdTileOp = row(&kernelOp{name: "conv_fwd_tile", outs: 1, ins: 3, idx: 1,
		grid: pickedGrid(func(s []int, _ gpuFacts) launchShape {
			// groups * row tiles of (batch, output position) * column tiles of the group's outputs
			t := convTiles(s[3], s[0]*s[5], ptx.ConvTileRows, s[2]/s[3], ptx.ConvTileCols)
			return convTileShape(ptx.ConvFwdTile, t, ptx.ConvTileThreads)
		}),
		units: oneUnit, whole: true, cpu: convFwdOp.cpu})
	convBwdInputTileOp = row(&kernelOp{name: "conv_bwd_input_tile", outs: 1, ins: 3, idx: 1,
		grid: pickedGrid(func(s []int, _ gpuFacts) launchShape {
			// the tiles of the rows taken together; the kernel's own count splits the rows by
			// residue class of the strides (a few more tiles, walked grid-stride)
			t := convTiles(s[3], s[0]*s[4], ptx.ConvTileRows, s[1]/s[3], ptx.ConvTileCols)
			return convTileShape(ptx.ConvBwdInputTile, t, ptx.ConvTileThreads)
		}),
		units: oneUnit, whole: true, cpu: convBwdInputOp.cpu})
	convBwdWeightTileOp = row(&kernelOp{name: "conv_bwd_weight_tile", outs: 1, ins: 2, idx: 1,
		grid: pickedGrid(func(s []int, _ gpuFacts) launchShape {
			t := convTiles(s[3], s[2]/s[3], ptx.ConvWeightTileRows, s[1]/s[3]*s[6], ptx.ConvWeightTileCols)
			return convTileShape(ptx.ConvBwdWeightTile, t, ptx.ConvWeightTileThreads)
		}),
		units: oneUnit, whole: true, cpu: convBwdWeightOp.cpu})
	convBwdBiasOp = row(&kernelOp{name: "conv_bwd_bias", kernel: ptx.ConvBwdBias, outs: 1, ins: 1,
		grid: strided(size(1)), units: size(1),
		cpu: func(h *hostArgs, lo, hi int) { cpu.ConvBwdBias(h.b[0], h.b[1], h.s[0], h.s[1], h.s[2], lo, hi) }})
)

// convTiles returns groups * ceil(rows/tr) * ceil(cols/tc), at least 1 and at most 2^31-1.
func convTiles(groups, rows, tr, cols, tc int) int {
	t := uint64(groups) * uint64((rows+tr-1)/tr) * uint64((cols+tc-1)/tc)
	return int(max(1, min(t, 1<<31-1)))
}

// convTileShape is a 1-D launch of blocks blocks of threads threads.
func convTileShape(k *ptx.Kernel, blocks, threads int) launchShape {
	return launchShape{kernel: k, grid: [3]uint32{uint32(blocks), 1, 1}, block: [3]uint32{uint32(threads), 1, 1}}
}

// convTileLimit bounds the sizes the tiled kernels index with 32-bit ints.
const convTileLimit = 1 << 30

// tileFits reports whether the tiled kernels take g (their preconditions in ptx/conv.cu):
// spatial rank <= 3, at most ptx.ConvTileMaxKernel kernel offsets, and every spatial index,
// row count and K below convTileLimit: per axis the bound in + out*stride + k*dilation +
// padding + 1, and its product over the axes, stay below it.
func (g *convGeom) tileFits() bool {
	if len(g.in) > 3 || g.kProd > ptx.ConvTileMaxKernel {
		return false
	}
	b := uint64(1)
	for a := range g.in {
		f := uint64(g.in[a]) + uint64(g.out[a])*uint64(g.s[a]) + uint64(g.k[a])*uint64(g.d[a]) + uint64(g.p[a]) + 1
		if f >= convTileLimit {
			return false
		}
		if b *= f; b >= convTileLimit {
			return false
		}
	}
	lim := uint64(convTileLimit)
	n := uint64(g.batch)
	return n*uint64(g.inProd) < lim && n*uint64(g.outProd) < lim &&
		uint64(g.cin)*uint64(g.kProd) < lim && uint64(g.cout)*uint64(g.kProd) < lim &&
		uint64(g.cin) < lim && uint64(g.cout) < lim
}

// The choice between the tiled and the direct kernels, from the sizes alone (DESIGN.md rule 7;
// the bits are the same either way): the tiles where they fit and the problem fills them
// reasonably, the direct kernels for narrow channel groups (depthwise), few outputs, or many
// stride classes. The thresholds are first estimates, to be tuned on a GPU.
const (
	convTileMinCols  = 16 // channels of a group as the tile's columns (fwd: out, input gradient: in)
	convTileMinRows  = 64 // samples * positions
	convTileMaxClass = 64 // stride residue classes of the input gradient (product of the strides)
	convWTileMinRows = 8  // output channels of a group (weight gradient)
	convWTileMinCols = 16 // input channels of a group * kernel offsets (weight gradient)
)

// convDirectOnly makes every convolution take the direct kernels: for benchmarks and tests
// that compare the two paths (the bits are the same), never set otherwise.
var convDirectOnly bool

// convTileFwd reports whether the forward of g runs on conv_fwd_tile.
func convTileFwd(g *convGeom) bool {
	return !convDirectOnly && g.tileFits() && g.cout/g.groups >= convTileMinCols && g.batch*g.outProd >= convTileMinRows
}

// convTileBwdInput reports whether the input gradient of g runs on conv_bwd_input_tile.
func convTileBwdInput(g *convGeom) bool {
	classes := 1
	for _, s := range g.s {
		if classes *= s; classes > convTileMaxClass {
			return false
		}
	}
	return !convDirectOnly && g.tileFits() && g.cin/g.groups >= convTileMinCols && g.batch*g.inProd >= convTileMinRows
}

// convTileBwdWeight reports whether the weight gradient of g runs on conv_bwd_weight_tile.
func convTileBwdWeight(g *convGeom) bool {
	return !convDirectOnly && g.tileFits() && g.cout/g.groups >= convWTileMinRows && g.cin/g.groups*g.kProd >= convWTileMinCols
}

// ConvDims are the sizes of a convolution: the batch, the channels and the spatial sizes of its
// input and kernel (1 to 8 axes, the same number). For a transposed convolution, InChannels and
// Input are those of its input too.
type ConvDims struct {
	Batch       int
	InChannels  int
	OutChannels int
	Input       []int // spatial sizes of the input
	Kernel      []int // spatial sizes of the kernel, each > 0
}

// ConvParams are a convolution's options, with PyTorch's names. Each per-axis list may be nil
// (the default), hold one entry (every axis) or one per spatial axis.
type ConvParams struct {
	Stride        []int // > 0; default 1
	Padding       []int // symmetric zero padding, >= 0; default 0
	Dilation      []int // > 0; default 1
	OutputPadding []int // transposed convolutions only: >= 0 and < the stride; default 0
	Groups        int   // divides both channel counts; 0 means 1 (depthwise: Groups = InChannels)
}

// convGeom is a checked convolution, in the convolution's own terms (for a transposed one: the
// convolution whose input gradient it is).
type convGeom struct {
	batch, cin, cout, groups int
	in, out, k, s, p, d      []int
	inProd, outProd, kProd   int
}

// axisList resolves a per-axis option.
func axisList(op, what string, v []int, rank, def, least int) ([]int, error) {
	out := make([]int, rank)
	switch len(v) {
	case 0:
		for a := range out {
			out[a] = def
		}
	case 1:
		for a := range out {
			out[a] = v[0]
		}
	case rank:
		copy(out, v)
	default:
		return nil, fmt.Errorf("ops: %s: %d %s entries for %d spatial axes (want 1 or %d)", op, len(v), what, rank, rank)
	}
	for a, x := range out {
		if x < least || uint64(x) > math.MaxUint32 {
			return nil, fmt.Errorf("ops: %s: %s %d on axis %d (want %d to %d)", op, what, x, a, least, uint32(math.MaxUint32))
		}
	}
	return out, nil
}

// checkConv validates d and p; transposed selects the transposed output rule.
func checkConv(op string, d ConvDims, p ConvParams, transposed bool) (*convGeom, error) {
	rank := len(d.Input)
	if rank == 0 || rank > cpu.ConvMaxRank {
		return nil, fmt.Errorf("ops: %s: spatial rank %d (want 1 to %d)", op, rank, cpu.ConvMaxRank)
	}
	if len(d.Kernel) != rank {
		return nil, fmt.Errorf("ops: %s: %d kernel sizes for %d spatial axes", op, len(d.Kernel), rank)
	}
	if d.Batch < 0 {
		return nil, fmt.Errorf("ops: %s: batch %d", op, d.Batch)
	}
	if d.InChannels < 1 || d.OutChannels < 1 || uint64(d.InChannels) > math.MaxUint32 || uint64(d.OutChannels) > math.MaxUint32 {
		return nil, fmt.Errorf("ops: %s: channels %d in, %d out (want at least 1)", op, d.InChannels, d.OutChannels)
	}
	groups := max(p.Groups, 1)
	if p.Groups < 0 || d.InChannels%groups != 0 || d.OutChannels%groups != 0 {
		return nil, fmt.Errorf("ops: %s: %d groups do not divide %d input and %d output channels", op, p.Groups, d.InChannels, d.OutChannels)
	}
	for a, x := range d.Input {
		if x < 0 || uint64(x) > math.MaxUint32 {
			return nil, fmt.Errorf("ops: %s: input size %d on axis %d", op, x, a)
		}
	}
	for a, x := range d.Kernel {
		if x < 1 || uint64(x) > math.MaxUint32 {
			return nil, fmt.Errorf("ops: %s: kernel size %d on axis %d (want at least 1)", op, x, a)
		}
	}
	s, err := axisList(op, "stride", p.Stride, rank, 1, 1)
	if err != nil {
		return nil, err
	}
	pad, err := axisList(op, "padding", p.Padding, rank, 0, 0)
	if err != nil {
		return nil, err
	}
	dil, err := axisList(op, "dilation", p.Dilation, rank, 1, 1)
	if err != nil {
		return nil, err
	}
	op2, err := axisList(op, "output padding", p.OutputPadding, rank, 0, 0)
	if err != nil {
		return nil, err
	}
	out := make([]int, rank)
	for a := range rank {
		span := dil[a]*(d.Kernel[a]-1) + 1
		if !transposed {
			if op2[a] != 0 {
				return nil, fmt.Errorf("ops: %s: output padding %d on axis %d of a convolution (transposed only)", op, op2[a], a)
			}
			if in2 := d.Input[a] + 2*pad[a]; in2 >= span {
				out[a] = (in2-span)/s[a] + 1
			}
			continue
		}
		if op2[a] >= s[a] {
			return nil, fmt.Errorf("ops: %s: output padding %d on axis %d not below the stride %d", op, op2[a], a, s[a])
		}
		if d.Input[a] > 0 {
			out[a] = max(0, (d.Input[a]-1)*s[a]-2*pad[a]+span+op2[a])
		}
		if uint64(out[a]) > math.MaxUint32 {
			return nil, fmt.Errorf("ops: %s: output size %d on axis %d does not fit in uint32", op, out[a], a)
		}
	}
	g := &convGeom{batch: d.Batch, cin: d.InChannels, cout: d.OutChannels, groups: groups,
		in: append([]int(nil), d.Input...), out: out, k: append([]int(nil), d.Kernel...), s: s, p: pad, d: dil}
	if transposed { // the convolution whose input gradient this is
		g.cin, g.cout = g.cout, g.cin
		g.in, g.out = g.out, g.in
	}
	var ok1, ok2, ok3 bool
	g.inProd, ok1 = mulFits(g.in...)
	g.outProd, ok2 = mulFits(g.out...)
	g.kProd, ok3 = mulFits(g.k...)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("ops: %s: spatial sizes overflow", op)
	}
	if _, ok := mulFits(g.batch, max(g.cin, g.cout), max(g.inProd, g.outProd, 1)); !ok {
		return nil, fmt.Errorf("ops: %s: sizes overflow", op)
	}
	if _, ok := mulFits(g.cout, g.cin/g.groups, g.kProd); !ok {
		return nil, fmt.Errorf("ops: %s: weight size overflows", op)
	}
	return g, nil
}

func (g *convGeom) xLen() int { return g.batch * g.cin * g.inProd }
func (g *convGeom) yLen() int { return g.batch * g.cout * g.outProd }
func (g *convGeom) wLen() int { return g.cout * (g.cin / g.groups) * g.kProd }

// sizes are the kernels' size parameters.
func (g *convGeom) sizes(hasBias bool) []int {
	b := 0
	if hasBias {
		b = 1
	}
	return []int{g.batch, g.cin, g.cout, g.groups, g.inProd, g.outProd, g.kProd, b}
}

// indices uploads the geometry array.
func (g *convGeom) indices(dev *Device) (*Indices, error) {
	return newIndices(dev, g.geomArray(scratchU32(cpu.ConvGeomLen)))
}

// geomArray fills host (cpu.ConvGeomLen entries) with the geometry array, the axes
// right-aligned, and returns it.
func (g *convGeom) geomArray(host []uint32) []uint32 {
	const R = cpu.ConvMaxRank
	for a := range R {
		host[a], host[R+a], host[2*R+a] = 1, 1, 1
		host[3*R+a], host[4*R+a], host[5*R+a] = 1, 0, 1
	}
	off := R - len(g.in)
	for a := range g.in {
		host[off+a], host[R+off+a], host[2*R+off+a] = uint32(g.in[a]), uint32(g.out[a]), uint32(g.k[a])
		host[3*R+off+a], host[4*R+off+a], host[5*R+off+a] = uint32(g.s[a]), uint32(g.p[a]), uint32(g.d[a])
	}
	return host
}

// convForward: y = conv(x, w) + bias in g's terms.
func convForward(op string, g *convGeom, x, w, bias *Buffer) (*Buffer, error) {
	if err := checkLen(op, x, g.xLen(), "input"); err != nil {
		return nil, err
	}
	if err := checkLen(op, w, g.wLen(), "weight"); err != nil {
		return nil, err
	}
	ins := []*Buffer{x, w, w}
	if bias != nil {
		if err := checkLen(op, bias, g.cout, "bias"); err != nil {
			return nil, err
		}
		ins[2] = bias
	}
	if err := sameDevice(op, ins); err != nil {
		return nil, err
	}
	if g.yLen() == 0 {
		return full(op, x.dev, 0, 0)
	}
	ix, err := g.indices(x.dev)
	if err != nil {
		return nil, opErr(op, err)
	}
	defer ix.Release()
	op1 := convFwdOp
	if convTileFwd(g) {
		op1 = convFwdTileOp
	}
	y, err := op1.call1(g.yLen(), ins, []*Indices{ix}, g.sizes(bias != nil))
	return y, asOp(op, err)
}

// convInputGrad: dx = the input gradient for dy in g's terms (+ bias per input channel).
func convInputGrad(op string, g *convGeom, dy, w, bias *Buffer) (*Buffer, error) {
	if err := checkLen(op, dy, g.yLen(), "output gradient"); err != nil {
		return nil, err
	}
	if err := checkLen(op, w, g.wLen(), "weight"); err != nil {
		return nil, err
	}
	ins := []*Buffer{dy, w, w}
	if bias != nil {
		if err := checkLen(op, bias, g.cin, "bias"); err != nil {
			return nil, err
		}
		ins[2] = bias
	}
	if err := sameDevice(op, ins); err != nil {
		return nil, err
	}
	if g.xLen() == 0 {
		return full(op, dy.dev, 0, 0)
	}
	if g.outProd == 0 { // an empty output: zeros (and the bias)
		if bias == nil {
			return full(op, dy.dev, g.xLen(), 0)
		}
		return broadcastChannels(op, bias, g.batch, g.cin, g.inProd)
	}
	ix, err := g.indices(dy.dev)
	if err != nil {
		return nil, opErr(op, err)
	}
	defer ix.Release()
	op1 := convBwdInputOp
	if convTileBwdInput(g) {
		op1 = convBwdInputTileOp
	}
	dx, err := op1.call1(g.xLen(), ins, []*Indices{ix}, g.sizes(bias != nil))
	return dx, asOp(op, err)
}

// broadcastChannels returns (batch, ch, per) holding bias[c] in channel c: the input gradient
// kernel over an empty dY (every sum +0, plus the bias, which is exact).
func broadcastChannels(op string, bias *Buffer, batch, ch, per int) (*Buffer, error) {
	z, err := full(op, bias.dev, batch*ch*per, 0)
	if err != nil || batch*ch*per == 0 {
		return z, err
	}
	defer z.Release()
	geo := &convGeom{batch: batch, cin: ch, cout: ch, groups: ch, in: []int{per}, out: []int{per}, k: []int{1},
		s: []int{1}, p: []int{0}, d: []int{1}, inProd: per, outProd: per, kProd: 1}
	// a depthwise 1x1 convolution of zeros with a zero weight: +0 + bias = bias exactly
	w, err := full(op, bias.dev, ch, 0)
	if err != nil {
		return nil, err
	}
	defer w.Release()
	return convForward(op, geo, z, w, bias)
}

// convWeightGrad: dw for x and dy in g's terms.
func convWeightGrad(op string, g *convGeom, x, dy *Buffer) (*Buffer, error) {
	if err := checkLen(op, x, g.xLen(), "input"); err != nil {
		return nil, err
	}
	if err := checkLen(op, dy, g.yLen(), "output gradient"); err != nil {
		return nil, err
	}
	if err := sameDevice(op, []*Buffer{x, dy}); err != nil {
		return nil, err
	}
	if g.yLen() == 0 {
		return full(op, x.dev, g.wLen(), 0)
	}
	ix, err := g.indices(x.dev)
	if err != nil {
		return nil, opErr(op, err)
	}
	defer ix.Release()
	op1 := convBwdWeightOp
	if convTileBwdWeight(g) {
		op1 = convBwdWeightTileOp
	}
	dw, err := op1.call1(g.wLen(), []*Buffer{x, dy}, []*Indices{ix}, g.sizes(false)[:7])
	return dw, asOp(op, err)
}

// convBiasGrad: the sums of dy (batch, ch, per) per channel.
func convBiasGrad(op string, dy *Buffer, batch, ch, per int) (*Buffer, error) {
	if err := checkLen(op, dy, batch*ch*per, "output gradient"); err != nil {
		return nil, err
	}
	if batch*per == 0 {
		return full(op, dy.dev, ch, 0)
	}
	db, err := convBwdBiasOp.call1(ch, []*Buffer{dy}, nil, []int{batch, ch, per})
	return db, asOp(op, err)
}

// ConvOutputSize returns the output's spatial sizes of the convolution d, p.
func ConvOutputSize(d ConvDims, p ConvParams) ([]int, error) {
	g, err := checkConv("conv", d, p, false)
	if err != nil {
		return nil, err
	}
	return g.out, nil
}

// ConvTransposeOutputSize returns the output's spatial sizes of the transposed convolution d, p.
func ConvTransposeOutputSize(d ConvDims, p ConvParams) ([]int, error) {
	g, err := checkConv("conv_transpose", d, p, true)
	if err != nil {
		return nil, err
	}
	return g.in, nil
}

// ConvND returns the convolution of x (Batch, InChannels, Input...) with w (OutChannels,
// InChannels/Groups, Kernel...), plus bias (OutChannels) when bias is not nil: a fresh
// (Batch, OutChannels, out...) buffer, out from ConvOutputSize. The arithmetic is in the package
// comment of this family (cpu.ConvFwd): the same bits on every device.
func ConvND(x, w, bias *Buffer, d ConvDims, p ConvParams) (*Buffer, error) {
	g, err := checkConv("conv", d, p, false)
	if err != nil {
		return nil, err
	}
	return convForward("conv", g, x, w, bias)
}

// ConvNDBackwardInput returns the gradient of ConvND with respect to x, given the gradient dy
// of its output: (Batch, InChannels, Input...), cpu.ConvBwdInput's arithmetic.
func ConvNDBackwardInput(dy, w *Buffer, d ConvDims, p ConvParams) (*Buffer, error) {
	g, err := checkConv("conv_bwd_input", d, p, false)
	if err != nil {
		return nil, err
	}
	return convInputGrad("conv_bwd_input", g, dy, w, nil)
}

// ConvNDBackwardWeight returns the gradient of ConvND with respect to w (the weight's shape),
// summed over the batch: cpu.ConvBwdWeight's arithmetic.
func ConvNDBackwardWeight(x, dy *Buffer, d ConvDims, p ConvParams) (*Buffer, error) {
	g, err := checkConv("conv_bwd_weight", d, p, false)
	if err != nil {
		return nil, err
	}
	return convWeightGrad("conv_bwd_weight", g, x, dy)
}

// ConvNDBackwardBias returns the gradient of ConvND with respect to its bias (OutChannels):
// each channel's sum of dy over the batch, then the positions, in ascending order.
func ConvNDBackwardBias(dy *Buffer, d ConvDims, p ConvParams) (*Buffer, error) {
	g, err := checkConv("conv_bwd_bias", d, p, false)
	if err != nil {
		return nil, err
	}
	return convBiasGrad("conv_bwd_bias", dy, g.batch, g.cout, g.outProd)
}

// ConvTransposeND returns the transposed convolution of x (Batch, InChannels, Input...) with w
// (InChannels, OutChannels/Groups, Kernel...), PyTorch's layout, plus bias (OutChannels) when
// not nil: a fresh (Batch, OutChannels, out...) buffer, out from ConvTransposeOutputSize. It is
// the input gradient of the convolution from OutChannels to InChannels with the same weight,
// stride, padding and dilation (cpu.ConvBwdInput's arithmetic, the bias added last).
func ConvTransposeND(x, w, bias *Buffer, d ConvDims, p ConvParams) (*Buffer, error) {
	g, err := checkConv("conv_transpose", d, p, true)
	if err != nil {
		return nil, err
	}
	return convInputGrad("conv_transpose", g, x, w, bias)
}

// ConvTransposeNDBackwardInput returns the gradient of ConvTransposeND with respect to x: the
// forward convolution of dy with w (cpu.ConvFwd's arithmetic, no bias).
func ConvTransposeNDBackwardInput(dy, w *Buffer, d ConvDims, p ConvParams) (*Buffer, error) {
	g, err := checkConv("conv_transpose_bwd_input", d, p, true)
	if err != nil {
		return nil, err
	}
	return convForward("conv_transpose_bwd_input", g, dy, w, nil)
}

// ConvTransposeNDBackwardWeight returns the gradient of ConvTransposeND with respect to w:
// cpu.ConvBwdWeight of the convolution it transposes, with dy as its input and x as its output
// gradient (samples, then x's positions, ascending).
func ConvTransposeNDBackwardWeight(x, dy *Buffer, d ConvDims, p ConvParams) (*Buffer, error) {
	g, err := checkConv("conv_transpose_bwd_weight", d, p, true)
	if err != nil {
		return nil, err
	}
	return convWeightGrad("conv_transpose_bwd_weight", g, dy, x)
}

// ConvTransposeNDBackwardBias returns the gradient of ConvTransposeND with respect to its bias
// (OutChannels): each channel's sum of dy over the batch, then the positions.
func ConvTransposeNDBackwardBias(dy *Buffer, d ConvDims, p ConvParams) (*Buffer, error) {
	g, err := checkConv("conv_transpose_bwd_bias", d, p, true)
	if err != nil {
		return nil, err
	}
	return convBiasGrad("conv_transpose_bwd_bias", dy, g.batch, g.cin, g.inProd)
}

// ---- the seeds' single-sample forms (torchlean-runtime.md 2.18) ----

// seedConv are the seeds' N-D dims and params: one sample, symmetric padding, no dilation or
// groups.
func seedConv(inSpatial, kernelSpatial, stride, padding []int, inC, outC int) (ConvDims, ConvParams, error) {
	r := len(inSpatial)
	if len(kernelSpatial) != r || len(stride) != r || len(padding) != r {
		return ConvDims{}, ConvParams{}, fmt.Errorf("ops: conv: per-axis arrays of lengths %d, %d, %d, %d (want one length)",
			r, len(kernelSpatial), len(stride), len(padding))
	}
	return ConvDims{Batch: 1, InChannels: inC, OutChannels: outC, Input: inSpatial, Kernel: kernelSpatial},
		ConvParams{Stride: stride, Padding: padding}, nil
}

// ConvFwd is the seeds' N-D convolution (torchlean_cuda_conv_fwd): input (inC, in...), kernel
// (outC, inC, k...), bias (outC); ConvND with a batch of one.
func ConvFwd(input, kernel, bias *Buffer, inSpatial, kernelSpatial, stride, padding []int, inC, outC int) (*Buffer, error) {
	d, p, err := seedConv(inSpatial, kernelSpatial, stride, padding, inC, outC)
	if err != nil {
		return nil, err
	}
	return ConvND(input, kernel, bias, d, p)
}

// ConvBwd is the seeds' N-D convolution backward (torchlean_cuda_conv_bwd): the triple
// (dKernel, dBias, dInput) for the output gradient gradOutput.
func ConvBwd(input, kernel, gradOutput *Buffer, inSpatial, kernelSpatial, stride, padding []int, inC, outC int) (dK, dB, dX *Buffer, err error) {
	d, p, err := seedConv(inSpatial, kernelSpatial, stride, padding, inC, outC)
	if err != nil {
		return nil, nil, nil, err
	}
	return convTriple(input, kernel, gradOutput, d, p, false)
}

// ConvTransposeFwd is the seeds' N-D transposed convolution (torchlean_cuda_convtranspose_fwd):
// input (inC, in...), kernel (inC, outC, k...), bias (outC); ConvTransposeND with a batch of one.
func ConvTransposeFwd(input, kernel, bias *Buffer, inSpatial, kernelSpatial, stride, padding []int, inC, outC int) (*Buffer, error) {
	d, p, err := seedConv(inSpatial, kernelSpatial, stride, padding, inC, outC)
	if err != nil {
		return nil, err
	}
	return ConvTransposeND(input, kernel, bias, d, p)
}

// ConvTransposeBwd is the seeds' N-D transposed convolution backward: (dKernel, dBias, dInput).
func ConvTransposeBwd(input, kernel, gradOutput *Buffer, inSpatial, kernelSpatial, stride, padding []int, inC, outC int) (dK, dB, dX *Buffer, err error) {
	d, p, err := seedConv(inSpatial, kernelSpatial, stride, padding, inC, outC)
	if err != nil {
		return nil, nil, nil, err
	}
	return convTriple(input, kernel, gradOutput, d, p, true)
}

// Conv2dFwd is the seeds' 2-D convolution (torchlean_cuda_conv2d_fwd): one stride and one
// padding for both axes.
func Conv2dFwd(input, kernel, bias *Buffer, inC, inH, inW, outC, kH, kW, stride, padding int) (*Buffer, error) {
	return ConvFwd(input, kernel, bias, []int{inH, inW}, []int{kH, kW}, []int{stride, stride}, []int{padding, padding}, inC, outC)
}

// Conv2dBwd is the seeds' 2-D convolution backward: (dKernel, dBias, dInput).
func Conv2dBwd(input, kernel, gradOutput *Buffer, inC, inH, inW, outC, kH, kW, stride, padding int) (dK, dB, dX *Buffer, err error) {
	return ConvBwd(input, kernel, gradOutput, []int{inH, inW}, []int{kH, kW}, []int{stride, stride}, []int{padding, padding}, inC, outC)
}

// ConvTranspose2dFwd is the seeds' 2-D transposed convolution (torchlean_cuda_convtranspose2d_fwd).
func ConvTranspose2dFwd(input, kernel, bias *Buffer, inC, inH, inW, outC, kH, kW, stride, padding int) (*Buffer, error) {
	return ConvTransposeFwd(input, kernel, bias, []int{inH, inW}, []int{kH, kW}, []int{stride, stride}, []int{padding, padding}, inC, outC)
}

// ConvTranspose2dBwd is the seeds' 2-D transposed convolution backward: (dKernel, dBias, dInput).
func ConvTranspose2dBwd(input, kernel, gradOutput *Buffer, inC, inH, inW, outC, kH, kW, stride, padding int) (dK, dB, dX *Buffer, err error) {
	return ConvTransposeBwd(input, kernel, gradOutput, []int{inH, inW}, []int{kH, kW}, []int{stride, stride}, []int{padding, padding}, inC, outC)
}

// convTriple computes the seeds' backward triple; on error nothing is returned.
func convTriple(x, w, dy *Buffer, d ConvDims, p ConvParams, transposed bool) (dK, dB, dX *Buffer, err error) {
	bw, bb, bi := ConvNDBackwardWeight, ConvNDBackwardBias, ConvNDBackwardInput
	if transposed {
		bw, bb, bi = ConvTransposeNDBackwardWeight, ConvTransposeNDBackwardBias, ConvTransposeNDBackwardInput
	}
	if dK, err = bw(x, dy, d, p); err != nil {
		return nil, nil, nil, err
	}
	if dB, err = bb(dy, d, p); err != nil {
		dK.Release()
		return nil, nil, nil, err
	}
	if dX, err = bi(dy, w, d, p); err != nil {
		dK.Release()
		dB.Release()
		return nil, nil, nil, err
	}
	return dK, dB, dX, nil
}
