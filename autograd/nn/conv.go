package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/torchlean-go/torchlean/autograd"
)

// Conv is PyTorch's nn.Conv1d / Conv2d / Conv3d (and, with Transposed, nn.ConvTranspose2d and
// its kin) on autograd's Tape.Conv / Tape.ConvTranspose: input (N, In, spatial...) or one
// sample (In, spatial...). Weight is (Out, In/Groups, k...) for a convolution and
// (In, Out/Groups, k...) for a transposed one (PyTorch's layouts); Bias (Out) or nil. Keys:
// weight, bias.
type Conv struct {
	Base
	s          *autograd.Session
	kind       string // "Conv2d", ...: error messages
	In, Out    int
	Kernel     []int
	Options    autograd.ConvOptions
	Transposed bool
	Weight     *autograd.Param
	Bias       *autograd.Param // nil without a bias
}

// newConv builds a Conv with PyTorch's initialization: the weight from kaiming_uniform_(a =
// sqrt(5)) = U(±1/sqrt(fan_in)), fan_in = weight.shape[1]*prod(k), and the bias from
// U(±1/sqrt(fan_in)), weight first.
//
// As PyTorch's constructors do, it fails the session when a channel count is negative, a kernel
// size is not positive or the groups do not divide both channel counts; unlike PyTorch's, also
// when a channel count is zero (the convolutions need a channel on each side).
func newConv(kind string, s *autograd.Session, in, out int, kernel []int, o autograd.ConvOptions, bias, transposed bool) *Conv {
	id := lastID.Add(1)
	c := &Conv{s: s, kind: kind, In: in, Out: out, Kernel: append([]int(nil), kernel...), Options: o, Transposed: transposed}
	g := max(o.Groups, 1)
	switch {
	case in < 1 || out < 1:
		s.Fail(fmt.Errorf("nn: %s: in_channels %d and out_channels %d must be positive (zero channels are not supported)", kind, in, out))
	case in%g != 0 || out%g != 0:
		s.Fail(fmt.Errorf("nn: %s: in_channels %d and out_channels %d must both be divisible by groups %d", kind, in, out, g))
	}
	for _, k := range kernel {
		if k < 1 {
			s.Fail(fmt.Errorf("nn: %s: kernel sizes %v must be positive", kind, kernel))
			break
		}
	}
	shape := []int{out, in / g}
	if transposed {
		shape = []int{in, out / g}
	}
	shape = append(shape, kernel...)
	c.Weight = s.Param(sessionName(kind, "weight", id), shape, nil)
	c.RegisterParameter("weight", c.Weight)
	KaimingUniform(math.Sqrt(5), FanIn, "leaky_relu").Apply(s, c.Weight)
	if bias {
		c.Bias = s.Param(sessionName(kind, "bias", id), []int{out}, nil)
		c.RegisterParameter("bias", c.Bias)
		if fanIn, _, err := Fans(shape); err == nil && fanIn > 0 {
			bound := 1 / math.Sqrt(float64(fanIn))
			Uniform(-bound, bound).Apply(s, c.Bias)
		}
	}
	return c
}

// NewConv1d returns nn.Conv1d(in, out, k, ...) of s (bias false: bias=False).
func NewConv1d(s *autograd.Session, in, out, k int, o autograd.ConvOptions, bias bool) *Conv {
	return newConv("Conv1d", s, in, out, []int{k}, o, bias, false)
}

// NewConv2d returns nn.Conv2d(in, out, (kh, kw), ...) of s.
func NewConv2d(s *autograd.Session, in, out, kh, kw int, o autograd.ConvOptions, bias bool) *Conv {
	return newConv("Conv2d", s, in, out, []int{kh, kw}, o, bias, false)
}

// NewConv3d returns nn.Conv3d(in, out, (kd, kh, kw), ...) of s.
func NewConv3d(s *autograd.Session, in, out, kd, kh, kw int, o autograd.ConvOptions, bias bool) *Conv {
	return newConv("Conv3d", s, in, out, []int{kd, kh, kw}, o, bias, false)
}

// NewConvTranspose2d returns nn.ConvTranspose2d(in, out, (kh, kw), ...) of s.
func NewConvTranspose2d(s *autograd.Session, in, out, kh, kw int, o autograd.ConvOptions, bias bool) *Conv {
	return newConv("ConvTranspose2d", s, in, out, []int{kh, kw}, o, bias, true)
}

// Forward returns the convolution of x (autograd's Tape.Conv or Tape.ConvTranspose). An output
// with no positions (for a convolution, the dilated kernel larger than the padded input; for a
// transposed one, (in-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1 not
// positive: the tape returns that empty result, as the seeds do) fails the session, as PyTorch
// raises there, whatever the batch.
func (c *Conv) Forward(x autograd.Var) autograd.Var {
	var b autograd.Var
	if c.Bias != nil {
		b = c.s.Use(c.Bias)
	}
	var y autograd.Var
	if c.Transposed {
		y = c.s.ConvTranspose(x, c.s.Use(c.Weight), b, c.Options)
	} else {
		y = c.s.Conv(x, c.s.Use(c.Weight), b, c.Options)
	}
	if in, out := c.s.Shape(x), c.s.Shape(y); emptied(out, len(c.Kernel)) {
		o := c.Options
		if c.Transposed {
			c.s.Fail(fmt.Errorf("nn: %s: input %v gives the empty output %v: (in-1)*stride %s - 2*padding %s + dilation %s*(kernel %v - 1) + output_padding %s + 1 must be positive",
				c.kind, in, out, orDefault(o.Stride, 1), orDefault(o.Padding, 0), orDefault(o.Dilation, 1), c.Kernel, orDefault(o.OutputPadding, 0)))
		} else {
			c.s.Fail(fmt.Errorf("nn: %s: input %v gives the empty output %v: the kernel %v (dilation %s) does not fit the input padded by %s",
				c.kind, in, out, c.Kernel, orDefault(o.Dilation, 1), orDefault(o.Padding, 0)))
		}
	}
	return y
}

// emptied reports whether a layer's output out has an empty spatial axis (its last rank axes).
func emptied(out []int, rank int) bool {
	if len(out) < rank {
		return false
	}
	return slices.Contains(out[len(out)-rank:], 0)
}

// orDefault prints a per-axis option, def where it is unset.
func orDefault(v []int, def int) string {
	if len(v) == 0 {
		return fmt.Sprint(def)
	}
	return fmt.Sprint(v)
}
