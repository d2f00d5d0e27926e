package nn

import (
	"errors"
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// An Init fills a parameter with initial values, as the functions of torch.nn.init do: Apply
// draws them on the host from the session's counter-based generator (one key, the session's
// next, per call; none for Zeros, Ones and Constant) in float64, rounds them to float32 and
// uploads them. The values depend only on the seed, the number of earlier draws and the shape,
// never on the device.
type Init struct {
	name string
	// values returns the n values of a tensor of the given shape, drawing with key.
	values func(s *autograd.Session, shape []int, n int) ([]float32, error)
}

// String returns the initializer's PyTorch name, e.g. "kaiming_uniform_".
func (in Init) String() string { return in.name }

// Apply sets p (a parameter of s) to fresh values of the initializer. A parameter without
// elements is left as it is (PyTorch's initializers are no-ops there too). An error (a fan of
// zero, a bad argument, a device error) is returned and recorded in the session.
func (in Init) Apply(s *autograd.Session, p *autograd.Param) error {
	if err := s.Err(); err != nil {
		return err
	}
	if in.values == nil {
		return s.Fail(fmt.Errorf("nn: init: the zero Init"))
	}
	shape := p.Shape()
	if numel(shape) == 0 {
		return nil
	}
	v, err := in.values(s, shape, numel(shape))
	if err == nil {
		err = p.Set(v)
	}
	if err != nil {
		err = fmt.Errorf("nn: init %s of %s: %w", in.name, p.Name(), err)
		return s.Fail(err)
	}
	return nil
}

// FanMode picks the fan that Kaiming initialization preserves: FanIn (the default, the
// forward pass's variance) or FanOut (the backward pass's).
type FanMode int

const (
	FanIn FanMode = iota
	FanOut
)

// Fans returns a weight's fan-in and fan-out as PyTorch computes them: for shape (out, in, k...)
// fan_in = in*prod(k) and fan_out = out*prod(k); a tensor of fewer than two dimensions has none
// (an error).
func Fans(shape []int) (fanIn, fanOut int, err error) {
	if len(shape) < 2 {
		return 0, 0, fmt.Errorf("nn: fan in and fan out need at least 2 dimensions, got shape %v", shape)
	}
	receptive := numel(shape[2:])
	return shape[1] * receptive, shape[0] * receptive, nil
}

// Gain returns torch.nn.init.calculate_gain(nonlinearity, param): 1 for "linear", "conv*",
// "sigmoid" and "identity", 5/3 for "tanh", sqrt(2) for "relu", sqrt(2/(1+param²)) for
// "leaky_relu" (param its negative slope, PyTorch's default 0.01 when param is NaN), 3/4 for
// "selu". Another name is an error.
func Gain(nonlinearity string, param float64) (float64, error) {
	switch nonlinearity {
	case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid", "identity":
		return 1, nil
	case "tanh":
		return 5.0 / 3, nil
	case "relu":
		return math.Sqrt2, nil
	case "leaky_relu":
		if math.IsNaN(param) {
			param = 0.01
		}
		return math.Sqrt(2 / (1 + param*param)), nil
	case "selu":
		return 0.75, nil
	}
	return 0, fmt.Errorf("nn: unsupported nonlinearity %q", nonlinearity)
}

// Constant fills with v (nn.init.constant_).
func Constant(v float64) Init {
	return Init{"constant_", func(_ *autograd.Session, _ []int, n int) ([]float32, error) {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(v)
		}
		return out, nil
	}}
}

// Zeros fills with 0 (nn.init.zeros_).
func Zeros() Init { in := Constant(0); in.name = "zeros_"; return in }

// Ones fills with 1 (nn.init.ones_).
func Ones() Init { in := Constant(1); in.name = "ones_"; return in }

// Uniform fills with draws of U[lo, hi) (nn.init.uniform_): lo + (hi-lo)*u in float64 for u
// the draws of ops.RandUniform, as Session.ParamUniform.
func Uniform(lo, hi float64) Init {
	return Init{"uniform_", func(s *autograd.Session, _ []int, n int) ([]float32, error) {
		return uniform(s, n, lo, hi)
	}}
}

// Normal fills with draws of N(mean, std²) (nn.init.normal_): the draws of ops.RandNormal.
func Normal(mean, std float64) Init {
	return Init{"normal_", func(s *autograd.Session, _ []int, n int) ([]float32, error) {
		return normal(s, n, mean, std)
	}}
}

// TruncNormal fills with draws of N(mean, std²) truncated to [a, b] (nn.init.trunc_normal_,
// defaults mean 0, std 1, a -2, b 2), by PyTorch's method: u uniform on [2Φ(α)-1, 2Φ(β)-1] (α, β
// the standardized bounds), then mean + std·√2·erfinv(u), clamped to [a, b]; in float64.
func TruncNormal(mean, std, a, b float64) Init {
	return Init{"trunc_normal_", func(s *autograd.Session, _ []int, n int) ([]float32, error) {
		if !(std >= 0) || !(a < b) || math.IsInf(mean, 0) || math.IsNaN(mean) {
			return nil, fmt.Errorf("want std >= 0, a < b and a finite mean, got mean %v std %v [%v, %v]", mean, std, a, b)
		}
		cdf := func(x float64) float64 { return (1 + math.Erf(x/math.Sqrt2)) / 2 }
		lo, hi := cdf((a-mean)/std), cdf((b-mean)/std)
		u, err := draws(s, n)
		if err != nil {
			return nil, err
		}
		out := make([]float32, n)
		for i, v := range u {
			x := (2*lo - 1) + (2*hi-2*lo)*float64(v)
			y := mean + std*math.Sqrt2*math.Erfinv(x)
			out[i] = float32(min(max(y, a), b))
		}
		return out, nil
	}}
}

// KaimingUniform fills with U(-bound, bound), bound = gain·sqrt(3/fan) (nn.init.kaiming_uniform_;
// gain = Gain(nonlinearity, a), fan per mode). PyTorch's default for Linear and convolution
// weights is KaimingUniform(math.Sqrt(5), FanIn, "leaky_relu"), which is U(±1/sqrt(fan_in)).
func KaimingUniform(a float64, mode FanMode, nonlinearity string) Init {
	return Init{"kaiming_uniform_", func(s *autograd.Session, shape []int, n int) ([]float32, error) {
		std, err := kaimingStd(shape, a, mode, nonlinearity)
		if err != nil {
			return nil, err
		}
		bound := math.Sqrt(3) * std
		return uniform(s, n, -bound, bound)
	}}
}

// KaimingNormal fills with N(0, std²), std = gain/sqrt(fan) (nn.init.kaiming_normal_; He
// initialization for ReLU with a = 0, "relu").
func KaimingNormal(a float64, mode FanMode, nonlinearity string) Init {
	return Init{"kaiming_normal_", func(s *autograd.Session, shape []int, n int) ([]float32, error) {
		std, err := kaimingStd(shape, a, mode, nonlinearity)
		if err != nil {
			return nil, err
		}
		return normal(s, n, 0, std)
	}}
}

// XavierUniform fills with U(-bound, bound), bound = gain·sqrt(6/(fan_in + fan_out))
// (nn.init.xavier_uniform_, Glorot).
func XavierUniform(gain float64) Init {
	return Init{"xavier_uniform_", func(s *autograd.Session, shape []int, n int) ([]float32, error) {
		std, err := xavierStd(shape, gain)
		if err != nil {
			return nil, err
		}
		bound := math.Sqrt(3) * std
		return uniform(s, n, -bound, bound)
	}}
}

// XavierNormal fills with N(0, std²), std = gain·sqrt(2/(fan_in + fan_out))
// (nn.init.xavier_normal_).
func XavierNormal(gain float64) Init {
	return Init{"xavier_normal_", func(s *autograd.Session, shape []int, n int) ([]float32, error) {
		std, err := xavierStd(shape, gain)
		if err != nil {
			return nil, err
		}
		return normal(s, n, 0, std)
	}}
}

func kaimingStd(shape []int, a float64, mode FanMode, nonlinearity string) (float64, error) {
	fanIn, fanOut, err := Fans(shape)
	if err != nil {
		return 0, err
	}
	fan := fanIn
	if mode == FanOut {
		fan = fanOut
	}
	if fan == 0 {
		return 0, errors.New("a tensor with a zero fan cannot be initialized")
	}
	gain, err := Gain(nonlinearity, a)
	if err != nil {
		return 0, err
	}
	return gain / math.Sqrt(float64(fan)), nil
}

func xavierStd(shape []int, gain float64) (float64, error) {
	fanIn, fanOut, err := Fans(shape)
	if err != nil {
		return 0, err
	}
	if fanIn+fanOut == 0 {
		return 0, errors.New("a tensor with zero fans cannot be initialized")
	}
	return gain * math.Sqrt(2/float64(fanIn+fanOut)), nil
}

// draws returns n draws of ops.RandUniform on the host with the session's next key.
func draws(s *autograd.Session, n int) ([]float32, error) {
	b, err := ops.RandUniform(ops.CPU(), n, s.NextKey())
	if err != nil {
		return nil, err
	}
	defer b.Release()
	return b.Float32s()
}

func uniform(s *autograd.Session, n int, lo, hi float64) ([]float32, error) {
	if d := hi - lo; !(d >= 0 && d <= math.MaxFloat32) || math.Abs(lo) > math.MaxFloat32 {
		return nil, fmt.Errorf("uniform bounds [%v, %v) are not an interval of finite numbers", lo, hi)
	}
	u, err := draws(s, n)
	for i, v := range u {
		u[i] = float32(lo + (hi-lo)*float64(v))
	}
	return u, err
}

func normal(s *autograd.Session, n int, mean, std float64) ([]float32, error) {
	b, err := ops.RandNormal(ops.CPU(), n, mean, std, s.NextKey())
	if err != nil {
		return nil, err
	}
	defer b.Release()
	return b.Float32s()
}
