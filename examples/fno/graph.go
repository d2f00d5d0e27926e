package main

import (
	"errors"
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// graphDefault is -graph's default. Off until a GPU measurement shows captured steps faster
// than eager ones for this example (issue 27); flipping it is this one line. On the CPU -graph
// changes nothing: the same steps run eagerly, with the same bits (TestGraphSteps).
const graphDefault = false

// graphSteps runs the training steps of -graph: each step is captured once into a CUDA graph
// (autograd.Session.Capture) and replayed with one launch; on the CPU, with TORCHLEAN_GRAPHS=0
// and wherever the device cannot capture, the same function runs eagerly.
//
// A graph reads fixed addresses, so each batch (the (n, grid, 3) features: u0, x and the target)
// is copied on the device into a static input before the replay; the step computes step's loss
// from it and copies the loss into a one-element output read after the replay (a read inside
// the captured function would be a host synchronization, refused). The cosine schedule's
// learning rate reaches the replays through Adam's device state (Step.Run uploads it). Every
// batch size gets its own static input and graph (the last batch of an epoch may be shorter);
// the run's first step is an eager one, which creates Adam's moments. When the capture refuses
// a call of the step (a library call that cannot be captured: the FFTs, until cuFFT captures or
// is replaced), the steps run eagerly and the example says why.
type graphSteps struct {
	sess  *autograd.Session
	model *fno
	opt   *autograd.Adam
	sizes map[int]*graphStep
	warm  bool // a step ran (the optimizer's state exists)
	// refused is the capture's refusal of a call of the step (wrapping ops.ErrCapturing; it
	// names the call), after which the steps run eagerly.
	refused error
}

// graphStep is the captured step of one batch size.
type graphStep struct {
	xy   *autograd.StaticInput
	out  *ops.Buffer  // the step's loss
	f    func() error // the step on xy
	step *autograd.Step
}

func newGraphSteps(sess *autograd.Session, model *fno, opt *autograd.Adam) *graphSteps {
	return &graphSteps{sess: sess, model: model, opt: opt, sizes: map[int]*graphStep{}}
}

// run runs one optimizer step on the batch b and returns its loss (what step returns).
func (g *graphSteps) run(b *nn.Batch) (float64, error) {
	c := g.sizes[b.Size()]
	if c == nil {
		var err error
		if c, err = g.newStep(b.XShape); err != nil {
			return 0, err
		}
		g.sizes[b.Size()] = c
	}
	if err := c.xy.CopyFrom(b.X); err != nil {
		return 0, err
	}
	var err error
	switch {
	case g.refused != nil:
		err = c.f()
	case c.step != nil:
		err = c.step.Run()
	case !g.warm: // the first step: eager, then the capture (which runs nothing)
		if err = c.f(); err == nil {
			l, err := c.out.Float32s()
			if err != nil {
				return 0, err
			}
			g.warm = true
			c.step, err = g.capture(c.f)
			return float64(l[0]), err
		}
	default:
		if c.step, err = g.capture(c.f); err == nil {
			if c.step != nil {
				err = c.step.Run()
			} else {
				err = c.f()
			}
		}
	}
	if err != nil {
		return 0, err
	}
	g.warm = true
	l, err := c.out.Float32s()
	if err != nil {
		return 0, err
	}
	return float64(l[0]), nil
}

// newStep makes the static input, the output and the step function of batches of shape xShape.
func (g *graphSteps) newStep(xShape []int) (*graphStep, error) {
	s := g.sess
	c := &graphStep{}
	var err error
	if c.xy, err = s.NewStaticInput(xShape...); err != nil {
		return nil, err
	}
	if c.out, err = ops.Zeros(s.Device(), 1); err != nil {
		c.xy.Release()
		return nil, fmt.Errorf("fno: graph: %w", err)
	}
	c.f = func() error {
		s.Reset()
		xy := c.xy.Var()
		x, y := s.Narrow(xy, 2, 0, 2), s.Narrow(xy, 2, 2, 1)
		loss := s.Mean(relativeL2(s.Tape, g.model.Forward(x), y))
		s.Backward(loss)
		g.opt.Step()
		g.opt.ZeroGrad()
		if err := s.Err(); err != nil {
			return err
		}
		return ops.CopyInto(c.out, s.Value(loss))
	}
	return c, nil
}

// close frees the graphs, the static inputs and the outputs.
func (g *graphSteps) close() error {
	var first error
	for _, c := range g.sizes {
		if c.step != nil {
			if err := c.step.Close(); err != nil && first == nil {
				first = err
			}
		}
		c.xy.Release()
		c.out.Release()
	}
	g.sizes = map[int]*graphStep{}
	return first
}

// capture captures f; a refusal of one of its calls (ops.ErrCapturing) is no error: it is kept
// in refused, the session's error cleared, and capture returns a nil Step (eager steps from now
// on).
func (g *graphSteps) capture(f func() error) (*autograd.Step, error) {
	step, err := g.sess.Capture(f)
	if err != nil && errors.Is(err, ops.ErrCapturing) {
		g.refused = err
		g.sess.ClearErr()
		return nil, nil
	}
	return step, err
}

// captured reports whether the steps replay graphs (false: they run eagerly), and why not.
func (g *graphSteps) captured() (bool, error) {
	if g.refused != nil {
		return false, g.refused
	}
	for _, c := range g.sizes {
		if c.step != nil {
			return c.step.Captured(), c.step.Reason()
		}
	}
	return false, g.sess.Device().CanCapture()
}
