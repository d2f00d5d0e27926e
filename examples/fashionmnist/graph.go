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
// changes nothing but the loss's formulation (one-hot targets, the same bits: TestGraphSteps).
const graphDefault = false

// graphSteps runs the training steps of -graph: each step is captured once into a CUDA graph
// (autograd.Session.Capture) and replayed with one launch; on the CPU, with TORCHLEAN_GRAPHS=0
// and wherever the device cannot capture, the same function runs eagerly.
//
// A graph reads fixed addresses, so a step's batch is copied into static inputs before the
// replay: the images (a copy on the device from the loader's buffer) and the labels as one-hot
// rows (uploaded, ordered with the device's work), since labels given as []int are uploaded
// inside the step, which a capture refuses. The loss is oneHotCrossEntropy, whose bits are
// CrossEntropy's. The step writes its loss into a one-element output buffer that is read after
// the replay (a read inside the captured function would be a host synchronization, refused).
// The learning rate that the schedule sets between steps reaches the replays through the
// optimizer's device state (Step.Run uploads it). Every batch size gets its own static inputs
// and graph (the last batch of an epoch is usually shorter); the first step of the run is an
// eager one, which creates the optimizer's state. When the capture refuses a call of the step,
// the steps run eagerly and the example says why.
type graphSteps struct {
	sess  *autograd.Session
	model nn.Layer
	opt   *autograd.SGD
	sizes map[int]*graphStep
	warm  bool // a step ran (the optimizer's state exists)
	// refused is the capture's refusal of a call of the step (wrapping ops.ErrCapturing; it
	// names the call), after which the steps run eagerly.
	refused error
}

// graphStep is the captured step of one batch size.
type graphStep struct {
	x, y *autograd.StaticInput // images (n, pixels) and one-hot labels (n, classes)
	out  *ops.Buffer           // the step's loss
	f    func() error          // the step on x and y
	step *autograd.Step
}

func newGraphSteps(sess *autograd.Session, model nn.Layer, opt *autograd.SGD) *graphSteps {
	return &graphSteps{sess: sess, model: model, opt: opt, sizes: map[int]*graphStep{}}
}

// run runs one optimizer step on the batch b (features (n, pixels), labels in [0, classes))
// and returns its loss.
func (g *graphSteps) run(b *nn.Batch, classes int) (float64, error) {
	n := b.Size()
	c := g.sizes[n]
	if c == nil {
		var err error
		if c, err = g.newStep(b.XShape, classes); err != nil {
			return 0, err
		}
		g.sizes[n] = c
	}
	if err := c.x.CopyFrom(b.X); err != nil {
		return 0, err
	}
	if err := c.y.Set(oneHot(b.Labels, classes)); err != nil {
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
			var l []float32
			if l, err = c.out.Float32s(); err != nil {
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

// newStep makes the static inputs, the output and the step function of batches of shape xShape.
func (g *graphSteps) newStep(xShape []int, classes int) (*graphStep, error) {
	s := g.sess
	c := &graphStep{}
	var err error
	if c.x, err = s.NewStaticInput(xShape...); err != nil {
		return nil, err
	}
	if c.y, err = s.NewStaticInput(xShape[0], classes); err != nil {
		c.x.Release()
		return nil, err
	}
	if c.out, err = ops.Zeros(s.Device(), 1); err != nil {
		c.x.Release()
		c.y.Release()
		return nil, fmt.Errorf("fashionmnist: graph: %w", err)
	}
	c.f = func() error {
		s.Reset()
		loss := oneHotCrossEntropy(s, g.model.Forward(c.x.Var()), c.y.Var())
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
		c.x.Release()
		c.y.Release()
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
