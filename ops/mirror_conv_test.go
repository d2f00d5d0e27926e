package ops

import "fmt"

// convMirror is one geometry of the convolution family's mirror cases.
type convMirror struct {
	d      ConvDims
	p      ConvParams
	finite bool
}

// convMirrors: rank 1, 2, 3 (and 4), 1x1 and 7x7 kernels, strides 1, 2, 3, padding, dilation,
// groups (depthwise too), channel counts around 32 and 64, batches 0, 1 and 3, a kernel larger
// than the padded input (empty output), and operands with NaN and infinities.
var convMirrors = []convMirror{
	{d: ConvDims{Batch: 3, InChannels: 4, OutChannels: 6, Input: []int{17}, Kernel: []int{3}}, p: ConvParams{Padding: []int{1}}},
	{d: ConvDims{Batch: 1, InChannels: 33, OutChannels: 33, Input: []int{64}, Kernel: []int{4}}, p: ConvParams{Padding: []int{3}, Groups: 33}},
	{d: ConvDims{Batch: 3, InChannels: 5, OutChannels: 7, Input: []int{31}, Kernel: []int{3}}, p: ConvParams{Stride: []int{3}, Padding: []int{2}, Dilation: []int{2}, OutputPadding: []int{2}}},
	{d: ConvDims{Batch: 3, InChannels: 32, OutChannels: 33, Input: []int{9, 7}, Kernel: []int{1, 1}}},
	{d: ConvDims{Batch: 1, InChannels: 3, OutChannels: 31, Input: []int{20, 19}, Kernel: []int{7, 7}}, p: ConvParams{Stride: []int{2}, Padding: []int{3}, OutputPadding: []int{1}}},
	{d: ConvDims{Batch: 3, InChannels: 33, OutChannels: 32, Input: []int{12, 11}, Kernel: []int{3, 3}}, p: ConvParams{Padding: []int{1}}},
	{d: ConvDims{Batch: 1, InChannels: 16, OutChannels: 8, Input: []int{10, 9}, Kernel: []int{3, 3}}, p: ConvParams{Stride: []int{2}, Padding: []int{1}, Dilation: []int{1, 2}, Groups: 4}},
	{d: ConvDims{Batch: 3, InChannels: 12, OutChannels: 12, Input: []int{8, 8}, Kernel: []int{3, 3}}, p: ConvParams{Padding: []int{1}, Groups: 12}},
	{d: ConvDims{Batch: 0, InChannels: 4, OutChannels: 5, Input: []int{6, 6}, Kernel: []int{3, 3}}},
	{d: ConvDims{Batch: 2, InChannels: 2, OutChannels: 3, Input: []int{2, 3}, Kernel: []int{5, 2}}, p: ConvParams{Padding: []int{1}}},
	{d: ConvDims{Batch: 3, InChannels: 4, OutChannels: 6, Input: []int{5, 6, 7}, Kernel: []int{3, 3, 3}}, p: ConvParams{Stride: []int{1, 2, 3}, Padding: []int{1}}},
	{d: ConvDims{Batch: 1, InChannels: 8, OutChannels: 16, Input: []int{6, 6, 6}, Kernel: []int{3, 3, 3}}, p: ConvParams{Stride: []int{2}, Padding: []int{1}, OutputPadding: []int{1}}},
	{d: ConvDims{Batch: 2, InChannels: 6, OutChannels: 9, Input: []int{13, 14}, Kernel: []int{2, 3}}, p: ConvParams{Stride: []int{3}, Padding: []int{2}, Dilation: []int{3}, Groups: 3}},
	{d: ConvDims{Batch: 1, InChannels: 64, OutChannels: 65, Input: []int{14, 14}, Kernel: []int{3, 3}}, p: ConvParams{Padding: []int{1}}},
	{d: ConvDims{Batch: 1, InChannels: 2, OutChannels: 3, Input: []int{3, 4, 3, 5}, Kernel: []int{2, 1, 2, 3}}, p: ConvParams{Padding: []int{1, 0, 0, 1}}},
	{d: ConvDims{Batch: 3, InChannels: 6, OutChannels: 4, Input: []int{9, 8}, Kernel: []int{3, 2}}, p: ConvParams{Stride: []int{2, 1}, Padding: []int{1}, Groups: 2}, finite: false},
	// Around the tiled kernels' edges (ptx/conv.cu; 128 x 64 tiles of (sample, position) x
	// channels with K steps of 8, 32 x 32 weight-gradient tiles with K steps of 16): 297 rows
	// (three row tiles, the last partial), 65 output channels (two column tiles), K = 45 (a
	// partial last step); the transposed view has 65 input channels on the input-gradient tile.
	{d: ConvDims{Batch: 3, InChannels: 5, OutChannels: 65, Input: []int{11, 9}, Kernel: []int{3, 3}}, p: ConvParams{Padding: []int{1}}},
	// strides 2 and 3 with dilation: six residue classes of the input gradient, one of them
	// without any valid offset (+0 and the bias); NaN and infinities through the tiles
	{d: ConvDims{Batch: 2, InChannels: 20, OutChannels: 24, Input: []int{15, 13}, Kernel: []int{3, 2}}, p: ConvParams{Stride: []int{2, 3}, Padding: []int{1, 0}, Dilation: []int{1, 2}, OutputPadding: []int{1, 2}}},
	// a strided 1x1 (ResNet's downsampling): three of the four classes have no term
	{d: ConvDims{Batch: 2, InChannels: 24, OutChannels: 40, Input: []int{14, 14}, Kernel: []int{1, 1}}, p: ConvParams{Stride: []int{2}}},
	// rank 3 on the tiles, and groups on the tiles (32 and 16 channels a group)
	{d: ConvDims{Batch: 1, InChannels: 16, OutChannels: 20, Input: []int{5, 6, 7}, Kernel: []int{3, 3, 3}}, p: ConvParams{Stride: []int{2, 1, 1}, Padding: []int{1}, OutputPadding: []int{1, 0, 0}}},
	{d: ConvDims{Batch: 2, InChannels: 32, OutChannels: 64, Input: []int{10, 10}, Kernel: []int{3, 3}}, p: ConvParams{Padding: []int{1}, Groups: 2}},
	// weight-gradient tile edges: 33 rows, 35 columns, K = 9
	{d: ConvDims{Batch: 1, InChannels: 7, OutChannels: 33, Input: []int{9}, Kernel: []int{5}}, p: ConvParams{Padding: []int{2}}},
}

// convMirrorSpecial: the geometries of convMirrors whose inputs hold NaN and infinities.
var convMirrorSpecial = map[int]bool{15: true, 17: true}

func init() {
	for i := range convMirrors {
		convMirrors[i].finite = !convMirrorSpecial[i]
	}
}

// convCases are the mirror cases of the convolution family: for every geometry of convMirrors,
// the convolution (forward with bias; the input, weight and bias gradients) and the transposed
// convolution with the same sizes (its forward with bias and its three gradients). Inputs: x,
// w, bias, dy.
func convCases() []mirrorCase {
	var cases []mirrorCase
	for _, m := range convMirrors {
		d, p := m.d, m.p
		tag := fmt.Sprintf("n%d/c%dx%d/in%v/k%v/s%v/p%v/d%v/g%d", d.Batch, d.InChannels, d.OutChannels, d.Input, d.Kernel,
			p.Stride, p.Padding, p.Dilation, p.Groups)
		pc := p
		pc.OutputPadding = nil
		g, err := checkConv("conv", d, pc, false)
		if err != nil {
			panic(err)
		}
		cases = append(cases, mirrorCase{name: "conv/" + tag, ins: 4, finite: m.finite, sizes: []int{1},
			lens: []int{g.xLen(), g.wLen(), g.cout, g.yLen()},
			run: func(_ *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				return convMirrorRun(in, false, d, pc)
			}})
		gt, err := checkConv("conv_transpose", d, p, true)
		if err != nil {
			panic(err)
		}
		// in the transposed problem x is the convolution view's dY and dy its x
		cases = append(cases, mirrorCase{name: "conv_transpose/" + tag + fmt.Sprintf("/op%v", p.OutputPadding), ins: 4,
			finite: m.finite, sizes: []int{1},
			lens: []int{gt.yLen(), gt.wLen(), gt.cin, gt.xLen()},
			run: func(_ *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				return convMirrorRun(in, true, d, p)
			}})
	}
	return cases
}

// convMirrorRun computes the forward with bias and the three gradients (input, weight, bias).
func convMirrorRun(in []*Buffer, transposed bool, d ConvDims, p ConvParams) ([]*Buffer, error) {
	fwd, bi, bw, bb := ConvND, ConvNDBackwardInput, ConvNDBackwardWeight, ConvNDBackwardBias
	if transposed {
		fwd, bi, bw, bb = ConvTransposeND, ConvTransposeNDBackwardInput, ConvTransposeNDBackwardWeight, ConvTransposeNDBackwardBias
	}
	var outs []*Buffer
	keep := func(b *Buffer, err error) error {
		if err == nil {
			outs = append(outs, b)
		}
		return err
	}
	if err := keep(fwd(in[0], in[1], in[2], d, p)); err != nil {
		releaseAll(outs)
		return nil, err
	}
	if err := keep(bi(in[3], in[1], d, p)); err != nil {
		releaseAll(outs)
		return nil, err
	}
	if err := keep(bw(in[0], in[3], d, p)); err != nil {
		releaseAll(outs)
		return nil, err
	}
	if err := keep(bb(in[3], d, p)); err != nil {
		releaseAll(outs)
		return nil, err
	}
	return outs, nil
}
