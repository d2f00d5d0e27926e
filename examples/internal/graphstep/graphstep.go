// Package graphstep holds the -graph machinery of the example programs: a training step
// offered to autograd.Session.Capture, replayed as one CUDA graph launch when the capture takes
// it and run eagerly, with the reason, when the capture refuses one of its calls.
//
// Offer is the offer itself. Offered runs a step function whose batch the caller sets before each
// Run (reverse, ssm, gpt: with -graph, static inputs refilled between steps, the tokens and
// labels as ops.Indices refilled with Update): the step is offered once, before its second Run;
// made by NewOfferedLoss, it also keeps the step's loss readable after a replay (Loss). Steps runs steps that read their batch from
// static inputs (fashionmnist, fno): one captured step per batch size, the batch copied in
// before each replay, the loss copied out after it.
//
// On the CPU, with TORCHLEAN_GRAPHS=0 and wherever the device cannot capture, Capture returns a
// Step that runs the function eagerly, so the same code runs everywhere with the same bits.
package graphstep

import (
	"errors"
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// RefusedPrefix heads the line that Offered logs when the capture refuses a call of the step;
// the refusal, which names the call, follows it.
const RefusedPrefix = "graph: the step cannot be captured, running eagerly: "

// CapturedLine is the line that Offered logs when the capture takes the step.
const CapturedLine = "graph: the training step was captured; the steps replay one CUDA graph each"

// Offer offers f, one whole training step, to s.Capture. It returns the Step (a graph, or f
// itself on a device that cannot capture); or, when the capture refused a call of f (an error
// wrapping ops.ErrCapturing, which names the call), a nil Step and the refusal, with the
// session's error cleared, so that the caller goes on with eager steps. Any other error of the
// capture is returned as err (and stays recorded in the session when it came from there).
func Offer(s *autograd.Session, f func() error) (step *autograd.Step, refused, err error) {
	step, err = s.Capture(f)
	if err != nil && errors.Is(err, ops.ErrCapturing) {
		s.ClearErr()
		return nil, err, nil
	}
	return step, nil, err
}

// Offered is a training step whose function reads its batch from variables of the caller, set
// before each Run. With graph on, the step is offered to the capture (Offer) at its second Run
// (the first is eager: it creates the optimizers' state): from then on Run replays the graph,
// or calls the function eagerly when the device cannot capture or the capture refused a call
// of it, a refusal logged once (and a capture logged once: CapturedLine). The caller refills the
// step's static inputs before each Run, outside the function.
type Offered struct {
	s     *autograd.Session
	f     func() error
	graph bool
	log   func(string)
	runs  int
	step  *autograd.Step // nil: f itself

	body func() (autograd.Var, error) // NewOfferedLoss's step
	loss autograd.Var                 // the loss body recorded last
	out  *ops.Buffer                  // with graph: the loss, copied inside the step
}

// NewOffered returns the step f of session s, offered to the capture when graph is on; the
// refusal of a call of f is logged with log (a line starting with RefusedPrefix; nil: not
// logged).
func NewOffered(s *autograd.Session, f func() error, graph bool, log func(string)) *Offered {
	return &Offered{s: s, f: f, graph: graph, log: log}
}

// NewOfferedLoss is NewOffered for a step that returns its loss, which Loss reads after each
// Run. With graph on the step copies the loss into a one-element buffer of its own, inside the
// step: a replay writes it there, while the Var recorded at the capture goes stale at the
// session's next Reset (an evaluation between steps, say). Without graph Loss reads the Var
// the step recorded (Session.Item): the same bits.
func NewOfferedLoss(s *autograd.Session, step func() (autograd.Var, error), graph bool, log func(string)) *Offered {
	o := &Offered{s: s, graph: graph, log: log, body: step}
	o.f = func() error {
		v, err := o.body()
		o.loss = v
		if err != nil {
			return err
		}
		if o.out == nil {
			return nil
		}
		if err := s.Err(); err != nil {
			return err
		}
		return ops.CopyInto(o.out, s.Value(v))
	}
	return o
}

// Run runs one training step: f, or the Step made at the offer. An error of the capture other
// than a refusal is returned.
func (o *Offered) Run() error {
	if o.graph && o.body != nil && o.out == nil {
		out, err := ops.Zeros(o.s.Device(), 1)
		if err != nil {
			return fmt.Errorf("graph: the loss's buffer: %w", err)
		}
		o.out = out
	}
	if o.graph && o.runs == 1 {
		step, refused, err := Offer(o.s, o.f)
		if err != nil {
			return err
		}
		switch {
		case o.log == nil:
		case refused != nil:
			o.log(RefusedPrefix + refused.Error())
		case step.Captured():
			o.log(CapturedLine)
		}
		o.step = step
	}
	o.runs++
	if o.step != nil {
		return o.step.Run()
	}
	return o.f()
}

// Loss returns the loss of the last Run of a step made by NewOfferedLoss (a download: it waits
// for the step).
func (o *Offered) Loss() (float32, error) {
	switch {
	case o.body == nil:
		return 0, errors.New("graph: Loss of a step made without its loss (NewOffered)")
	case o.out != nil:
		v, err := o.out.Float32s()
		if err != nil {
			return 0, err
		}
		return v[0], nil
	}
	v := o.s.Item(o.loss)
	return v, o.s.Err()
}

// Captured reports whether Run replays a graph.
func (o *Offered) Captured() bool { return o.step != nil && o.step.Captured() }

// Close frees the graph, if any, and the loss's buffer. Idempotent.
func (o *Offered) Close() error {
	o.out.Release()
	if o.step == nil {
		return nil
	}
	return o.step.Close()
}

// Size is an example's training step for batches of one size, made by the build function of
// New: the static inputs the step reads belong to it.
type Size struct {
	// Load copies the batch b into the static inputs (before the step, outside the captured
	// function).
	Load func(b *nn.Batch) error
	// Body records one whole training step on the static inputs (Reset, the forward pass,
	// Backward, the optimizer's Step and ZeroGrad) and returns its loss. It must not read
	// values back to the host.
	Body func() autograd.Var
	// Release frees the static inputs.
	Release func()
}

// Steps runs an example's training steps with -graph: each batch size's step is captured once
// into a CUDA graph and replayed with one launch per step.
//
// A graph reads fixed addresses, so a step's batch is copied into static inputs before the
// replay (Size.Load), and the step writes its loss into a one-element output buffer that is
// read after the replay (a read inside the captured function would be a host synchronization,
// refused). A learning rate that a schedule sets between steps reaches the replays through the
// optimizer's device state (Step.Run uploads it). Every batch size gets its own static inputs
// and graph (the last batch of an epoch is usually shorter); the first step of the run is an
// eager one, which creates the optimizer's state. When the capture refuses a call of the step,
// the steps run eagerly from then on, and Captured and Report say why.
type Steps struct {
	sess  *autograd.Session
	name  string
	build func(xShape []int) (Size, error)
	sizes map[int]*size
	warm  bool // a step ran (the optimizer's state exists)
	// refused is the capture's refusal of a call of the step (wrapping ops.ErrCapturing; it
	// names the call), after which the steps run eagerly.
	refused error
}

// size is the step of one batch size.
type size struct {
	Size
	out  *ops.Buffer  // the step's loss
	f    func() error // Body, then the loss copied into out
	step *autograd.Step
}

// New returns the steps of session sess; build makes the step of batches whose features have
// the shape xShape (the first entry is the batch size). name (the example's) prefixes errors.
func New(sess *autograd.Session, name string, build func(xShape []int) (Size, error)) *Steps {
	return &Steps{sess: sess, name: name, build: build, sizes: map[int]*size{}}
}

// Run runs one optimizer step on the batch b and returns its loss.
func (g *Steps) Run(b *nn.Batch) (float64, error) {
	n := b.Size()
	c := g.sizes[n]
	if c == nil {
		var err error
		if c, err = g.newSize(b.XShape); err != nil {
			return 0, err
		}
		g.sizes[n] = c
	}
	if err := c.Load(b); err != nil {
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

// RunStep runs the training step of the batch b and returns its loss: with g's steps (-graph),
// or, when g is nil, with eager, the example's eager step.
func RunStep(g *Steps, b *nn.Batch, eager func(b *nn.Batch) float64) (float64, error) {
	if g == nil {
		return eager(b), nil
	}
	return g.Run(b)
}

// newSize makes the step of batches of shape xShape: the example's part, the output and the
// captured function.
func (g *Steps) newSize(xShape []int) (*size, error) {
	part, err := g.build(xShape)
	if err != nil {
		return nil, err
	}
	s := g.sess
	c := &size{Size: part}
	if c.out, err = ops.Zeros(s.Device(), 1); err != nil {
		c.Release()
		return nil, fmt.Errorf("%s: graph: %w", g.name, err)
	}
	c.f = func() error {
		loss := c.Body()
		if err := s.Err(); err != nil {
			return err
		}
		return ops.CopyInto(c.out, s.Value(loss))
	}
	return c, nil
}

// capture offers f to the capture (Offer); a refusal is kept in refused and makes a nil Step
// (eager steps from now on).
func (g *Steps) capture(f func() error) (*autograd.Step, error) {
	step, refused, err := Offer(g.sess, f)
	if refused != nil {
		g.refused = refused
	}
	return step, err
}

// Captured reports whether the steps replay graphs (false: they run eagerly), and why not.
func (g *Steps) Captured() (bool, error) {
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

// Report returns the line saying whether the steps replayed graphs or ran eagerly, and why;
// empty before the first step.
func (g *Steps) Report() string {
	if len(g.sizes) == 0 {
		return ""
	}
	if ok, why := g.Captured(); !ok {
		return fmt.Sprintf("graph: the training steps ran eagerly (%v)", why)
	}
	return "graph: the training steps replayed CUDA graphs (after one eager step)"
}

// Close frees the graphs, the static inputs and the outputs.
func (g *Steps) Close() error {
	var first error
	for _, c := range g.sizes {
		if c.step != nil {
			if err := c.step.Close(); err != nil && first == nil {
				first = err
			}
		}
		c.Release()
		c.out.Release()
	}
	g.sizes = map[int]*size{}
	return first
}

// ClipGradNorm clips the gradients of params to the global norm maxNorm: with onDevice, through
// autograd.ClipGradNormDevice (float32 on the device, no host read, so a captured step can do
// it), else through autograd.ClipGradNorm (a float64 sum on the host, read back). The two differ
// in the last bits; an example uses the device form whenever -graph is on.
func ClipGradNorm(params []*autograd.Param, maxNorm float64, onDevice bool) error {
	if !onDevice {
		_, err := autograd.ClipGradNorm(params, maxNorm)
		return err
	}
	norm, err := autograd.ClipGradNormDevice(params, maxNorm)
	if err != nil {
		return err
	}
	norm.Release()
	return nil
}
