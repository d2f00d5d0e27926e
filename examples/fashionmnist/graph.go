package main

import (
	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
)

// graphDefault is -graph's default. Off until a GPU measurement shows captured steps faster
// than eager ones for this example (issue 27); flipping it is this one line. On the CPU -graph
// changes nothing but the loss's formulation (one-hot targets, the same bits: TestGraphSteps).
const graphDefault = false

// newGraphSteps returns the training steps of -graph (graphstep.Steps: each batch size's step
// captured once into a CUDA graph and replayed; on the CPU, with TORCHLEAN_GRAPHS=0 and wherever
// the device cannot capture or the capture refuses a call, the same steps run eagerly).
//
// Its static inputs are the images (copied on the device from the loader's buffer) and the
// labels as one-hot rows of classes entries (uploaded, ordered with the device's work), since
// labels given as []int are uploaded inside the step, which a capture refuses. The loss is
// oneHotCrossEntropy, whose bits are CrossEntropy's.
func newGraphSteps(sess *autograd.Session, model nn.Layer, opt *autograd.SGD, classes int) *graphstep.Steps {
	return graphstep.New(sess, "fashionmnist", func(xShape []int) (graphstep.Size, error) {
		x, err := sess.NewStaticInput(xShape...) // the images (n, pixels)
		if err != nil {
			return graphstep.Size{}, err
		}
		y, err := sess.NewStaticInput(xShape[0], classes) // the one-hot labels (n, classes)
		if err != nil {
			x.Release()
			return graphstep.Size{}, err
		}
		return graphstep.Size{
			Load: func(b *nn.Batch) error {
				if err := x.CopyFrom(b.X); err != nil {
					return err
				}
				return y.Set(oneHot(b.Labels, classes))
			},
			Body: func() autograd.Var {
				sess.Reset()
				loss := oneHotCrossEntropy(sess, model.Forward(x.Var()), y.Var())
				sess.Backward(loss)
				opt.Step()
				opt.ZeroGrad()
				return loss
			},
			Release: func() {
				x.Release()
				y.Release()
			},
		}, nil
	})
}

// oneHot returns the (len(labels), classes) rows with a 1 at each label.
func oneHot(labels []int, classes int) []float32 {
	out := make([]float32, len(labels)*classes)
	for i, l := range labels {
		if l >= 0 && l < classes {
			out[i*classes+l] = 1
		}
	}
	return out
}

// oneHotCrossEntropy is CrossEntropy with the labels given as one-hot rows target (the same
// shape as logits, (n, classes)): -mean over rows of sum(target * log_softmax(logits)). With
// exact one-hot rows each row's sum is its label's log-probability exactly (the other terms are
// zeros), so the loss has CrossEntropy's bits, and so has the gradient (the label's entry gets
// -1/n times the cotangent, the others zero) up to the sign of zeros where a probability
// underflows to 0.
func oneHotCrossEntropy(s *autograd.Session, logits, target autograd.Var) autograd.Var {
	return s.Scale(s.Mean(s.ReduceSum(s.Mul(s.LogSoftmax(logits), target), -1)), -1)
}
