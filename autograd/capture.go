package autograd

import (
	"errors"
	"fmt"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Captured training steps: a whole step (forward, backward, optimizer step) recorded once into a
// CUDA graph and replayed with one launch per step, in the style of PyTorch's torch.cuda.graph
// and make_graphed_callables.
//
//	x, _ := sess.NewStaticInput(batch, 784) // the buffers the graph reads
//	y, _ := sess.NewStaticInput(batch, 10)
//	stepFn := func() error {
//		sess.Reset()
//		loss = sess.MSELoss(model(sess, x.Var()), y.Var())
//		sess.Backward(loss)
//		opt.Step()
//		opt.ZeroGrad()
//		return sess.Err()
//	}
//	x.Set(firstX); y.Set(firstY)
//	stepFn()                        // one eager step first: optimizer state, counters
//	step, err := sess.Capture(stepFn)
//	for ... {
//		x.Set(nextX); y.Set(nextY)  // copy the batch in
//		step.Run()                  // one training step
//	}
//	fmt.Println(sess.Item(loss))    // the last Run's loss
//	step.Close()
//
// What a captured step requires (a Step checks what it can and says so in its errors):
//   - Inputs come through static inputs (NewStaticInput): a graph reads fixed addresses, so each
//     step's data is copied into the same buffers before Run (Set, or CopyFrom a device buffer).
//     Session.Input, Ints and the ops that upload host data per step (class labels as []int)
//     are refused inside the capture; use static inputs (one-hot targets, for instance).
//   - One eager step before Capture, like PyTorch's warm-up iterations: the optimizers' state
//     (moments, step counts on the device) is created on a parameter's first step, and made
//     inside a capture it would be made again at every replay. Capture returns an error when
//     the captured function created optimizer state.
//   - No host synchronization inside: Item, Value, a download, Argmax, Device.Sync are errors
//     naming the call (the capture fails; ClearErr, then go on eagerly or capture again). Read
//     results after Run: the values the captured function recorded (its loss Var) hold the
//     last Run's results until the session's next Reset.
//   - The step's changing state lives on the device and advances there: the session's draw
//     count (Dropout, Uniform... read their keys from it) and Adam's step counts. Each Run also
//     advances the host's copies (RandomState, the optimizers' step counts), so captured and
//     eager steps interleave and give the bits eager steps alone give. The
//     optimizers' hyperparameters live on the device too: Run uploads the current ones (a
//     learning rate that SetLR or a scheduler changed since the last step) before each replay,
//     ordered with the device's work, so a schedule stepped between Runs is followed as in
//     eager steps. What an optimizer's kernels are chosen by stays that of the capture (only the
//     learning rate can change: the options have no other setter).
//   - Gradients do not carry over between steps: Capture releases the parameters' gradients
//     before capturing (a captured step reads no gradient from before it), so the function must
//     be a whole step (ZeroGrad at its start or end); accumulation across Runs is not possible.
//   - Parameters, optimizer state and static inputs must stay alive while the Step may run.
//
// On the CPU, with TORCHLEAN_GRAPHS=0, and wherever the device cannot capture
// (ops.Device.CanCapture), Capture returns a Step whose Run calls the function eagerly: the
// same code runs everywhere and gives the same bits.

// StaticInput is a step input whose device buffer stays the same from step to step, as a
// captured step needs (and an eager one accepts): Set or CopyFrom fill it, Var records it in the
// current step as a constant. It belongs to the caller (Release); it must outlive the Steps that
// read it.
type StaticInput struct {
	s     *Session
	buf   *ops.Buffer
	shape []int
}

// NewStaticInput returns a static input of the given shape on the session's device, zeros.
func (s *Session) NewStaticInput(shape ...int) (*StaticInput, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	n, err := numel(shape)
	if err != nil {
		return nil, fmt.Errorf("autograd: static input: %w", err)
	}
	b, err := ops.Zeros(s.Device(), n)
	if err != nil {
		return nil, fmt.Errorf("autograd: static input: %w", err)
	}
	return &StaticInput{s: s, buf: b, shape: slices.Clone(shape)}, nil
}

// Shape returns the input's shape.
func (in *StaticInput) Shape() []int { return slices.Clone(in.shape) }

// Set copies values (the row-major contents of the shape) into the input. Not inside a
// captured function.
func (in *StaticInput) Set(values []float32) error {
	if err := ops.Upload(in.buf, values); err != nil {
		return fmt.Errorf("autograd: static input: %w", err)
	}
	return nil
}

// CopyFrom copies b (of the input's length, on its device) into the input, on the device.
func (in *StaticInput) CopyFrom(b *ops.Buffer) error {
	if err := ops.CopyInto(in.buf, b); err != nil {
		return fmt.Errorf("autograd: static input: %w", err)
	}
	return nil
}

// Var records the input in the session's current step as a constant (no gradient) and returns
// it; the buffer is borrowed, not released by Reset.
func (in *StaticInput) Var() Var {
	if in.s.Err() != nil {
		return Var{}
	}
	if err := in.buf.Err(); err != nil {
		in.s.fail(fmt.Errorf("autograd: static input: %w", err))
		return Var{}
	}
	return in.s.Leaf(in.buf, in.shape, false)
}

// Release frees the input's buffer (true the first time).
func (in *StaticInput) Release() bool { return in.buf.Release() }

// Step is a training step made by Session.Capture: Run runs it, replaying a CUDA graph when it
// was captured, calling the function eagerly otherwise (Captured, Reason).
type Step struct {
	s      *Session
	f      func() error
	graph  *ops.Graph // nil: eager
	reason error      // why the step is eager
	draws  uint64     // keys one step draws
	steps  [][]int    // per optimizer of the session at capture: each parameter's steps per step
	optims []*optimizer
	bufs   []*ops.Buffer // the parameters' buffers the graph reads and writes
	closed bool
}

// Capture records f, one whole training step, into a CUDA graph on the session's device and
// returns the Step that replays it (see the notes at the top of capture.go for what f may do;
// run one eager step first). Nothing of f runs on the device during the capture: the first Run
// is the first captured step. On a device that cannot capture, and with TORCHLEAN_GRAPHS=0,
// Capture does not call f and returns an eager Step (Reason says why). A capture that fails (f's
// error, an error recorded in the session such as an Item inside f, optimizer state created
// inside f) returns the error, leaves it recorded in the session when it came from there, and
// restores the host's step counts and draw count: the device state is as before the call.
func (s *Session) Capture(f func() error) (*Step, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, s.failf("capture", "nil function")
	}
	st := &Step{s: s, f: f}
	if st.reason = s.Device().CanCapture(); st.reason != nil {
		return st, nil
	}
	s.Reset() // the previous step's draws counted on the device, its values released
	if s.draws == nil {
		c, err := ops.NewCounter(s.Device(), s.counter)
		if err != nil {
			return nil, s.fail(opFailed("capture", err))
		}
		s.draws, s.drawBase = c, s.counter
	}
	for _, p := range s.params {
		p.ZeroGrad()
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	counter := s.counter
	st.optims = slices.Clone(s.optims)
	steps := make([][]int, len(st.optims))
	fresh := make([][]bool, len(st.optims))
	for k, o := range st.optims {
		steps[k] = slices.Clone(o.steps)
		fresh[k] = make([]bool, len(o.state))
		for i := range o.state {
			fresh[k][i] = o.state[i] == nil
		}
	}
	bufs := make([]*ops.Buffer, len(s.params))
	for i, p := range s.params {
		bufs[i] = p.buf
	}
	// The hyperparameters as they are now (a schedule may have moved the learning rate since the
	// last step), uploaded before the capture: an optimizer step inside it then finds them in
	// place instead of uploading, which a capture refuses.
	for _, o := range st.optims {
		if o.hyper == nil {
			continue
		}
		if err := o.hyper(); err != nil {
			return nil, s.fail(fmt.Errorf("autograd: capture: %s: %w", o.name, err))
		}
	}
	graph, err := s.Device().Capture(func() error {
		if err := f(); err != nil {
			return err
		}
		if err := s.Err(); err != nil {
			return err
		}
		if s.counter != s.drawBase { // this step's draws, counted on the device inside the graph
			if err := s.draws.Add(s.counter - s.drawBase); err != nil {
				return err
			}
		}
		for i, p := range s.params {
			if p.buf != bufs[i] {
				return fmt.Errorf("autograd: capture: parameter %s moved to a new buffer inside the capture (an optimizer step before Backward, or LoadState): the graph would read the old one", p.name)
			}
		}
		for k, o := range st.optims {
			for i := range o.state {
				if fresh[k][i] && o.state[i] != nil {
					return fmt.Errorf("autograd: capture: %s created the state of %s inside the capture: run one eager step before Capture",
						o.name, o.params[i].name)
				}
			}
		}
		return nil
	})
	// The capture ran nothing: the host's counts go back to the device's.
	st.draws = s.counter - counter
	s.counter, s.drawBase = counter, counter
	st.steps = make([][]int, len(st.optims))
	for k, o := range st.optims {
		st.steps[k] = make([]int, len(o.steps))
		for i := range o.steps {
			st.steps[k][i] = o.steps[i] - steps[k][i]
		}
		copy(o.steps, steps[k])
	}
	if err != nil {
		s.Reset() // the region's values were never computed
		if s.Err() == nil && !errors.Is(err, ops.ErrCapturing) {
			return nil, fmt.Errorf("autograd: capture: %w", err)
		}
		if s.Err() == nil {
			s.fail(fmt.Errorf("autograd: capture: %w", err))
		}
		return nil, s.Err()
	}
	st.graph, st.bufs = graph, bufs
	return st, nil
}

// Captured reports whether Run replays a graph (false: it calls the function eagerly).
func (st *Step) Captured() bool { return st.graph != nil }

// Reason returns why the step runs eagerly (an error wrapping ops.ErrCaptureUnsupported), nil
// when it was captured.
func (st *Step) Reason() error { return st.reason }

// Run runs one training step: one replay of the graph, queued on the device like an op (it
// does not wait for the step to finish), after uploading the optimizers' current
// hyperparameters (their learning rates) when they changed, with the session's draw count and
// the optimizers' step counts advanced as the step advances them on the device; or, for an
// eager Step, the function itself. The session's recorded error, or the Step's being closed, makes it an error
// that runs nothing.
func (st *Step) Run() error {
	s := st.s
	switch {
	case st.closed:
		return errors.New("autograd: step: run of a closed step")
	case s.Err() != nil:
		return s.Err()
	case st.graph == nil:
		if err := st.f(); err != nil {
			return err
		}
		return s.Err()
	}
	for _, o := range st.optims {
		if o.closed {
			return s.failf("step", "the optimizer %s was closed after the capture: capture again", o.name)
		}
	}
	for i, p := range s.params[:len(st.bufs)] {
		if p.buf != st.bufs[i] || p.buf.Err() != nil {
			return s.failf("step", "parameter %s changed its buffer after the capture (LoadState, Close): capture again", p.name)
		}
	}
	// The random draws of eager steps run since the last Reset go to the device's count first,
	// as the eager step's own Reset would add them: the graph reads the count (without this, a
	// replay right after an eager step drew that step's dropout masks again).
	if s.draws != nil && s.counter != s.drawBase {
		if err := s.draws.Add(s.counter - s.drawBase); err != nil {
			return s.fail(fmt.Errorf("autograd: step: %w", err))
		}
		s.drawBase = s.counter
	}
	for _, o := range st.optims {
		if o.hyper == nil {
			continue
		}
		if err := o.hyper(); err != nil {
			return s.fail(fmt.Errorf("autograd: step: %s: %w", o.name, err))
		}
	}
	if err := st.graph.Launch(); err != nil {
		return s.fail(fmt.Errorf("autograd: step: %w", err))
	}
	s.counter += st.draws
	s.drawBase += st.draws
	for k, o := range st.optims {
		for i, d := range st.steps[k] {
			o.steps[i] += d
		}
	}
	for _, p := range s.params {
		p.updated()
	}
	return nil
}

// Close frees the graph and its memory pool (an eager Step has none). Idempotent; later Runs
// are errors. The values the captured function recorded stay readable until the session's next
// Reset.
func (st *Step) Close() error {
	if st.closed {
		return nil
	}
	st.closed = true
	if st.graph == nil {
		return nil
	}
	return st.graph.Close()
}
