package autograd

import (
	"fmt"

	"github.com/torchlean-go/torchlean/ops"
)

// ConvOptions are a convolution's options, with PyTorch's names and defaults. Each per-axis
// list may be nil (the default), hold one entry (every spatial axis) or one per spatial axis.
type ConvOptions struct {
	Stride        []int // > 0; default 1
	Padding       []int // symmetric zero padding; default 0
	Dilation      []int // > 0; default 1
	OutputPadding []int // transposed convolutions only: below the stride; default 0
	Groups        int   // divides both channel counts; 0 means 1 (depthwise: Groups = channels)
}

func (o ConvOptions) params() ops.ConvParams {
	return ops.ConvParams{Stride: o.Stride, Padding: o.Padding, Dilation: o.Dilation,
		OutputPadding: o.OutputPadding, Groups: o.Groups}
}

// Conv returns the N-D convolution (PyTorch's convNd; the seeds' Tape.conv) of x with the weight
// w and the bias b (the zero Var: none). w is (C_out, C_in/Groups, k...) with 1 to 8 spatial
// axes; x is a batch (N, C_in, in...) or one sample (C_in, in...), the seeds' layout; the result
// is (N, C_out, out...) or (C_out, out...), out from ops.ConvOutputSize (a kernel larger than
// the padded input gives an empty axis). The arithmetic is ops.ConvND's: each output one fma
// chain in a fixed order (input channel, then kernel offset), the bias added last, the same bits
// on every device. Gradients flow to x, w and b (ops.ConvNDBackwardInput, ...Weight, ...Bias),
// the weight and bias gradients summed over the batch in a fixed order.
func (t *Tape) Conv(x, w, b Var, o ConvOptions) Var { return t.conv("conv", x, w, b, o, false, 0) }

// Conv1d is Conv with one spatial axis: x (N, C_in, L) or (C_in, L), w (C_out, C_in/Groups, k).
func (t *Tape) Conv1d(x, w, b Var, o ConvOptions) Var { return t.conv("conv1d", x, w, b, o, false, 1) }

// Conv2d is Conv with two spatial axes (the seeds' conv2d for one sample (C_in, H, W)).
func (t *Tape) Conv2d(x, w, b Var, o ConvOptions) Var { return t.conv("conv2d", x, w, b, o, false, 2) }

// Conv3d is Conv with three spatial axes.
func (t *Tape) Conv3d(x, w, b Var, o ConvOptions) Var { return t.conv("conv3d", x, w, b, o, false, 3) }

// ConvTranspose returns the N-D transposed convolution (PyTorch's conv_transposeNd; the seeds'
// Tape.convTranspose) of x with w of PyTorch's layout (C_in, C_out/Groups, k...) and the bias b
// (C_out; the zero Var: none). x is (N, C_in, in...) or one sample (C_in, in...); the result
// (N, C_out, out...) or (C_out, out...), out = (in-1)*stride - 2*padding + dilation*(k-1) + 1 +
// output padding (ops.ConvTransposeOutputSize). It is the input gradient of the convolution
// with the same weight (ops.ConvTransposeND); its gradients are that convolution's forward and
// weight gradient.
func (t *Tape) ConvTranspose(x, w, b Var, o ConvOptions) Var {
	return t.conv("conv_transpose", x, w, b, o, true, 0)
}

// ConvTranspose2d is ConvTranspose with two spatial axes (the seeds' convTranspose2d for one
// sample).
func (t *Tape) ConvTranspose2d(x, w, b Var, o ConvOptions) Var {
	return t.conv("conv_transpose2d", x, w, b, o, true, 2)
}

// conv records a convolution (transposed or not); rank 0 accepts any spatial rank.
func (t *Tape) conv(op string, x, w, b Var, o ConvOptions, transposed bool, rank int) Var {
	hasBias := b != Var{}
	args := []Var{x, w}
	if hasBias {
		args = append(args, b)
	}
	vs, ok := t.args(op, args...)
	if !ok || !t.liveArgs(op, vs) {
		return Var{}
	}
	sx, sw := vs[0].shape, vs[1].shape
	r := len(sw) - 2
	if r < 1 || r > 8 || rank != 0 && r != rank {
		want := "1 to 8"
		if rank != 0 {
			want = fmt.Sprint(rank)
		}
		return t.failf(op, "weight %v has %d spatial axes (want %s)", sw, r, want)
	}
	batched := len(sx) == r+2
	if !batched && len(sx) != r+1 {
		return t.failf(op, "input %v for weight %v: want (N, C, %d spatial sizes) or (C, %d spatial sizes)", sx, sw, r, r)
	}
	batch, ch, spatial := 1, sx[0], sx[1:]
	if batched {
		batch, ch, spatial = sx[0], sx[1], sx[2:]
	}
	groups := max(o.Groups, 1)
	if o.Groups < 0 {
		return t.failf(op, "groups %d", o.Groups)
	}
	d := ops.ConvDims{Batch: batch, InChannels: ch, Input: spatial, Kernel: sw[2:]}
	if !transposed {
		if sw[1]*groups != ch {
			return t.failf(op, "weight %v in %d group(s) takes %d input channels, input %v has %d", sw, groups, sw[1]*groups, sx, ch)
		}
		d.OutChannels = sw[0]
	} else {
		if sw[0] != ch {
			return t.failf(op, "weight %v takes %d input channels, input %v has %d", sw, sw[0], sx, ch)
		}
		d.OutChannels = sw[1] * groups
	}
	if hasBias {
		if sb := vs[2].shape; len(sb) != 1 || sb[0] != d.OutChannels {
			return t.failf(op, "bias %v: want (%d)", sb, d.OutChannels)
		}
	}
	p := o.params()
	var out []int
	var err error
	if transposed {
		out, err = ops.ConvTransposeOutputSize(d, p)
	} else {
		out, err = ops.ConvOutputSize(d, p)
	}
	if err != nil {
		return t.fail(opFailed(op, err))
	}
	shape := append([]int{d.OutChannels}, out...)
	if batched {
		shape = append([]int{batch}, shape...)
	}
	var bb *ops.Buffer
	if hasBias {
		bb = vs[2].buf
	}
	vx, vw := vs[0], vs[1]
	fwd, bi, bw, bbias := ops.ConvND, ops.ConvNDBackwardInput, ops.ConvNDBackwardWeight, ops.ConvNDBackwardBias
	if transposed {
		fwd, bi, bw, bbias = ops.ConvTransposeND, ops.ConvTransposeNDBackwardInput, ops.ConvTransposeNDBackwardWeight, ops.ConvTransposeNDBackwardBias
	}
	y, err := fwd(vx.buf, vw.buf, bb, d, p)
	return t.record(op, shape, y, err, nil, args, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, []func() (*ops.Buffer, error){
			func() (*ops.Buffer, error) { return bi(g, vw.buf, d, p) },
			func() (*ops.Buffer, error) { return bw(vx.buf, g, d, p) },
			func() (*ops.Buffer, error) { return bbias(g, d, p) },
		}[:len(args)]...)
	})
}
