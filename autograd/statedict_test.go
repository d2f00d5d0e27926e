package autograd_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// TestStateDictRoundTrip: StateDict, SaveTensorsFile, LoadTensorsFile (onto the CPU) and
// LoadStateDict give the parameters back bit for bit, also on a session on another device; a
// mismatch in strict mode loads nothing and leaves the session usable; non-strict loads the
// parameters it names.
func TestStateDictRoundTrip(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d, Seed: 3})
		defer s.Close()
		w := s.ParamNormal("layer.w", []int{3, 2}, 0, 1)
		b := s.Param("layer.b", []int{2}, []float32{0.5, -0.25})
		want, _ := w.Host()

		sd, err := s.StateDict()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "model.safetensors")
		err = autograd.SaveTensorsFile(path, sd, nil)
		autograd.ReleaseTensors(sd)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Set(make([]float32, 6)); err != nil {
			t.Fatal(err)
		}
		loaded, _, err := autograd.LoadTensorsFile(path, ops.CPU())
		if err != nil {
			t.Fatal(err)
		}
		defer autograd.ReleaseTensors(loaded)
		if err := s.LoadStateDict(loaded, true); err != nil {
			t.Fatal(err)
		}
		if got, err := w.Host(); err != nil || !slices.Equal(got, want) {
			t.Errorf("after LoadStateDict: %v (%v), want %v", got, err, want)
		}

		// Strict mismatches: nothing loaded, no session error.
		w.Set(make([]float32, 6))
		extra, _ := ops.Zeros(ops.CPU(), 4)
		defer extra.Release()
		bad := map[string]autograd.NamedTensor{"layer.w": loaded["layer.w"], "other": {Shape: []int{4}, Buf: extra}}
		err = s.LoadStateDict(bad, true)
		if err == nil || !strings.Contains(err.Error(), "no tensor for layer.b") || !strings.Contains(err.Error(), "no parameter for other") {
			t.Errorf("strict mismatch: %v", err)
		}
		if got, _ := w.Host(); !slices.Equal(got, make([]float32, 6)) || s.Err() != nil {
			t.Errorf("a failed strict load changed w to %v or recorded %v", got, s.Err())
		}
		reshaped := map[string]autograd.NamedTensor{"layer.w": {Shape: []int{2, 3}, Buf: loaded["layer.w"].Buf}}
		if err := s.LoadStateDict(reshaped, false); err == nil || !strings.Contains(err.Error(), "shape [2 3]") {
			t.Errorf("shape mismatch: %v", err)
		}
		// Non-strict: the named parameters only.
		if err := s.LoadStateDict(bad, false); err != nil {
			t.Fatal(err)
		}
		if got, _ := w.Host(); !slices.Equal(got, want) {
			t.Errorf("non-strict load: w %v, want %v", got, want)
		}
		if got, _ := b.Host(); !slices.Equal(got, []float32{0.5, -0.25}) {
			t.Errorf("non-strict load changed b to %v", got)
		}
		s.Close()
		if _, err := s.StateDict(); !errors.Is(err, autograd.ErrClosed) {
			t.Errorf("StateDict after Close: %v", err)
		}
	})
}
