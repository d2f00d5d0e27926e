package autograd

import (
	"fmt"

	"github.com/torchlean-go/torchlean/ops"
)

// SetGradHook registers f (nil removes it), called during every later backward pass of the
// session (Backward, BackwardWith, BackwardFrom, BackwardParams) once for each parameter of the
// session, as soon as the pass can no longer change that parameter's gradient: PyTorch's
// per-parameter post-accumulate-grad hook, the moment a data-parallel trainer can start
// averaging a gradient while the rest of the backward pass runs.
//
// When f(p) is called, p.Grad() is final for this pass: the accumulated gradient with every
// contribution of this pass added, in the order Backward always adds them (the uses of p in
// recording order), so the bits are those of a pass without a hook; nil when p has none (never
// recorded with Use this step, frozen, or the loss does not depend on it, as PyTorch leaves
// .grad None). The pass does not read or write p.Grad() again, so f may hand the buffer to
// another goroutine (an all-reduce writing it in place, say) until Backward returns and beyond;
// the caller then owns the synchronization with the optimizer step.
//
// The order: first, before the reverse sweep, every parameter the pass cannot contribute to (no
// use of it is differentiated, or only nodes that the sweep never visits read its uses), in
// creation order; then each other parameter right after the VJP of the earliest-recorded node
// that reads one of its uses, which is the last node of the reverse sweep that can add to its
// gradient (parameters completed by the same node in creation order). A pass that fails before
// its sweep calls f for none; one that fails during the sweep, for some. An error returned by f
// stops the pass: Backward returns it and the session records it (the parameters already handed
// to f keep this pass's gradient).
//
// The cost with a hook set: one pass over the tape's edges per backward pass, and the gradients
// move into their parameters during the sweep instead of after it.
func (s *Session) SetGradHook(f func(p *Param) error) { s.gradHook = f }

// hookSweep returns the tape's swept callback of a backward pass keeping the gradients of
// inputs (leaves of this step): it moves each parameter's use gradients into the parameter and
// calls the hook at the parameter's completion point (see SetGradHook).
func (s *Session) hookSweep(inputs []Var) func(k int) error {
	n := len(s.nodes)
	kept := make([]bool, n)
	for _, v := range inputs {
		if s.owns(v) {
			kept[v.id] = true
		}
	}
	// first[i]: the smallest id of a node reading node i (n: none).
	first := make([]int, n)
	for i := range first {
		first[i] = n
	}
	for c := range s.nodes {
		for _, p := range s.nodes[c].parents {
			first[p] = min(first[p], c)
		}
	}
	// at[k]: the parameters completed once node k has run (at[n]: before the sweep).
	uses := map[*Param][]int{} // kept use leaves by parameter, in recording order
	for _, u := range s.uses {
		if s.owns(u.leaf) && kept[u.leaf.id] {
			uses[u.p] = append(uses[u.p], u.leaf.id)
		}
	}
	at := make([][]*Param, n+1)
	for _, p := range s.params {
		done := n
		for _, id := range uses[p] {
			done = min(done, first[id])
		}
		at[done] = append(at[done], p)
	}
	fire := func(p *Param) error {
		for _, id := range uses[p] {
			g := s.grads[id]
			if g == nil { // unreached: the tape fills in a zero that the session drops
				continue
			}
			s.grads[id], s.taken[id] = nil, true
			if err := p.addGrad(g); err != nil {
				return fmt.Errorf("autograd: backward: gradient of %s: %w", p.name, err)
			}
		}
		if err := s.gradHook(p); err != nil {
			return fmt.Errorf("autograd: backward: gradient hook of %s: %w", p.name, err)
		}
		return nil
	}
	started := false
	return func(k int) error {
		// The first call (k = last+1) completes every parameter whose uses only nodes above the
		// sweep's start read: those nodes never run.
		hi := k
		if !started {
			started, hi = true, n
		}
		for j := k; j <= hi; j++ {
			for _, p := range at[j] {
				if err := fire(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// GradOrZeros returns the accumulated gradient (owned by the parameter), first making it zeros
// of the parameter's size when there is none (PyTorch's p.grad = torch.zeros_like(p)): what a
// data-parallel trainer reduces for a parameter this rank did not use. An error is recorded in
// the session.
func (p *Param) GradOrZeros() (*ops.Buffer, error) {
	if p.grad != nil {
		return p.grad, nil
	}
	s := p.s
	if err := s.Err(); err != nil {
		return nil, err
	}
	if p.buf == nil {
		return nil, s.failf("grad", "%s was not created", p.name)
	}
	z, err := ops.Zeros(s.Device(), size(p.shape))
	if err != nil {
		return nil, s.fail(fmt.Errorf("autograd: gradient of %s: %w", p.name, err))
	}
	p.grad = z
	return z, nil
}
