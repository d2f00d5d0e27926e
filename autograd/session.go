package autograd

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Options configure a Session.
type Options struct {
	// Device holds the parameters and runs every op; nil means ops.Default() (the first CUDA
	// device when one is usable, else the CPU). Both compute the same bits.
	Device *ops.Device
	// Deterministic turns on ops' deterministic-reductions mode when the session is created
	// (ops.SetDeterministic(true)). The mode is process-wide; the session never turns it off.
	Deterministic bool
	// Seed keys the session's random draws: draw k (counted from 0 over the session's life; Reset
	// does not restart the count) uses the key ops.KeyOf(Seed, k). See NextKey.
	Seed uint64
	// MaxTapeNodes bounds the nodes (values: inputs, parameter uses, op results) recorded
	// since the last Reset: the op that would record one more fails with an error saying that
	// Reset was probably forgotten, the usual cause of a tape that grows step after step and
	// keeps every value alive. 0 means DefaultMaxTapeNodes; a negative value, no bound. The
	// check is one integer comparison per node.
	MaxTapeNodes int
}

// DefaultMaxTapeNodes is the bound on the nodes of a session's tape when Options.MaxTapeNodes
// is 0: far above one step of the usual models (a layer records a few to a few dozen nodes),
// and reached by a loop that never calls Reset after at most 2^20 ops.
const DefaultMaxTapeNodes = 1 << 20

// Session is the eager training session of the seeds: a Tape (embedded: its ops record on the
// session) plus trainable parameters with persistent device buffers, step-scoped inputs,
// seeded random draws, non-differentiable integer inputs and optimizers. A training step is
//
//	sess.Reset()                          // forget the previous step's tape
//	x := sess.Input(batch, 32, 784)       // upload inputs
//	loss := sess.CrossEntropy(sess.Linear(x, sess.Use(w), sess.Use(b)), labels)
//	sess.Backward(loss)                   // accumulate the parameters' gradients
//	opt.Step()                            // update the parameters in place
//	opt.ZeroGrad()
//
// Reset, Backward, BackwardWith, BackwardFrom, BackwardParams, Err and Dropout are the session's
// own versions of the Tape methods of those names; the first six called on s.Tape are the
// session's too, so code written against *Tape may be handed s.Tape. Every other Tape method
// (the ops, Leaf, Const, Value, Grad, NoGrad...) works on the session as documented on Tape.
//
// # Errors
//
// Errors from the caller's input (a shape mismatch, a bad index, a bad hyperparameter, a stale
// handle) and from the device never panic. The session keeps the first one: every later op,
// Backward and optimizer Step is a no-op that returns it (or the invalid zero Var), Reset does
// not clear it, and Err reports it. So a training loop may check once, at the end. The messages
// name the op and the offending shapes or values. A loop that skips a bad batch and goes on, as
// a PyTorch loop catching the exception would, calls ClearErr.
//
// Two mistakes that would otherwise pass silently are errors too: a row index outside
// [0, dim 0) of Gather, ScatterAdd and their Idx forms with Ints handles (as PyTorch raises; the
// ops kernels and a plain Tape read zeros and drop out-of-range rows, the seeds' rule), and a
// tape that keeps growing because the loop never calls Reset (Options.MaxTapeNodes).
//
// # Ownership
//
// The session owns what it creates: parameter buffers and gradients (released by Close),
// inputs, random draws and prepared indices (released by the next Reset or Close), and the
// tape's values (Reset). Optimizer state belongs to the optimizer (Close on the optimizer or the
// session). After Close, the device's live bytes are back where they were, and the session
// only returns errors.
//
// The zero Session is not usable (its ops dereference a nil Tape): create one with NewSession. A
// Session is not safe for concurrent use.
type Session struct {
	*Tape
	seed    uint64
	counter uint64
	err     error
	closed  bool

	// The draw count on the device: the random ops of a step (Uniform, Normal, Bernoulli,
	// Dropout) read their keys' count from draws (ops.RandUniformAt, ...), at offsets from
	// drawBase, its value; Reset advances it to counter. So the keys come from device memory,
	// as a step captured into a CUDA graph needs, and are the same keys as KeyOf(seed, counter).
	draws    *ops.Counter // made on the first draw of a step
	drawBase uint64

	params   []*Param
	names    map[string]bool
	optims   []*optimizer
	gradHook func(p *Param) error // SetGradHook's (hook.go)

	// The current step: cleared by Reset.
	uses  []use       // parameters recorded with Use (leaves that require grad)
	owned []releaser  // inputs, random draws, retired parameter buffers and indices
	ints  []intsEntry // integer inputs
}

// use is one recording of a parameter as a leaf that requires grad.
type use struct {
	p    *Param
	leaf Var
}

// intsEntry is one integer input; ix is its device copy, uploaded on demand.
type intsEntry struct {
	vals []int
	ix   *ops.Indices
}

// ErrClosed is the error (compare with errors.Is) of every use of a session after Close, unless
// an error was recorded before.
var ErrClosed = errors.New("autograd: the session is closed")

// NewSession returns an empty session with the given options.
func NewSession(o Options) *Session {
	if o.Deterministic {
		ops.SetDeterministic(true)
	}
	s := &Session{Tape: NewTape(o.Device), seed: o.Seed, names: map[string]bool{}}
	s.Tape.sess = s
	switch {
	case o.MaxTapeNodes == 0:
		s.Tape.limit = DefaultMaxTapeNodes
	case o.MaxTapeNodes > 0:
		s.Tape.limit = o.MaxTapeNodes
	}
	return s
}

// Err returns the session's first error (of a session method, an op recorded on the tape, a
// backward pass or an optimizer step), or nil.
func (s *Session) Err() error {
	if s.err == nil {
		s.err = s.Tape.err
	}
	return s.err
}

// ClearErr forgets the recorded error and returns it, ending the current step as Reset does, so
// that the next step runs; with no error recorded it does nothing and returns nil. An error of
// the caller's input (a shape, an index or label, a hyperparameter, a stale handle) changed
// nothing: parameters, their gradients, optimizer state and running statistics are as before the
// failed call, and so they are after a forward op the device had no memory for. A device error
// inside Backward or an optimizer Step may have applied part of it (some gradients accumulated,
// some parameters updated; ZeroGrad clears the gradients), and after a device fault every later
// op fails again with the device's error. A closed session stays closed: ClearErr returns its
// error and keeps it.
func (s *Session) ClearErr() error {
	err := s.Err()
	if err == nil || s.closed {
		return err
	}
	s.Reset()
	s.err = nil
	s.Tape.err = nil
	return err
}

// fail records err unless an error is recorded already, makes the tape's ops no-ops, and
// returns the session's first error.
func (s *Session) fail(err error) error {
	if s.Err() == nil {
		s.err = err
	}
	s.Tape.fail(s.err)
	return s.err
}

// failf records the error "autograd: op: message".
func (s *Session) failf(op, format string, args ...any) error {
	return s.fail(fmt.Errorf("autograd: %s: %s", op, fmt.Sprintf(format, args...)))
}

// Reset ends the current step: it releases the tape's values and gradients (parameter
// gradients are kept: see ZeroGrad), the step's inputs, random draws and integer inputs, and
// makes their handles stale. A recorded error survives Reset.
func (s *Session) Reset() {
	s.Err()
	s.Tape.reset()
	if s.err != nil {
		s.Tape.fail(s.err)
	}
	release(s.owned)
	for _, e := range s.ints {
		e.ix.Release()
	}
	if s.draws != nil && s.counter != s.drawBase {
		if err := s.draws.Add(s.counter - s.drawBase); err != nil {
			s.fail(opFailed("reset", err))
		}
		s.drawBase = s.counter
	}
	clear(s.uses)
	clear(s.owned)
	clear(s.ints)
	s.uses, s.owned, s.ints = s.uses[:0], s.owned[:0], s.ints[:0]
}

// Close releases everything the session holds: the tape, the step's buffers, the parameters'
// buffers and gradients, and the state of every optimizer of its parameters. Download what
// you need first (Param.Host). It returns the device's pending error, if any; afterwards every
// operation fails, with the session's first error (that the session is closed, unless an error
// was recorded before). Close is idempotent.
func (s *Session) Close() error {
	if s.closed {
		return nil
	}
	err := s.Device().Sync()
	s.Reset()
	for _, o := range slices.Clone(s.optims) { // Close removes o from s.optims
		o.Close()
	}
	for _, p := range s.params {
		p.buf.Release()
		p.grad.Release()
		p.grad = nil
	}
	if s.draws != nil {
		s.draws.Release()
	}
	s.closed = true
	s.fail(ErrClosed)
	return err
}

// RandomState returns the state of the session's random draws: its seed and the number of keys
// NextKey has handed out. Saved with a checkpoint and given back to SetRandomState, it makes a
// resumed run draw the same dropout masks and samples as an uninterrupted one (PyTorch's
// get_rng_state).
func (s *Session) RandomState() (seed, draws uint64) { return s.seed, s.counter }

// SetRandomState restores a state from RandomState: the next draw uses ops.KeyOf(seed, draws).
func (s *Session) SetRandomState(seed, draws uint64) {
	s.seed, s.counter = seed, draws
	if s.draws != nil {
		if err := s.draws.Set(draws); err != nil {
			s.fail(opFailed("set random state", err))
		}
		s.drawBase = draws
	}
}

// drawAt runs gen with the session's device draw count and the offset of the next draw from it,
// and takes the draw (advances the count) when gen reports success; the key gen's op uses is
// ops.KeyOf(seed, count + offset), the key draw would give.
func (s *Session) drawAt(op string, gen func(c *ops.Counter, seed, offset uint64) bool) {
	if s.draws == nil {
		c, err := ops.NewCounter(s.Device(), s.counter)
		if err != nil {
			s.fail(opFailed(op, err))
			return
		}
		s.draws, s.drawBase = c, s.counter
	}
	if gen(s.draws, s.seed, s.counter-s.drawBase) {
		s.counter++
	}
}

// NextKey returns the key of the session's next random draw, ops.KeyOf(Seed, k) for the k-th
// call (from 0), and advances the count. Uniform, Normal, Bernoulli, Dropout, ParamUniform and
// ParamNormal take their keys from the same count, advancing it only when they succeed: a call
// that fails (a bad argument) draws nothing, so after ClearErr the draws go on as if it had
// not been made.
func (s *Session) NextKey() uint64 {
	k := ops.KeyOf(s.seed, s.counter)
	s.counter++
	return k
}

// draw runs f with the key of the next draw and takes that key (advances the count) when f
// reports success.
func (s *Session) draw(f func(key uint64) bool) {
	if f(ops.KeyOf(s.seed, s.counter)) {
		s.counter++
	}
}

// drawLeaf records the buffer gen makes with the next draw (keyed from the device count: see
// drawAt) as a constant leaf of shape for the current step (op names it in errors).
func (s *Session) drawLeaf(op string, shape []int, gen func(n int, c *ops.Counter, seed, offset uint64) (*ops.Buffer, error)) Var {
	n, ok := s.numelFor(op, shape)
	if !ok {
		return Var{}
	}
	var v Var
	s.drawAt(op, func(c *ops.Counter, seed, offset uint64) bool {
		b, err := gen(n, c, seed, offset)
		v = s.leaf(op, b, err, shape, false)
		return v.Valid()
	})
	return v
}

// leaf records b, created by op for the current step (err is op's error), as a leaf of shape;
// the session releases b at the next Reset.
func (s *Session) leaf(op string, b *ops.Buffer, err error, shape []int, requiresGrad bool) Var {
	if err != nil {
		b.Release()
		s.fail(opFailed(op, err))
		return Var{}
	}
	s.owned = append(s.owned, b)
	return s.Leaf(b, shape, requiresGrad)
}

// numelFor returns the number of elements of shape, or records the error of op.
func (s *Session) numelFor(op string, shape []int) (int, bool) {
	if s.Err() != nil {
		return 0, false
	}
	n, err := numel(shape)
	if err != nil {
		s.failf(op, "%v", err)
		return 0, false
	}
	return n, true
}

// Input uploads values, the row-major contents of shape, as a constant of the current step
// (no gradient; PyTorch's requires_grad=False).
func (s *Session) Input(values []float32, shape ...int) Var {
	return s.input("input", values, shape, false)
}

// InputGrad is Input for a value whose gradient Backward computes: read it with Grad (owned by
// the tape until Reset).
func (s *Session) InputGrad(values []float32, shape ...int) Var {
	return s.input("input", values, shape, true)
}

func (s *Session) input(op string, values []float32, shape []int, requiresGrad bool) Var {
	n, ok := s.numelFor(op, shape)
	if !ok {
		return Var{}
	}
	if len(values) != n {
		hint := ""
		if len(shape) == 0 {
			hint = fmt.Sprintf(" (a scalar): pass the shape after the values, e.g. %d for a vector", len(values))
		}
		s.failf(op, "%d values for shape %v%s", len(values), shape, hint)
		return Var{}
	}
	b, err := ops.FromFloat32(s.Device(), values)
	return s.leaf(op, b, err, shape, requiresGrad)
}

// Uniform returns a constant of the given shape drawn from U[0, 1) with the next key
// (ops.RandUniform: the same bits on every device).
func (s *Session) Uniform(shape ...int) Var {
	return s.drawLeaf("uniform", shape, func(n int, c *ops.Counter, seed, offset uint64) (*ops.Buffer, error) {
		return ops.RandUniformAt(c, n, seed, offset)
	})
}

// Normal returns a constant of the given shape drawn from N(mean, std²) with the next key
// (ops.RandNormal: the same bits on every device), PyTorch's torch.randn(shape) * std + mean, as
// for a VAE's reparameterization noise. mean must be finite and std finite and >= 0, as float32s.
func (s *Session) Normal(mean, std float64, shape ...int) Var {
	return s.drawLeaf("normal", shape, func(n int, c *ops.Counter, seed, offset uint64) (*ops.Buffer, error) {
		return ops.RandNormalAt(c, n, mean, std, seed, offset)
	})
}

// Bernoulli returns a constant mask of the given shape, 1 with probability keep and 0
// otherwise, drawn with the next key (ops.BernoulliMask). keep must be in [0, 1].
func (s *Session) Bernoulli(keep float64, shape ...int) Var {
	return s.drawLeaf("bernoulli", shape, func(n int, c *ops.Counter, seed, offset uint64) (*ops.Buffer, error) {
		return ops.BernoulliMaskAt(c, n, keep, seed, offset)
	})
}

// Dropout is Tape.Dropout with the mask keyed by the session's next key; p = 0 and p = 1 draw
// no mask and take no key (PyTorch's dropout draws no random numbers for them either).
func (s *Session) Dropout(x Var, p float64) Var {
	if s.Err() != nil {
		return Var{}
	}
	if p == 0 || p == 1 {
		return s.Tape.Dropout(x, p, 0)
	}
	var y Var
	s.drawAt("dropout", func(c *ops.Counter, seed, offset uint64) bool {
		y = s.Tape.dropout(x, p, func(n int, keep float64) (*ops.Buffer, error) {
			return ops.BernoulliMaskAt(c, n, keep, seed, offset)
		})
		return y.Valid()
	})
	return y
}

// Backward differentiates loss, a value of one element, with respect to the leaves of this step
// that require grad: the parameters recorded by Use, whose gradients are added to their
// accumulated gradients (Param.Grad; ZeroGrad clears them) like PyTorch's loss.backward(), and
// the others (InputGrad, Leaf), whose gradients Grad returns until Reset. A parameter used
// several times gets the sum; one that loss does not depend on gets no gradient (PyTorch's grad
// stays None), so optimizers skip it; other leaves get zeros. It runs once per step (Reset in
// between) and releases every other gradient as soon as it is consumed.
func (s *Session) Backward(loss Var) error {
	return s.backward("backward", []Var{loss}, nil, nil)
}

// BackwardWith is Backward from a value y of any shape with the cotangent seed (borrowed; y's
// shape), PyTorch's y.backward(gradient=seed).
func (s *Session) BackwardWith(y Var, seed *ops.Buffer) error {
	return s.backward("backward", []Var{y}, []*ops.Buffer{seed}, nil)
}

// BackwardFrom is BackwardWith from several outputs at once (Tape.BackwardFrom), PyTorch's
// torch.autograd.backward(tensors, grad_tensors).
func (s *Session) BackwardFrom(ys []Var, seeds []*ops.Buffer) error {
	if seeds == nil {
		seeds = []*ops.Buffer{} // nil would stand for ones
	}
	return s.backward("backward", ys, seeds, nil)
}

// BackwardParams is Backward(loss) restricted to inputs, leaves of this step that require grad
// (PyTorch's loss.backward(inputs=...)): the parameter uses among them add their gradients to
// Param.Grad, the other leaves' gradients are returned by Grad until Reset, and nothing else is
// differentiated beyond what they need. At least one input is required.
func (s *Session) BackwardParams(loss Var, inputs ...Var) error {
	if len(inputs) == 0 {
		return s.failf("backward_params", "no inputs (Backward differentiates every leaf)")
	}
	return s.backward("backward_params", []Var{loss}, nil, inputs)
}

// backward is the tape's backward pass from ys (seeds as Tape.backward's) keeping the gradients
// of inputs, or of every leaf of this step that requires grad when inputs is nil, then moves the
// gradients of the parameter uses among them into their parameters.
func (s *Session) backward(op string, ys []Var, seeds []*ops.Buffer, inputs []Var) error {
	if err := s.Err(); err != nil {
		return err
	}
	if inputs == nil {
		inputs = []Var{}
		for id, n := range s.nodes {
			if n.requires && len(n.parents) == 0 {
				inputs = append(inputs, Var{t: s.Tape, id: id, gen: s.gen})
			}
		}
	}
	// A released accumulated gradient is the caller's error: found before anything is added.
	for _, u := range s.uses {
		if u.p.grad != nil {
			if err := u.p.grad.Err(); err != nil {
				return s.fail(fmt.Errorf("autograd: %s: gradient of %s: %w", op, u.p.name, err))
			}
		}
	}
	if s.gradHook != nil {
		s.Tape.swept, s.Tape.taken = s.hookSweep(inputs), make([]bool, len(s.nodes))
		defer func() { s.Tape.swept, s.Tape.taken = nil, nil }()
	}
	if err := s.Tape.backward(op, ys, seeds, inputs); err != nil {
		return s.fail(err)
	}
	for _, u := range s.uses {
		if !s.owns(u.leaf) { // the tape was reset behind the session's back
			continue
		}
		g := s.grads[u.leaf.id]
		if g == nil { // not among the inputs
			continue
		}
		s.grads[u.leaf.id] = nil
		if s.unreached[u.leaf.id] {
			// The loss does not depend on this use: no gradient (PyTorch leaves .grad None), so
			// an optimizer skips the parameter unless another use reached it.
			g.Release()
			continue
		}
		if err := u.p.addGrad(g); err != nil {
			return s.fail(fmt.Errorf("autograd: %s: gradient of %s: %w", op, u.p.name, err))
		}
	}
	return nil
}

// Item returns the value of v, which must have one element (PyTorch's item()), downloading it;
// NaN on an error (recorded), so that a loss printed after a failed step cannot pass for a
// result.
func (s *Session) Item(v Var) float32 {
	nan := float32(math.NaN())
	b := s.Value(v)
	switch {
	case s.Err() != nil:
		return nan
	case b == nil:
		s.fail(fmt.Errorf("autograd: item: %w", ErrInvalidVar))
		return nan
	case b.Len() != 1:
		s.failf("item", "the value has shape %v, not one element", s.Shape(v))
		return nan
	}
	f, err := b.Float32s()
	if err != nil {
		s.fail(fmt.Errorf("autograd: item: %w", err))
		return nan
	}
	return f[0]
}

// ZeroGrad releases the accumulated gradient of every parameter (PyTorch's zero_grad with
// set_to_none): until the next Backward, optimizers skip them.
func (s *Session) ZeroGrad() {
	for _, p := range s.params {
		p.ZeroGrad()
	}
}

// Params returns the session's parameters in creation order.
func (s *Session) Params() []*Param { return slices.Clone(s.params) }

// Param creates a trainable parameter of the given shape holding values (row-major; nil means
// zeros), uploaded to the session's device. Its name must be non-empty and unique in the
// session: it names the parameter's optimizer state. On an error the session records it and
// the returned parameter is unusable (its ops are no-ops).
func (s *Session) Param(name string, shape []int, values []float32) *Param {
	return s.param(name, shape, values, false, 0)
}

// param is Param; own: values is the caller's to keep as the host copy (no clone); nil values
// make every element fill.
func (s *Session) param(name string, shape []int, values []float32, own bool, fill float32) *Param {
	const op = "param"
	p := s.unusable(name, shape) // until its buffer is made
	n, ok := s.numelFor(op, shape)
	switch {
	case !ok:
		return p
	case name == "":
		s.failf(op, "the name is empty")
		return p
	case s.names[name]:
		s.failf(op, "the name %q is taken by another parameter", name)
		return p
	case values != nil && len(values) != n:
		s.failf(op, "%s: %d values for shape %v", name, len(values), shape)
		return p
	}
	var b *ops.Buffer
	var err error
	switch {
	case values != nil:
		b, err = ops.FromFloat32(s.Device(), values)
	case fill == 0:
		// Made on the device, no host copy until Host asks: a parameter too large for the
		// machine is an error from the device's allocator, not a failed host allocation.
		b, err = ops.Zeros(s.Device(), n)
	default:
		b, err = ops.Full(s.Device(), n, float64(fill))
	}
	if err != nil {
		s.fail(fmt.Errorf("autograd: %s: %s: %w", op, name, err))
		return p
	}
	p.buf = b
	if values != nil {
		if !own {
			values = slices.Clone(values)
		}
		p.host, p.hostOK = values, true
	}
	s.names[name] = true
	s.params = append(s.params, p)
	return p
}

// ParamUniform is Param with values drawn from U[lo, hi): lo + (hi-lo)*u in float64, rounded to
// float32, for u the draws of ops.RandUniform with the session's next key. The values depend
// only on the seed and the number of earlier draws, not on the device. lo <= hi, both and hi - lo
// within float32's range, as PyTorch's uniform_ requires; lo == hi gives lo.
func (s *Session) ParamUniform(name string, shape []int, lo, hi float64) *Param {
	if d := hi - lo; !(d >= 0 && d <= math.MaxFloat32) || math.Abs(lo) > math.MaxFloat32 || math.Abs(hi) > math.MaxFloat32 {
		return s.paramFailed(name, shape, fmt.Errorf("uniform bounds [%v, %v) are not an interval of finite numbers", lo, hi))
	}
	return s.paramDrawn(name, shape, func(n int, key uint64) ([]float32, error) {
		values, err := download(ops.RandUniform(ops.CPU(), n, key))
		for i, v := range values {
			values[i] = float32(lo + (hi-lo)*float64(v))
		}
		return values, err
	})
}

// ParamNormal is Param with values drawn from N(mean, std²) (PyTorch's normal_, e.g. std 0.02
// for a transformer's embeddings): the draws of ops.RandNormal with the session's next key, so
// that, as for ParamUniform, they depend only on the seed and the number of earlier draws. mean
// must be finite and std finite and >= 0, as float32s.
func (s *Session) ParamNormal(name string, shape []int, mean, std float64) *Param {
	return s.paramDrawn(name, shape, func(n int, key uint64) ([]float32, error) {
		return download(ops.RandNormal(ops.CPU(), n, mean, std, key))
	})
}

// paramDrawn is Param with the values draw(n, key) gives for its n elements and the session's
// next key.
func (s *Session) paramDrawn(name string, shape []int, draw func(n int, key uint64) ([]float32, error)) *Param {
	n, ok := s.numelFor("param", shape)
	if !ok {
		return s.unusable(name, shape)
	}
	var p *Param
	s.draw(func(key uint64) bool {
		values, err := draw(n, key)
		if err != nil {
			p = s.paramFailed(name, shape, err)
		} else {
			p = s.param(name, shape, values, true, 0)
		}
		return p.buf != nil
	})
	return p
}

// paramFailed records err for the parameter name and returns an unusable parameter.
func (s *Session) paramFailed(name string, shape []int, err error) *Param {
	s.fail(fmt.Errorf("autograd: param: %s: %w", name, err))
	return s.unusable(name, shape)
}

// unusable returns the parameter that creating name failed to make: it has no buffer, so that
// every use of it is an error.
func (s *Session) unusable(name string, shape []int) *Param {
	return &Param{s: s, name: name, shape: slices.Clone(shape), requiresGrad: true}
}

// download returns the contents of b (released) or err.
func download(b *ops.Buffer, err error) ([]float32, error) {
	if err != nil {
		return nil, err
	}
	defer b.Release()
	return b.Float32s()
}

// Use records p's current value as a leaf of this step and returns it; backward passes reach
// it when p requires grad (outside NoGrad). Each call records a new leaf sharing p's buffer;
// Backward adds up their gradients.
func (s *Session) Use(p *Param) Var {
	if s.Err() != nil {
		return Var{}
	}
	if p == nil || p.s != s || p.buf == nil {
		s.failf("use", "the parameter is nil, from another session, or was not created")
		return Var{}
	}
	if err := p.buf.Err(); err != nil {
		s.fail(fmt.Errorf("autograd: use: parameter %s: %w (its Value belongs to the parameter: release a copy instead)", p.name, err))
		return Var{}
	}
	v := s.Leaf(p.buf, p.shape, p.requiresGrad)
	if s.RequiresGrad(v) {
		s.uses = append(s.uses, use{p, v})
	}
	return v
}

// Ints is a handle to a non-differentiable vector of integers recorded in a session for the
// indexing ops (row indices, class labels; a scalar is a vector of one element), like the
// seeds' NatRef and NatVecRef. It becomes stale at the session's next Reset.
type Ints struct {
	s   *Session
	id  int
	gen uint64
}

// Ints records a copy of values for the current step.
func (s *Session) Ints(values ...int) Ints {
	if s.Err() != nil {
		return Ints{}
	}
	s.ints = append(s.ints, intsEntry{vals: slices.Clone(values)})
	return Ints{s: s, id: len(s.ints) - 1, gen: s.gen}
}

// entry returns r's entry, or records the error of op.
func (r Ints) entry(op string) *intsEntry {
	if r.s == nil || r.gen != r.s.gen || r.id >= len(r.s.ints) {
		if r.s != nil {
			r.s.failf(op, "invalid Ints handle (the zero Ints, or stale after Reset)")
		}
		return nil
	}
	return &r.s.ints[r.id]
}

// Values returns a copy of the integers (nil for an invalid handle).
func (r Ints) Values() []int {
	if e := r.entry("ints"); e != nil {
		return slices.Clone(e.vals)
	}
	return nil
}

// Set overwrites the integers (any length).
func (r Ints) Set(values ...int) {
	e := r.entry("ints")
	if e == nil || r.s.Err() != nil {
		return
	}
	if e.ix != nil { // an op of this step may hold it until Reset
		r.s.owned = append(r.s.owned, e.ix)
	}
	e.vals, e.ix = slices.Clone(values), nil
}

// Indices returns the integers prepared on the session's device (for GatherIdx and
// ScatterAddIdx), uploaded on the first call and kept until Reset. A negative value is an error
// (nil is returned).
func (r Ints) Indices() *ops.Indices {
	e := r.entry("ints")
	if e == nil || r.s.Err() != nil {
		return nil
	}
	if e.ix == nil {
		ix, err := ops.NewIndices(r.s.Device(), e.vals)
		if err != nil {
			r.s.fail(fmt.Errorf("autograd: ints: %w", err))
			return nil
		}
		e.ix = ix
	}
	return e.ix
}

// Param is a trainable tensor of a Session. Its value lives in a persistent buffer on the
// session's device (Value), which optimizers update in place (an optimizer step between a forward
// pass and its backward pass first moves the parameter to a copy, leaving the recorded buffer to
// the pass until Reset); a host copy is kept in sync explicitly: Sync and Host download it when
// an update made it stale, Set uploads new values. Like its session, a Param is not safe for
// concurrent use (nor are the optimizers).
type Param struct {
	s            *Session
	name         string
	shape        []int
	buf          *ops.Buffer // the value (nil when creation failed)
	host         []float32   // host copy of buf, current when hostOK
	hostOK       bool
	requiresGrad bool
	grad         *ops.Buffer // accumulated gradient, nil when none
	optional     bool        // a strict LoadStateDict may lack it (BatchNorm's num_batches_tracked)
}

// Name returns the parameter's name.
func (p *Param) Name() string { return p.name }

// Shape returns a copy of the parameter's shape.
func (p *Param) Shape() []int { return slices.Clone(p.shape) }

// Value returns the device buffer holding the parameter (owned by the parameter; read it, do not
// update it in place: use Set or an optimizer). Set replaces it, and so does an optimizer step
// between a forward pass and its backward pass: take it again after those.
func (p *Param) Value() *ops.Buffer { return p.buf }

// Grad returns the accumulated gradient (owned by the parameter), or nil when there is none
// since the last ZeroGrad.
func (p *Param) Grad() *ops.Buffer { return p.grad }

// ZeroGrad releases the accumulated gradient.
func (p *Param) ZeroGrad() {
	p.grad.Release()
	p.grad = nil
}

// RequiresGrad reports whether Use records the parameter as a leaf that requires grad.
func (p *Param) RequiresGrad() bool { return p.requiresGrad }

// SetRequiresGrad freezes (false) or unfreezes (true) the parameter from the next Use on.
func (p *Param) SetRequiresGrad(on bool) { p.requiresGrad = on }

// Sync downloads the device value into the host copy when an update made it stale.
func (p *Param) Sync() error {
	if p.hostOK {
		return nil
	}
	h, err := p.buf.Float32s()
	if err != nil {
		return p.s.fail(fmt.Errorf("autograd: sync %s: %w", p.name, err))
	}
	p.host, p.hostOK = h, true
	return nil
}

// Host returns a copy of the parameter's values (row-major), downloading them first if stale.
// It fails once the session is closed.
func (p *Param) Host() ([]float32, error) {
	if p.s.closed {
		return nil, p.s.Err()
	}
	if err := p.Sync(); err != nil {
		return nil, err
	}
	return slices.Clone(p.host), nil
}

// Set uploads values (row-major, the parameter's size) into a new device buffer, which
// replaces Value (the old one stays live until the next Reset when this step used it), and
// makes the host copy current. The accumulated gradient and the optimizer state are kept. Like
// every session method, it records its error (a wrong number of values, say) in the session.
func (p *Param) Set(values []float32) error {
	s := p.s
	if err := s.Err(); err != nil {
		return err
	}
	if p.buf == nil || len(values) != size(p.shape) {
		return s.failf("set", "%s: %d values for shape %v", p.name, len(values), p.shape)
	}
	b, err := ops.FromFloat32(s.Device(), values)
	if err != nil {
		return s.fail(fmt.Errorf("autograd: set %s: %w", p.name, err))
	}
	p.replace(b)
	p.host, p.hostOK = slices.Clone(values), true
	return nil
}

// recorded reports whether a value of the current recording is the parameter's buffer.
func (p *Param) recorded() bool {
	return slices.ContainsFunc(p.s.nodes, func(n node) bool { return n.val.buf == p.buf })
}

// replace makes b (owned) the parameter's buffer. The old one stays live until the next Reset
// when the current recording holds it, else it is released.
func (p *Param) replace(b *ops.Buffer) {
	if p.recorded() {
		p.s.owned = append(p.s.owned, p.buf)
	} else {
		p.buf.Release()
	}
	p.buf = b
}

// unshare gives the parameter a copy of its buffer when the current recording holds the buffer
// and a backward pass may still read it (none ran yet, and a node requires grad), so that an
// in-place update leaves the recorded values as they were (PyTorch raises an error here instead:
// "a variable needed for gradient computation has been modified by an inplace operation").
func (p *Param) unshare() error {
	if p.s.done || !p.recorded() || !slices.ContainsFunc(p.s.nodes, func(n node) bool { return n.requires }) {
		return nil // no backward pass will read the recorded values
	}
	c, err := ops.Copy(p.buf)
	if err != nil {
		return err
	}
	p.replace(c)
	return nil
}

// addGrad adds g (owned) to the accumulated gradient.
func (p *Param) addGrad(g *ops.Buffer) error {
	if p.grad == nil {
		p.grad = g
		return nil
	}
	sum, err := ops.Add(p.grad, g)
	g.Release()
	if err != nil {
		return err
	}
	p.grad.Release()
	p.grad = sum
	return nil
}

// updated marks the host copy stale after an in-place update of the device value.
func (p *Param) updated() { p.hostOK = false }
