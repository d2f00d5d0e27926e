package autograd

import (
	"fmt"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Backward runs reverse mode from loss, a value of one element, with the seed cotangent 1. It is
// BackwardWith(loss, ones).
func (t *Tape) Backward(loss Var) error { return t.backward("backward", loss, nil, nil) }

// BackwardWith runs dense reverse mode from y with the cotangent seed (borrowed; it holds
// y's shape): afterwards every node that requires grad has a gradient (Grad), zeros where y does
// not depend on it. Gradients of nodes used several times accumulate. Each node's retained
// workspace is released as soon as its VJP ran. A tape runs one backward pass per Reset.
func (t *Tape) BackwardWith(y Var, seed *ops.Buffer) error {
	return t.backward("backward", y, seed, nil)
}

// BackwardParams is Backward(loss) keeping only the gradients of params (usually leaves): every
// other gradient is released as soon as its node's VJP consumed it, and only the nodes on a path
// from a parameter to loss are differentiated. A parameter that loss does not depend on gets a
// zero gradient. Each parameter must require grad.
func (t *Tape) BackwardParams(loss Var, params ...Var) error {
	if params == nil {
		params = []Var{}
	}
	return t.backward("backward_params", loss, nil, params)
}

// backward checks the arguments of a backward pass from y and runs it: seed == nil stands for the
// cotangent 1 (y must have one element), otherwise it is a borrowed cotangent of y's shape;
// keep == nil keeps every gradient (dense mode), otherwise only those of the nodes in keep, each
// of which must require grad.
func (t *Tape) backward(op string, y Var, seed *ops.Buffer, keep []Var) error {
	vs, ok := t.args(op, append([]Var{y}, keep...)...)
	if !ok {
		return t.err
	}
	var mark []bool
	if keep != nil {
		mark = make([]bool, len(t.nodes))
		for k, p := range keep {
			if !t.nodes[p.id].requires {
				t.failf(op, "parameter %d (node %d, %s %v) does not require grad", k, p.id, t.nodes[p.id].name, vs[k+1].shape)
				return t.err
			}
			mark[p.id] = true
		}
	}
	var own *ops.Buffer
	var err error
	if seed == nil {
		if size(vs[0].shape) != 1 {
			t.failf(op, "the output has shape %v; a seed cotangent is needed unless it has one element (BackwardWith)", vs[0].shape)
			return t.err
		}
		own, err = ops.Full(t.dev, 1, 1)
	} else {
		if _, err := t.newValue(seed, vs[0].shape); err != nil {
			t.fail(fmt.Errorf("autograd: %s: seed: %w", op, err))
			return t.err
		}
		own, err = ops.Copy(seed)
	}
	if err != nil {
		t.fail(fmt.Errorf("autograd: %s: %w", op, err))
		return t.err
	}
	return t.run(op, y, own, mark)
}

// run is the reverse sweep from out with the owned seed. keep == nil is the dense mode (every
// gradient kept); otherwise only the gradients of the nodes marked in keep are kept, and only
// nodes that depend on one of them are differentiated.
func (t *Tape) run(op string, out Var, seed *ops.Buffer, keep []bool) error {
	var err error
	switch {
	case t.done:
		err = fmt.Errorf("autograd: %s: the tape was already differentiated (Reset it and record again)", op)
	case !t.nodes[out.id].requires:
		err = fmt.Errorf("autograd: %s: the output (node %d, %s) does not require grad", op, out.id, t.nodes[out.id].name)
	}
	if err != nil {
		seed.Release()
		t.fail(err)
		return t.err
	}
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
	t.grads = make([]*ops.Buffer, len(t.nodes))
	t.unreached = make([]bool, len(t.nodes))
	t.grads[out.id] = seed
	for id := out.id; id >= 0; id-- {
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
	}
	for i := range t.nodes {
		releaseWork(&t.nodes[i])
		kept := t.nodes[i].requires
		if keep != nil {
			kept = keep[i]
		}
		if !kept || t.grads[i] != nil {
			continue
		}
		z, err := ops.Zeros(t.dev, size(t.nodes[i].val.shape))
		if err != nil {
			return fail(fmt.Errorf("autograd: %s: %w", op, err))
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
