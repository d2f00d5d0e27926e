package main

import (
	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
)

// graphDefault is -graph's default. Off until a GPU measurement shows captured steps faster
// than eager ones for this example (issue 27); flipping it is this one line. On the CPU -graph
// changes nothing: the same steps run eagerly, with the same bits (TestGraphSteps).
const graphDefault = false

// newGraphSteps returns the training steps of -graph (graphstep.Steps: each batch size's step
// captured once into a CUDA graph and replayed; on the CPU, with TORCHLEAN_GRAPHS=0 and wherever
// the device cannot capture, the same steps run eagerly).
//
// Its static input is the batch's (n, grid, 3) features (u0, x and the target), copied on the
// device from the loader's buffer; the step computes step's loss from it. The cosine schedule's
// learning rate reaches the replays through Adam's device state. When the capture refuses a
// call of the step (a library call that cannot be captured: the FFTs, until cuFFT captures or
// is replaced), the steps run eagerly and the example says why.
func newGraphSteps(sess *autograd.Session, model *fno, opt *autograd.Adam) *graphstep.Steps {
	return graphstep.New(sess, "fno", func(xShape []int) (graphstep.Size, error) {
		in, err := sess.NewStaticInput(xShape...)
		if err != nil {
			return graphstep.Size{}, err
		}
		return graphstep.Size{
			Load: func(b *nn.Batch) error { return in.CopyFrom(b.X) },
			Body: func() autograd.Var {
				sess.Reset()
				xy := in.Var()
				x, y := sess.Narrow(xy, 2, 0, 2), sess.Narrow(xy, 2, 2, 1)
				loss := sess.Mean(relativeL2(sess.Tape, model.Forward(x), y))
				sess.Backward(loss)
				opt.Step()
				opt.ZeroGrad()
				return loss
			},
			Release: func() { in.Release() },
		}, nil
	})
}
