package nn

import (
	"math"

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
func newConv(kind string, s *autograd.Session, in, out int, kernel []int, o autograd.ConvOptions, bias, transposed bool) *Conv {
	id := lastID.Add(1)
	c := &Conv{s: s, In: in, Out: out, Kernel: append([]int(nil), kernel...), Options: o, Transposed: transposed}
	g := max(o.Groups, 1)
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

// Forward returns the convolution of x (autograd's Tape.Conv or Tape.ConvTranspose).
func (c *Conv) Forward(x autograd.Var) autograd.Var {
	var b autograd.Var
	if c.Bias != nil {
		b = c.s.Use(c.Bias)
	}
	if c.Transposed {
		return c.s.ConvTranspose(x, c.s.Use(c.Weight), b, c.Options)
	}
	return c.s.Conv(x, c.s.Use(c.Weight), b, c.Options)
}
