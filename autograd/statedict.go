package autograd

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/torchlean-go/torchlean/ops"
)

// StateDict returns a copy of every parameter's value, keyed by its name, with its shape
// (PyTorch's model.state_dict()). The tensors are the caller's: save them with SaveTensorsFile
// and release them with ReleaseTensors. It works after the session recorded an error (not after
// Close), so that the last good parameters can still be saved.
func (s *Session) StateDict() (map[string]NamedTensor, error) {
	if s.closed {
		return nil, ErrClosed
	}
	out := make(map[string]NamedTensor, len(s.params))
	for _, p := range s.params {
		if p.buf == nil {
			continue // a parameter whose creation failed
		}
		b, err := ops.Copy(p.buf)
		if err != nil {
			ReleaseTensors(out)
			return nil, fmt.Errorf("autograd: state_dict: %s: %w", p.name, err)
		}
		out[p.name] = NamedTensor{Shape: slices.Clone(p.shape), Buf: b}
	}
	return out, nil
}

// LoadStateDict sets each parameter named in ts to that tensor's values (PyTorch's
// load_state_dict), copied to the session's device (ts stays the caller's; a tensor may live on
// another device, e.g. as LoadTensorsFile read it onto the CPU). Each tensor must have its
// parameter's shape. With strict, every parameter must have a tensor and every tensor a
// parameter, as PyTorch's strict=True asks (a BatchNorm's num_batches_tracked may be missing,
// as in state dicts saved before PyTorch had it: it keeps its value). Such a mismatch is returned without loading anything
// and without recording an error in the session; a device error while copying is recorded, and
// leaves every parameter as it was too.
func (s *Session) LoadStateDict(ts map[string]NamedTensor, strict bool) error {
	if err := s.Err(); err != nil {
		return err
	}
	byName := make(map[string]*Param, len(s.params))
	var problems, missing []string
	for _, p := range s.params {
		byName[p.name] = p
		if _, ok := ts[p.name]; !ok && strict && !p.optional {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, "no tensor for "+strings.Join(missing, ", "))
	}
	names := slices.Sorted(maps.Keys(ts))
	var unexpected []string
	for _, name := range names {
		t, p := ts[name], byName[name]
		switch {
		case p == nil:
			if strict {
				unexpected = append(unexpected, name)
			}
		case t.Buf.Err() != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", name, t.Buf.Err()))
		case !slices.Equal(t.Shape, p.shape) || t.Buf.Len() != size(p.shape):
			problems = append(problems, fmt.Sprintf("%s: tensor of shape %v (%d elements) for a parameter of shape %v",
				name, t.Shape, t.Buf.Len(), p.shape))
		}
	}
	if len(unexpected) > 0 {
		problems = append(problems, "no parameter for "+strings.Join(unexpected, ", "))
	}
	if len(problems) > 0 {
		return fmt.Errorf("autograd: load_state_dict: %s", strings.Join(problems, "; "))
	}
	// Copy every tensor first, so that a device error leaves every parameter as it was.
	copies := make(map[*Param]*ops.Buffer, len(names))
	for _, name := range names {
		if p := byName[name]; p != nil {
			b, err := ts[name].Buf.To(s.Device())
			if err != nil {
				for _, b := range copies {
					b.Release()
				}
				return s.fail(fmt.Errorf("autograd: load_state_dict: %s: %w", name, err))
			}
			copies[p] = b
		}
	}
	for p, b := range copies {
		p.replace(b)
		p.updated()
	}
	return nil
}
