// Package nn is the module layer over autograd's Session: what torch.nn, torch.nn.init,
// torch.optim.lr_scheduler and torch.utils.data give a PyTorch user, in Go's explicit style.
//
// A model is a tree of modules. Each module embeds Base, registers its parameters, buffers and
// child modules under names, and records its forward pass on the session it was made in;
// parameters take part in a step by being used in Forward, never by listing them by hand:
//
//	s := autograd.NewSession(autograd.Options{Seed: 1})
//	model := nn.NewMLP(s, []int{784, 256, 10}, nn.MLPOptions{})  // Linear, ReLU, Linear
//	opt := autograd.NewAdamW(nn.Parameters(model), autograd.DefaultAdamW())
//	for step := range steps {
//		s.Reset()
//		loss := s.CrossEntropy(model.Forward(s.Input(x, 64, 784)), labels)
//		s.Backward(loss)
//		opt.Step()
//		opt.ZeroGrad()
//	}
//
// Names follow PyTorch's state_dict keys ("0.weight", "encoder.layers.1.bias"), so StateDict and
// LoadStateDict exchange weights through safetensors files with PyTorch models of the same
// structure. Train and Eval switch a whole tree between training and evaluation mode, which
// Dropout and BatchNorm obey (PyTorch's model.train() and model.eval()).
//
// Initializers (KaimingUniform, XavierNormal, TruncNormal, ...) draw from the session's
// counter-based generator on the host, so a model starts from the same bits on every device.
//
// Errors follow the session's rule: a layer's Forward records the first error in the session
// and returns the invalid zero Var; constructors that fail record their error too (Err on the
// session reports it). Registering a module under an empty, dotted or duplicate name is a
// programming error and panics, as a malformed struct literal would fail to compile.
package nn

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/torchlean-go/torchlean/autograd"
)

// Module is anything with parameters, buffers and child modules: a type that embeds Base (or
// *Base) and registers them in its constructor. Its forward pass is a method of the type; those
// that map one value to one value implement Layer.
type Module interface {
	base() *Base
}

// Layer is a module whose forward pass maps one value to one value (Linear, LayerNorm, an
// activation, Sequential), so layers can be chained.
type Layer interface {
	Module
	Forward(x autograd.Var) autograd.Var
}

// Base is the registry every module embeds: its parameters, buffers and children by name, in
// registration order, and its training flag. The zero Base is an empty module in training mode.
type Base struct {
	eval    bool
	entries []entry
}

// entry is one registered name: a parameter (buffer: a state that is saved but not trained, as
// BatchNorm's running statistics) or a child module.
type entry struct {
	name   string
	param  *autograd.Param
	buffer bool
	child  Module
}

func (b *Base) base() *Base { return b }

// Training reports whether the module is in training mode (the default; PyTorch's
// module.training). Train and Eval set it for a whole tree.
func (b *Base) Training() bool { return !b.eval }

// RegisterParameter adds p as a trainable parameter named name (PyTorch's register_parameter).
// It panics when name is empty, contains a dot or is taken: names are fixed by the module's code.
func (b *Base) RegisterParameter(name string, p *autograd.Param) {
	b.register(entry{name: name, param: p})
}

// RegisterBuffer adds p as a buffer named name: saved and loaded by StateDict and
// LoadStateDict, left out of Parameters (PyTorch's register_buffer). p should not require grad.
// It panics as RegisterParameter does.
func (b *Base) RegisterBuffer(name string, p *autograd.Param) {
	b.register(entry{name: name, param: p, buffer: true})
}

// RegisterModule adds m as a child named name (PyTorch's add_module): its parameters' keys get
// the prefix name + ".". It panics as RegisterParameter does, or when m is nil.
func (b *Base) RegisterModule(name string, m Module) {
	if m == nil || m.base() == nil {
		panic(fmt.Sprintf("nn: RegisterModule(%q): nil module", name))
	}
	b.register(entry{name: name, child: m})
}

func (b *Base) register(e entry) {
	if e.name == "" || strings.Contains(e.name, ".") {
		panic(fmt.Sprintf("nn: register %q: a name must be non-empty and without dots", e.name))
	}
	if slices.ContainsFunc(b.entries, func(o entry) bool { return o.name == e.name }) {
		panic(fmt.Sprintf("nn: register %q: the name is taken", e.name))
	}
	b.entries = append(b.entries, e)
}

// NamedParam is a parameter with its key in the module tree ("layers.0.weight").
type NamedParam struct {
	Key   string
	Param *autograd.Param
}

// walk calls f for every parameter and buffer of m's tree in registration order (depth first),
// with its key; a parameter reachable twice (shared between modules) is visited at its first key
// only, as PyTorch's named_parameters does.
func walk(m Module, f func(key string, p *autograd.Param, buffer bool)) {
	seen := map[*autograd.Param]bool{}
	var visit func(prefix string, m Module)
	visit = func(prefix string, m Module) {
		for _, e := range m.base().entries {
			switch {
			case e.child != nil:
				visit(prefix+e.name+".", e.child)
			case e.param != nil && !seen[e.param]:
				seen[e.param] = true
				f(prefix+e.name, e.param, e.buffer)
			}
		}
	}
	visit("", m)
}

// NamedParameters returns the trainable parameters of m's tree (not the buffers) with their
// keys, in registration order (PyTorch's named_parameters).
func NamedParameters(m Module) []NamedParam {
	var out []NamedParam
	walk(m, func(key string, p *autograd.Param, buffer bool) {
		if !buffer {
			out = append(out, NamedParam{key, p})
		}
	})
	return out
}

// Parameters returns the trainable parameters of m's tree in registration order, for an
// optimizer (PyTorch's model.parameters()).
func Parameters(m Module) []*autograd.Param {
	var out []*autograd.Param
	for _, np := range NamedParameters(m) {
		out = append(out, np.Param)
	}
	return out
}

// NamedState returns every parameter and buffer of m's tree with its key: the entries of
// StateDict, in registration order.
func NamedState(m Module) []NamedParam {
	var out []NamedParam
	walk(m, func(key string, p *autograd.Param, _ bool) { out = append(out, NamedParam{key, p}) })
	return out
}

// NumParameters returns the number of trainable scalars of m's tree.
func NumParameters(m Module) int {
	n := 0
	for _, p := range Parameters(m) {
		n += numel(p.Shape())
	}
	return n
}

// Train puts m's whole tree in training mode (PyTorch's model.train()) and returns m.
func Train[M Module](m M) M {
	setTraining(m, true)
	return m
}

// Eval puts m's whole tree in evaluation mode (PyTorch's model.eval()): Dropout passes its
// input through and BatchNorm uses its running statistics. It returns m.
func Eval[M Module](m M) M {
	setTraining(m, false)
	return m
}

func setTraining(m Module, on bool) {
	b := m.base()
	b.eval = !on
	for _, e := range b.entries {
		if e.child != nil {
			setTraining(e.child, on)
		}
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// lastID numbers the modules made by this package, for their parameters' session names.
var lastID atomic.Uint64

// sessionName returns a fresh session-wide name for a parameter of a module of the given kind
// ("Linear#3.weight"): a session's parameter names must be unique, and a module does not know
// its key in the tree when it is made. Keys (NamedParameters, StateDict) are the names users
// see; the session name shows in autograd's messages and in Session.StateDict.
func sessionName(kind, field string, id uint64) string {
	return fmt.Sprintf("%s#%d.%s", kind, id, field)
}
