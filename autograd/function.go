package autograd

import (
	"errors"
	"fmt"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Function is a differentiable op written by the caller out of ops kernels, PyTorch's
// torch.autograd.Function: Apply records it on a tape like a built-in op.
type Function struct {
	// Name names the op in error messages ("function" when empty).
	Name string

	// Forward computes the op's value from its inputs' values (in, borrowed: it must neither
	// release nor write them; shapes[k] is in[k]'s shape, also borrowed). It returns a fresh
	// result buffer, its shape, and the buffers its Backward needs (saved, may be nil: fresh
	// buffers, inputs or the result). From then on the tape owns the result and the fresh saved
	// buffers: it releases those at the end of the tape's backward pass (whether or not the pass
	// reaches this node) or at Reset, and the result at Reset. On an error Forward releases what
	// it created and returns nil buffers.
	Forward func(in []*ops.Buffer, shapes [][]int) (y *ops.Buffer, shape []int, saved []*ops.Buffer, err error)

	// Backward returns the gradient of each input, in input order, given the cotangent g of the
	// result (borrowed; it holds the result's shape) and the same in and saved as Forward's
	// (borrowed). grads[k] has in[k]'s length; nil gives in[k] no contribution (PyTorch's None),
	// as where need[k] is false (the input does not take part in the pass). As in PyTorch a
	// gradient may be g itself, an input, a saved buffer or the result (the tape copies those);
	// any other must be a fresh buffer, which the tape then owns. On an error Backward releases
	// the fresh buffers it made. Backward may be nil for an op that is not differentiable: Apply
	// then fails when an input requires grad.
	Backward func(g *ops.Buffer, in, saved []*ops.Buffer, need []bool) (grads []*ops.Buffer, err error)
}

// Apply records f applied to xs (at least one) and returns its result. The inputs' values stay
// alive until Reset, so Backward may read them. Forward must return a buffer of its own as the
// result (ops.Copy an input to pass it through). Inside NoGrad the result does not require grad
// and Backward is never called.
func (t *Tape) Apply(f Function, xs ...Var) Var {
	op := f.Name
	if op == "" {
		op = "function"
	}
	if len(xs) == 0 {
		return t.failf(op, "no inputs")
	}
	vs, ok := t.args(op, xs...)
	if !ok {
		return Var{}
	}
	if f.Forward == nil {
		return t.failf(op, "Forward is nil")
	}
	requires := false
	for _, x := range xs {
		requires = requires || t.nodes[x.id].requires
	}
	if requires && !t.noGrad && f.Backward == nil {
		return t.failf(op, "an input requires grad and Backward is nil")
	}
	in := make([]*ops.Buffer, len(vs))
	shapes := make([][]int, len(vs))
	for k, v := range vs {
		in[k], shapes[k] = v.buf, slices.Clone(v.shape)
	}
	y, shape, saved, err := f.Forward(slices.Clone(in), shapes)
	// work: the saved buffers the tape owns, neither an input nor the result (Release is
	// idempotent, so one listed twice is harmless).
	var work []releaser
	for _, s := range saved {
		if s != nil && s != y && !slices.Contains(in, s) {
			work = append(work, s)
		}
	}
	if err == nil {
		err = checkFunctionResult(t, y, shape, saved, in)
	}
	if err != nil {
		if !slices.Contains(in, y) {
			y.Release()
		}
		release(work)
		return t.fail(opFailed(op, err))
	}
	saved = slices.Clone(saved)
	back := func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		gs, err := f.Backward(g, slices.Clone(in), slices.Clone(saved), need)
		// own[k]: gs[k] is a fresh buffer (first listed at k) the tape may take; the others are
		// copied, and on an error only fresh ones are released.
		own := make([]bool, len(gs))
		for k, b := range gs {
			own[k] = b != nil && b != g && b != y && !slices.Contains(in, b) && !slices.Contains(saved, b) && !slices.Contains(gs[:k], b)
		}
		for k, b := range gs {
			switch {
			case err != nil || b == nil || own[k]:
			case k < len(need) && !need[k]:
				gs[k] = nil // the engine drops it anyway
			default:
				gs[k], err = ops.Copy(b)
				own[k] = err == nil
			}
		}
		if err != nil {
			for k, b := range gs {
				if own[k] {
					b.Release()
				}
			}
			return nil, err
		}
		return gs, nil
	}
	return t.record(op, slices.Clone(shape), y, nil, work, xs, back)
}

// checkFunctionResult checks what a Function's Forward returned: a live result of the tape's
// device holding shape's elements that is not an input, and live saved buffers.
func checkFunctionResult(t *Tape, y *ops.Buffer, shape []int, saved, in []*ops.Buffer) error {
	if y == nil {
		return errors.New("the Forward method returned a nil result")
	}
	if slices.Contains(in, y) {
		return errors.New("the Forward method returned an input's buffer as its result (return ops.Copy of it)")
	}
	if _, err := t.newValue(y, shape); err != nil {
		return fmt.Errorf("the result of the Forward method: %w", err)
	}
	for k, s := range saved {
		if err := live(s); s != nil && err != nil {
			return fmt.Errorf("saved[%d]: %w", k, err)
		}
	}
	return nil
}
