package nn

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
)

// Pooling layers (no parameters): Func layers over Tape.MaxPool, Tape.AvgPool and
// Tape.SmoothMaxPool. Inputs are (N, C, spatial...) as in PyTorch, or one sample (C,
// spatial...). A stride of 0 means the kernel size (PyTorch's stride=None). An output with no
// positions (a padding above half the window, or a window larger than the padded input: the
// tape returns that empty result, as the seeds do) fails the session, as PyTorch raises there,
// whatever the batch.

// MaxPool returns an N-D max pooling layer of geometry p (Tape.MaxPool; the rank is
// len(p.Kernel)).
func MaxPool(p autograd.PoolParams) Layer {
	return poolLayer("MaxPool", p, (*autograd.Tape).MaxPool)
}

// AvgPool returns an N-D average pooling layer of geometry p (Tape.AvgPool): set
// p.CountIncludePad for PyTorch's default divisor.
func AvgPool(p autograd.PoolParams) Layer {
	return poolLayer("AvgPool", p, (*autograd.Tape).AvgPool)
}

// SmoothMaxPool returns an N-D smooth max pooling layer of geometry p and β = p.Beta
// (Tape.SmoothMaxPool).
func SmoothMaxPool(p autograd.PoolParams) Layer {
	return poolLayer("SmoothMaxPool", p, (*autograd.Tape).SmoothMaxPool)
}

// poolLayer is the Func layer of a pooling, failing the tape where the output has no positions
// (kind and the rank name it: "MaxPool2d").
func poolLayer(kind string, p autograd.PoolParams, pool func(*autograd.Tape, autograd.Var, autograd.PoolParams) autograd.Var) Layer {
	name := fmt.Sprintf("%s%dd", kind, len(p.Kernel))
	return Func(func(t *autograd.Tape, x autograd.Var) autograd.Var {
		y := pool(t, x, p)
		if in, out := t.Shape(x), t.Shape(y); emptied(out, len(p.Kernel)) {
			t.Fail(fmt.Errorf("nn: %s: input %v gives the empty output %v: %s", name, in, out, emptyPoolCause(in, out, p)))
		}
		return y
	})
}

// emptyPoolCause names why an axis of a pooling's output is empty: a padding above half the
// window, or a window larger than the padded input.
func emptyPoolCause(in, out []int, p autograd.PoolParams) string {
	r := len(p.Kernel)
	for a := range r {
		if out[len(out)-r+a] != 0 {
			continue
		}
		k, pad := p.Kernel[a], 0
		if a < len(p.Padding) {
			pad = p.Padding[a]
		}
		if in[len(in)-r+a] == 0 {
			return fmt.Sprintf("spatial axis %d of the input is empty", a)
		}
		if 2*pad > k {
			return fmt.Sprintf("the padding %d of spatial axis %d is more than half the kernel %d", pad, a, k)
		}
		return fmt.Sprintf("the kernel %d of spatial axis %d is larger than its padded input %d", k, a, in[len(in)-r+a]+2*pad)
	}
	return "an axis is empty"
}

// MaxPool1d, MaxPool2d and MaxPool3d return nn.MaxPool1d/2d/3d's layers: a cubic window of side
// kernel, one stride (0: kernel) and one padding on every spatial axis.
func MaxPool1d(kernel, stride, padding int) Layer {
	return MaxPool(cubicPool(1, kernel, stride, padding))
}

// MaxPool2d is nn.MaxPool2d(kernel, stride, padding); see MaxPool1d.
func MaxPool2d(kernel, stride, padding int) Layer {
	return MaxPool(cubicPool(2, kernel, stride, padding))
}

// MaxPool3d is nn.MaxPool3d(kernel, stride, padding); see MaxPool1d.
func MaxPool3d(kernel, stride, padding int) Layer {
	return MaxPool(cubicPool(3, kernel, stride, padding))
}

// AvgPool1d, AvgPool2d and AvgPool3d return nn.AvgPool1d/2d/3d's layers with PyTorch's defaults
// (count_include_pad): a cubic window of side kernel, one stride (0: kernel) and one padding on
// every spatial axis.
func AvgPool1d(kernel, stride, padding int) Layer {
	return AvgPool(cubicPool(1, kernel, stride, padding))
}

// AvgPool2d is nn.AvgPool2d(kernel, stride, padding); see AvgPool1d.
func AvgPool2d(kernel, stride, padding int) Layer {
	return AvgPool(cubicPool(2, kernel, stride, padding))
}

// AvgPool3d is nn.AvgPool3d(kernel, stride, padding); see AvgPool1d.
func AvgPool3d(kernel, stride, padding int) Layer {
	return AvgPool(cubicPool(3, kernel, stride, padding))
}

// cubicPool is the geometry of rank d with one window side, stride and padding.
func cubicPool(d, kernel, stride, padding int) autograd.PoolParams {
	if stride == 0 {
		stride = kernel
	}
	p := autograd.PoolParams{CountIncludePad: true}
	for range d {
		p.Kernel, p.Stride, p.Padding = append(p.Kernel, kernel), append(p.Stride, stride), append(p.Padding, padding)
	}
	return p
}
