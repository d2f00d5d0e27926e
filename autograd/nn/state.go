package nn

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// StateDict returns a copy of every parameter and buffer of m's tree keyed by its key in the
// tree, with its shape (PyTorch's model.state_dict()): the tensors are the caller's (release
// them with autograd.ReleaseTensors). A parameter whose creation failed is left out.
func StateDict(m Module) (map[string]autograd.NamedTensor, error) {
	out := map[string]autograd.NamedTensor{}
	for _, np := range NamedState(m) {
		v := np.Param.Value()
		if v == nil {
			continue
		}
		b, err := ops.Copy(v)
		if err != nil {
			autograd.ReleaseTensors(out)
			return nil, fmt.Errorf("nn: state dict: %s: %w", np.Key, err)
		}
		out[np.Key] = autograd.NamedTensor{Shape: np.Param.Shape(), Buf: b}
	}
	return out, nil
}

// LoadStateDict sets every parameter and buffer of m's tree to the tensor of its key in ts
// (PyTorch's load_state_dict; ts stays the caller's and may live on any device). Each tensor must
// have its parameter's shape. With strict, every key of the tree must be in ts (BatchNorm's
// num_batches_tracked may be missing) and every key of ts in the tree. A mismatch is an error
// naming the first one (in the tree's order, then unexpected keys in sorted order) that loads
// nothing.
func LoadStateDict(m Module, ts map[string]autograd.NamedTensor, strict bool) error {
	if err := checkState(m, ts, strict, nil); err != nil {
		return err
	}
	return loadState(m, ts)
}

// checkState checks ts against m's tree as LoadStateDict does; keys for which skip returns true
// are not m's (a checkpoint's other entries).
func checkState(m Module, ts map[string]autograd.NamedTensor, strict bool, skip func(string) bool) error {
	known := map[string]bool{}
	for _, np := range NamedState(m) {
		known[np.Key] = true
		t, ok := ts[np.Key]
		switch {
		case !ok && strict && !strings.HasSuffix(np.Key, "num_batches_tracked"):
			return fmt.Errorf("nn: load state dict: no tensor for %s (shape %v)", np.Key, np.Param.Shape())
		case ok && !slices.Equal(t.Shape, np.Param.Shape()):
			return fmt.Errorf("nn: load state dict: %s: a tensor of shape %v for a parameter of shape %v", np.Key, t.Shape, np.Param.Shape())
		}
	}
	if strict {
		for _, k := range slices.Sorted(maps.Keys(ts)) {
			if !known[k] && (skip == nil || !skip(k)) {
				return fmt.Errorf("nn: load state dict: unexpected key %s (shape %v): the model has no such parameter", k, ts[k].Shape)
			}
		}
	}
	return nil
}

// loadState copies the tensors of ts into m's parameters through the session's LoadStateDict
// (which checks every buffer before copying any). The parameters of one tree may belong to one
// session only.
func loadState(m Module, ts map[string]autograd.NamedTensor) error {
	bySession := map[*autograd.Session]map[string]autograd.NamedTensor{}
	for _, np := range NamedState(m) {
		t, ok := ts[np.Key]
		if !ok {
			continue
		}
		s := np.Param.Session()
		if bySession[s] == nil {
			bySession[s] = map[string]autograd.NamedTensor{}
		}
		bySession[s][np.Param.Name()] = t
	}
	for s, named := range bySession {
		if err := s.LoadStateDict(named, false); err != nil {
			return fmt.Errorf("nn: load state dict: %w", err)
		}
	}
	return nil
}

// SaveWeights writes m's StateDict to a safetensors file at path, atomically (autograd's
// SaveTensorsFile), for PyTorch's safetensors.torch.load_file and model.load_state_dict.
func SaveWeights(path string, m Module) error {
	ts, err := StateDict(m)
	if err != nil {
		return err
	}
	defer autograd.ReleaseTensors(ts)
	return autograd.SaveTensorsFile(path, ts, nil)
}

// LoadWeights reads a safetensors file of weights (one SaveWeights wrote, or PyTorch's
// safetensors.torch.save_file(model.state_dict(), path)) into m, as LoadStateDict.
func LoadWeights(path string, m Module, strict bool) error {
	ts, _, err := autograd.LoadTensorsFile(path, ops.CPU())
	if err != nil {
		return err
	}
	defer autograd.ReleaseTensors(ts)
	return LoadStateDict(m, ts, strict)
}
