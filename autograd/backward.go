package autograd

import (
	"errors"
	"fmt"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Backward runs reverse mode from loss, a value of one element, with the seed cotangent 1. It is
// BackwardWith(loss, ones).
//
// On a session's tape (Session.Tape), Backward, BackwardWith, BackwardFrom and BackwardParams are
// the session's methods of those names, so that code written against *Tape trains a session's
// parameters when handed its tape.
func (t *Tape) Backward(loss Var) error {
	if t.sess != nil {
		return t.sess.Backward(loss)
	}
	return t.backward("backward", []Var{loss}, nil, nil)
}

// BackwardWith runs dense reverse mode from y with the cotangent seed (borrowed; it holds
// y's shape): afterwards every node that requires grad has a gradient (Grad), zeros where y does
// not depend on it. Gradients of nodes used several times accumulate. Each node's retained
// workspace is released as soon as its VJP ran. A tape runs one backward pass per Reset.
func (t *Tape) BackwardWith(y Var, seed *ops.Buffer) error {
	if t.sess != nil {
		return t.sess.BackwardWith(y, seed)
	}
	return t.backward("backward", []Var{y}, []*ops.Buffer{seed}, nil)
}

// BackwardFrom is BackwardWith from several outputs at once, ys[i] seeded with seeds[i] (borrowed,
// each of its output's shape; PyTorch's torch.autograd.backward(tensors, grad_tensors)): every
// gradient is the sum of the contributions of all the outputs, and an output listed twice gets
// the sum of its seeds.
func (t *Tape) BackwardFrom(ys []Var, seeds []*ops.Buffer) error {
	if t.sess != nil {
		return t.sess.BackwardFrom(ys, seeds)
	}
	if seeds == nil {
		seeds = []*ops.Buffer{} // nil would stand for ones
	}
	return t.backward("backward", ys, seeds, nil)
}

// BackwardParams is Backward(loss) keeping only the gradients of params (usually leaves): every
// other gradient is released as soon as its node's VJP consumed it, and only the nodes on a path
// from a parameter to loss are differentiated. A parameter that loss does not depend on gets a
// zero gradient. Each parameter must require grad.
func (t *Tape) BackwardParams(loss Var, params ...Var) error {
	if t.sess != nil {
		return t.sess.BackwardParams(loss, params...)
	}
	if params == nil {
		params = []Var{}
	}
	return t.backward("backward_params", []Var{loss}, nil, params)
}

// backward checks the arguments of a backward pass from the outputs ys and runs it: seeds == nil
// stands for the cotangent 1 of each (each must have one element), otherwise seeds[i] is a
// borrowed cotangent of ys[i]'s shape; keep == nil keeps every gradient (dense mode), otherwise
// only those of the nodes in keep, each of which must require grad.
func (t *Tape) backward(op string, ys []Var, seeds []*ops.Buffer, keep []Var) error {
	if len(ys) == 0 || seeds != nil && len(seeds) != len(ys) {
		t.failf(op, "%d outputs and %d seeds (want as many, at least one)", len(ys), len(seeds))
		return t.err
	}
	vs, ok := t.args(op, append(slices.Clone(ys), keep...)...)
	if !ok {
		return t.err
	}
	var mark []bool
	if keep != nil {
		mark = make([]bool, len(t.nodes))
		for k, p := range keep {
			if !t.nodes[p.id].requires {
				t.failf(op, "parameter %d (node %d, %s %v) does not require grad", k, p.id, t.nodes[p.id].name, vs[len(ys)+k].shape)
				return t.err
			}
			mark[p.id] = true
		}
	}
	fail := func(err error) error {
		t.fail(opFailed(op, err))
		return t.err
	}
	if t.done {
		return fail(errors.New("the tape was already differentiated (Reset it and record again)"))
	}
	for i, y := range ys {
		if !t.nodes[y.id].requires {
			return fail(fmt.Errorf("the output (node %d, %s) does not require grad", y.id, t.nodes[y.id].name))
		}
		if seeds == nil && size(vs[i].shape) != 1 {
			return fail(fmt.Errorf("the output has shape %v; a seed cotangent is needed unless it has one element (BackwardWith)", vs[i].shape))
		}
		if seeds != nil {
			if _, err := t.newValue(seeds[i], vs[i].shape); err != nil {
				return fail(fmt.Errorf("seed %d: %w", i, err))
			}
		}
	}
	// The owned seeds, summed per output node.
	t.grads = make([]*ops.Buffer, len(t.nodes))
	last := 0
	for i, y := range ys {
		var g *ops.Buffer
		var err error
		if seeds == nil {
			g, err = ops.Full(t.dev, 1, 1)
		} else {
			g, err = ops.Copy(seeds[i])
		}
		if err == nil && t.grads[y.id] != nil {
			var sum *ops.Buffer
			sum, err = ops.Add(t.grads[y.id], g)
			g.Release()
			t.grads[y.id].Release()
			g = sum
		}
		if err != nil {
			t.releaseGrads()
			return fail(err)
		}
		t.grads[y.id] = g
		last = max(last, y.id)
	}
	return t.run(op, last, mark)
}

// run is the reverse sweep from node last down, the seeds already in t.grads. keep == nil is the
// dense mode (every gradient kept); otherwise only the gradients of the nodes marked in keep are
// kept, and only nodes that depend on one of them are differentiated.
func (t *Tape) run(op string, last int, keep []bool) error {
	t.done = true
	fail := func(err error) error {
		t.releaseGrads()
		t.fail(err)
		return t.err
	}
	// active[i]: node i is differentiated (it requires grad and, with keep, depends on a kept node).
	active := make([]bool, len(t.nodes))
	for i := range t.nodes {
		n := &t.nodes[i]
		switch {
		case !n.requires:
		case keep == nil:
			active[i] = true
		default:
			active[i] = keep[i] || slices.ContainsFunc(n.parents, func(p int) bool { return active[p] })
		}
	}
	t.unreached = make([]bool, len(t.nodes))
	if t.swept != nil {
		if err := t.swept(last + 1); err != nil {
			return fail(err)
		}
	}
	for id := last; id >= 0; id-- {
		n := &t.nodes[id]
		g := t.grads[id]
		if g != nil && active[id] && n.back != nil {
			if err := t.step(n, g, active); err != nil {
				return fail(fmt.Errorf("autograd: %s: VJP of %s (node %d): %w", op, n.name, id, err))
			}
		}
		releaseWork(n)
		if g != nil && keep != nil && !keep[id] {
			g.Release()
			t.grads[id] = nil
		}
		if t.swept != nil {
			if err := t.swept(id); err != nil {
				return fail(err)
			}
		}
	}
	for i := range t.nodes {
		releaseWork(&t.nodes[i])
		kept := t.nodes[i].requires
		if keep != nil {
			kept = keep[i]
		}
		if !kept || t.grads[i] != nil || t.taken != nil && t.taken[i] {
			continue
		}
		z, err := ops.Zeros(t.dev, size(t.nodes[i].val.shape))
		if err != nil {
			return fail(opFailed(op, err))
		}
		t.grads[i] = z
		t.unreached[i] = true
	}
	return nil
}

// step runs the VJP of n for its cotangent g and accumulates the gradients of its active
// parents.
func (t *Tape) step(n *node, g *ops.Buffer, active []bool) error {
	need := make([]bool, len(n.parents))
	for k, p := range n.parents {
		need[k] = active[p]
	}
	contrib, err := n.back(g, need)
	if err != nil {
		return err
	}
	if len(contrib) != len(n.parents) {
		releaseAll(contrib)
		return fmt.Errorf("%d gradients for %d parents", len(contrib), len(n.parents)) // a bug in the op
	}
	return t.accumulate(n, contrib, need)
}

// accumulate adds the gradient contributions of n's parents (owned, released here) into the
// parents' gradients: the first contribution is stored, later ones are summed.
func (t *Tape) accumulate(n *node, contrib []*ops.Buffer, need []bool) error {
	var err error
	for k, c := range contrib {
		if c == nil {
			continue
		}
		p := n.parents[k]
		switch {
		case err != nil || !need[k]:
			c.Release()
		case c.Len() != size(t.nodes[p].val.shape):
			err = fmt.Errorf("gradient of %d elements for parent %d of shape %v", c.Len(), k, t.nodes[p].val.shape) // a bug in the op
			c.Release()
		case t.grads[p] == nil:
			t.grads[p] = c
		default:
			var sum *ops.Buffer
			sum, err = ops.Add(t.grads[p], c)
			c.Release()
			if err == nil {
				t.grads[p].Release()
				t.grads[p] = sum
			}
		}
	}
	return err
}
