package autograd

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/torchlean-go/torchlean/ops"
)

// Tape records the values computed on one device and how to differentiate them. The zero Tape
// is not usable: create one with NewTape. A Tape is not safe for concurrent use.
type Tape struct {
	dev   *ops.Device
	nodes []node
	err   error         // the first error (sticky until Reset)
	grads []*ops.Buffer // gradients of the last backward pass, by node id
	// unreached[i]: grads[i] is a filled-in zero, the output of the last pass not depending on
	// node i (the session leaves such parameters without a gradient, as PyTorch leaves None).
	unreached []bool
	done      bool   // a backward pass ran since the last Reset
	gen       uint64 // incremented by Reset: older handles are stale
	noGrad    bool   // inside NoGrad: new nodes do not require grad
	// sess is the session whose tape this is (nil for NewTape's): Backward, BackwardWith,
	// BackwardFrom, BackwardParams, Reset and Err called on the tape are the session's.
	sess *Session
	// limit bounds len(nodes): the node that would make it limit + 1 is refused with an error
	// (a session's Options.MaxTapeNodes; math.MaxInt, no bound, for NewTape's).
	limit int
	// swept, when set (a session's gradient hook, hook.go), is called by the reverse sweep with
	// k once every node of id >= k has run its VJP: first with last+1, then after each node.
	// taken[i]: the session moved grads[i] into its parameter during the sweep (no zero fill).
	swept func(k int) error
	taken []bool
}

// Var is a handle to a value recorded on a Tape. Handles are small values, compared with ==.
// The zero Var is invalid; it is what an op returns once the tape holds an error. A handle
// becomes stale when its tape is Reset.
type Var struct {
	t   *Tape
	id  int
	gen uint64
}

// Valid reports whether v refers to a value of its tape (not the zero Var, not stale).
func (v Var) Valid() bool { return v.t != nil && v.gen == v.t.gen && v.id < len(v.t.nodes) }

// value is a shape-erased tensor: row-major contents of a shape, len(buf) == product(shape).
type value struct {
	shape []int
	buf   *ops.Buffer
}

// len returns the number of elements of v.
func (v value) len() int { return size(v.shape) }

// releaser is what a node retains for its backward pass: a *ops.Buffer or an *ops.Indices.
type releaser interface{ Release() bool }

// backFn is the local VJP of a node: given the cotangent g of the node's value (borrowed), it
// returns one fresh gradient buffer per parent, in the order of the parents, or nil where
// need[k] is false (the engine then skips that parent).
type backFn func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error)

// node is one recorded computation step. Its id is its index in Tape.nodes.
type node struct {
	name     string // op name ("leaf", "const", "matmul"...), for messages
	val      value
	owned    bool // the tape releases val.buf on Reset (false for leaves and views)
	requires bool // reverse mode visits this node (a parent requires grad)
	parents  []int
	work     []releaser // forward workspace retained for back, released once back ran
	back     backFn
}

// NewTape returns an empty tape whose values live on dev (nil: ops.Default(), as for sessions).
func NewTape(dev *ops.Device) *Tape {
	if dev == nil {
		dev = ops.Default()
	}
	return &Tape{dev: dev, limit: math.MaxInt}
}

// Device returns the device of the tape's values.
func (t *Tape) Device() *ops.Device { return t.dev }

// Len returns the number of recorded nodes.
func (t *Tape) Len() int { return len(t.nodes) }

// Err returns the first error recorded since the last Reset, or nil. On a session's tape it is
// the session's Err.
func (t *Tape) Err() error {
	if t.sess != nil {
		return t.sess.Err()
	}
	return t.err
}

// Leaf records buf, holding the row-major contents of shape, as an input of the computation.
// With requiresGrad, backward passes compute its gradient. buf is borrowed: the tape never
// releases it, and it must stay live until the tape is Reset.
func (t *Tape) Leaf(buf *ops.Buffer, shape []int, requiresGrad bool) Var {
	op := "leaf"
	if !requiresGrad {
		op = "const"
	}
	if t.err != nil {
		return Var{}
	}
	v, err := t.newValue(buf, shape)
	if err != nil {
		return t.fail(opFailed(op, err))
	}
	return t.push(node{name: op, val: v, requires: requiresGrad})
}

// Const records buf as an input that needs no gradient: Leaf(buf, shape, false).
func (t *Tape) Const(buf *ops.Buffer, shape []int) Var { return t.Leaf(buf, shape, false) }

// newValue checks that buf is live, on the tape's device and holds product(shape) elements.
func (t *Tape) newValue(buf *ops.Buffer, shape []int) (value, error) {
	n, err := numel(shape)
	if err != nil {
		return value{}, err
	}
	if err := live(buf); err != nil {
		return value{}, err
	}
	if buf.Device() != t.dev {
		return value{}, fmt.Errorf("buffer on %s, tape on %s", buf.Device(), t.dev)
	}
	if buf.Len() != n {
		return value{}, fmt.Errorf("buffer of %d elements for shape %v", buf.Len(), shape)
	}
	return value{shape: append([]int{}, shape...), buf: buf}, nil
}

// live returns the error that using b would give (nil, released).
func live(b *ops.Buffer) error { return b.Err() }

// numel returns the number of elements of shape; a count above math.MaxInt/4 (its bytes would
// overflow) is an error, so that no product of dimensions wraps around.
func numel(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d == 0 {
			n = 0
		}
	}
	if n == 0 {
		return 0, nil
	}
	for _, d := range shape {
		if d > math.MaxInt/4/n {
			return 0, fmt.Errorf("shape %v has too many elements", shape)
		}
		n *= d
	}
	return n, nil
}

// size is numel for shapes already checked.
func size(shape []int) int {
	n, _ := numel(shape)
	return n
}

// Value returns the value of v, or nil for an invalid handle. The buffer belongs to the tape
// (or, for a leaf, to the caller) and stays valid until Reset; copy it (ops.Copy) to keep it.
func (t *Tape) Value(v Var) *ops.Buffer {
	if !t.owns(v) {
		return nil
	}
	return t.nodes[v.id].val.buf
}

// Shape returns a copy of the shape of v, or nil for an invalid handle.
func (t *Tape) Shape(v Var) []int {
	if !t.owns(v) {
		return nil
	}
	return append([]int{}, t.nodes[v.id].val.shape...)
}

// RequiresGrad reports whether backward passes reach v: a leaf that asked for it, or a value
// computed from one.
func (t *Tape) RequiresGrad(v Var) bool { return t.owns(v) && t.nodes[v.id].requires }

// Grad returns the gradient of v computed by the last backward pass, or nil when that pass
// kept none for v (or v is invalid). The buffer belongs to the tape and stays valid until Reset.
func (t *Tape) Grad(v Var) *ops.Buffer {
	if !t.owns(v) || v.id >= len(t.grads) {
		return nil
	}
	return t.grads[v.id]
}

// NoGrad runs f with gradient recording off, like PyTorch's torch.no_grad(): every node
// recorded inside f (leaves included) requires no grad, so backward passes never go through
// it. Values are computed as usual. Nodes recorded before or after f are not affected.
func (t *Tape) NoGrad(f func()) {
	prev := t.noGrad
	t.noGrad = true
	defer func() { t.noGrad = prev }()
	f()
}

// Reset releases every buffer the tape owns (op results, retained workspace, gradients,
// prepared indices), forgets all nodes and clears the error. Buffers passed in by the caller
// are not released. Handles from before the Reset become stale. On a session's tape it is the
// session's Reset (which also releases the step's inputs and keeps the session's error).
func (t *Tape) Reset() {
	if t.sess != nil {
		t.sess.Reset()
		return
	}
	t.reset()
}

// reset is Reset of the tape alone.
func (t *Tape) reset() {
	t.releaseGrads()
	for i := range t.nodes {
		n := &t.nodes[i]
		releaseWork(n)
		if n.owned {
			n.val.buf.Release()
		}
	}
	clear(t.nodes) // drop the references held by closures
	t.nodes = t.nodes[:0]
	t.err, t.done = nil, false
	t.gen++
}

func (t *Tape) releaseGrads() {
	for _, g := range t.grads {
		g.Release()
	}
	t.grads = nil
}

func releaseWork(n *node) {
	release(n.work)
	n.work = nil
}

// owns reports whether v is a current handle of t.
func (t *Tape) owns(v Var) bool { return v.t == t && v.gen == t.gen && v.id < len(t.nodes) }

// fail records err (unless an error is already recorded) and returns the invalid handle.
func (t *Tape) fail(err error) Var {
	if t.err == nil {
		t.err = err
	}
	return Var{}
}

// opError is the error err of the autograd op named op: its message is "autograd: <op>: " and
// err's own message without a leading "ops: " or "autograd: " and, after it, without a repeated
// "<op>: " (an error of the kernel the op is named after, or a custom op's own); it wraps err.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	msg := strings.TrimPrefix(strings.TrimPrefix(e.err.Error(), "ops: "), "autograd: ")
	return "autograd: " + e.op + ": " + strings.TrimPrefix(msg, e.op+": ")
}

func (e *opError) Unwrap() error { return e.err }

// opFailed names op in err.
func opFailed(op string, err error) error { return &opError{op, err} }

// failf records the error "autograd: op: message".
func (t *Tape) failf(op, format string, args ...any) Var {
	return t.fail(fmt.Errorf("autograd: %s: %s", op, fmt.Sprintf(format, args...)))
}

// ErrInvalidVar is the error (wrapped; compare with errors.Is) of an op given a handle that is
// not a current one of its tape: the zero Var, a Var made stale by Reset, or one of another tape.
var ErrInvalidVar = errors.New("invalid Var (the zero Var, stale after Reset, or from another tape)")

// liveArgs checks that the buffers of vs are live, so that a released one is an error of op
// rather than of an op it is composed of.
func (t *Tape) liveArgs(op string, vs []value) bool {
	for _, v := range vs {
		if err := v.buf.Err(); err != nil {
			t.fail(opFailed(op, err))
			return false
		}
	}
	return true
}

// args returns the values of the operands of op, or false (with the error recorded) when the
// tape holds an error or a handle is invalid.
func (t *Tape) args(op string, vs ...Var) ([]value, bool) {
	if t.err != nil {
		return nil, false
	}
	out := make([]value, len(vs))
	for k, v := range vs {
		if !t.owns(v) {
			t.fail(fmt.Errorf("autograd: %s: operand %d: %w", op, k, ErrInvalidVar))
			return nil, false
		}
		out[k] = t.nodes[v.id].val
	}
	return out, true
}

// arg is args for one operand.
func (t *Tape) arg(op string, v Var) (value, bool) {
	vs, ok := t.args(op, v)
	if !ok {
		return value{}, false
	}
	return vs[0], true
}

func (t *Tape) push(n node) Var {
	if len(t.nodes) >= t.limit { // one compare per node: the check costs nothing measurable
		return t.overflow(n)
	}
	if t.noGrad {
		n.requires = false
	}
	t.nodes = append(t.nodes, n)
	return Var{t: t, id: len(t.nodes) - 1, gen: t.gen}
}

// overflow refuses n, the node beyond the tape's bound (Options.MaxTapeNodes), releasing what it
// owns, and records the error.
func (t *Tape) overflow(n node) Var {
	if n.owned {
		n.val.buf.Release()
	}
	release(n.work)
	return t.failf(n.name, "the tape holds %d nodes recorded since the last Reset, its bound (Options.MaxTapeNodes): "+
		"the loop probably misses a Reset, which ends each step and releases its values; if one step really "+
		"records more, raise MaxTapeNodes (-1: no bound)", len(t.nodes))
}

// record appends the node of op: its result y of the given shape (err is the forward's error:
// it is recorded, and y and work are released), the workspace its backward needs, its parents
// and its VJP. The node requires grad when a parent does.
func (t *Tape) record(op string, shape []int, y *ops.Buffer, err error, work []releaser, parents []Var, back backFn) Var {
	if err == nil {
		if n, e := numel(shape); e != nil {
			err = e // a result shape whose product overflows, from inputs with no elements
		} else if y.Len() != n {
			err = fmt.Errorf("result of %d elements for shape %v", y.Len(), shape) // a bug in the op
		}
	}
	if err != nil {
		y.Release()
		release(work)
		return t.fail(opFailed(op, err))
	}
	n := node{name: op, val: value{shape: shape, buf: y}, owned: true, work: work, back: back}
	for _, p := range parents {
		n.parents = append(n.parents, p.id)
		n.requires = n.requires || t.nodes[p.id].requires
	}
	return t.push(n)
}

// view records a node whose value shares the buffer of x under another shape (no copy, not
// owned: x's owner releases it). Its VJP copies the cotangent.
func (t *Tape) view(op string, x Var, vx value, shape []int) Var {
	n := node{name: op, val: value{shape: shape, buf: vx.buf}, parents: []int{x.id},
		requires: t.nodes[x.id].requires,
		back: func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
			return grads(need, func() (*ops.Buffer, error) { return ops.Copy(g) })
		}}
	return t.push(n)
}

// grads runs the gradient function of each parent that needs one (nil for the others). On an
// error it releases what it computed.
func grads(need []bool, fs ...func() (*ops.Buffer, error)) ([]*ops.Buffer, error) {
	out := make([]*ops.Buffer, len(fs))
	for k, f := range fs {
		if !need[k] {
			continue
		}
		var err error
		if out[k], err = f(); err != nil {
			releaseAll(out)
			return nil, err
		}
	}
	return out, nil
}

func releaseAll(bs []*ops.Buffer) {
	for _, b := range bs {
		b.Release()
	}
}

// then runs the ops in order, each consuming the previous result, and releases every
// intermediate result: then(x, f, g) is g(f(x)) with f(x) released. The first op borrows x.
func then(x *ops.Buffer, fs ...func(*ops.Buffer) (*ops.Buffer, error)) (*ops.Buffer, error) {
	cur := x
	for _, f := range fs {
		next, err := f(cur)
		if cur != x {
			cur.Release()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}
