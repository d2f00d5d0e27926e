package autograd_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// TestCrossEntropyIdx: the cross-entropy over label positions prepared on the device (refilled
// with ops.Indices.Update between steps, as a captured step does) gives CrossEntropy's and
// CrossEntropyIgnore's loss and logits gradient bit for bit, in both scatter modes.
func TestCrossEntropyIdx(t *testing.T) {
	defer ops.SetDeterministic(ops.Deterministic())
	const rows, classes = 7, 5
	batches := [][]int{
		{0, 4, 2, -100, 2, 1, -100},
		{3, -100, 1, 1, 0, -100, 4}, // the same count of ignored rows: the positions keep their length
		{2, 2, -100, 0, -100, 3, 3},
	}
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, det := range []bool{false, true} {
			ops.SetDeterministic(det)
			s := autograd.NewSession(autograd.Options{Device: d, Seed: 5})
			w := s.ParamNormal("w", []int{rows, classes}, 0, 2)
			step := func(f func(x autograd.Var) autograd.Var) (float32, []float64) {
				s.Reset()
				w.ZeroGrad()
				loss := f(s.Use(w))
				if err := s.Backward(loss); err != nil {
					t.Fatal(err)
				}
				return s.Item(loss), values(t, w.Grad())
			}
			var pos *ops.Indices
			for k, labels := range batches {
				p, err := autograd.LabelPositions(labels, classes, true, -100)
				if err != nil {
					t.Fatal(err)
				}
				if pos == nil {
					if pos, err = ops.NewIndices(d, p); err != nil {
						t.Fatal(err)
					}
				} else if err := pos.Update(p); err != nil {
					t.Fatal(err)
				}
				wl, wg := step(func(x autograd.Var) autograd.Var { return s.CrossEntropyIgnore(x, labels, -100) })
				gl, gg := step(func(x autograd.Var) autograd.Var { return s.CrossEntropyIdx(x, pos) })
				if math.Float32bits(gl) != math.Float32bits(wl) || !slices.Equal(gg, wg) {
					t.Errorf("%s det %v batch %d: loss %v and gradient %v, want %v and %v", d, det, k, gl, gg, wl, wg)
				}
			}
			// Without ignored rows it is CrossEntropy.
			labels := []int{1, 0, 4, 4, 2, 3, 0}
			p, _ := autograd.LabelPositions(labels, classes, false, 0)
			all, err := ops.NewIndices(d, p)
			if err != nil {
				t.Fatal(err)
			}
			wl, wg := step(func(x autograd.Var) autograd.Var { return s.CrossEntropy(x, labels) })
			gl, gg := step(func(x autograd.Var) autograd.Var { return s.CrossEntropyIdx(s.Reshape(x, 1, rows, classes), all) })
			if math.Float32bits(gl) != math.Float32bits(wl) || !slices.Equal(gg, wg) {
				t.Errorf("%s det %v: CrossEntropyIdx %v, CrossEntropy %v", d, det, gl, wl)
			}
			s.Reset()
			if v := s.CrossEntropyIdx(s.Use(w), nil); v.Valid() || s.Err() == nil || !strings.Contains(s.Err().Error(), "nil label positions") {
				t.Errorf("nil positions: %v", s.Err())
			}
			s.Close()
			pos.Release()
			all.Release()
		}
	})
	if _, err := autograd.LabelPositions([]int{0, 5}, 5, false, 0); err == nil || !strings.Contains(err.Error(), "label 5 at position 1 is outside [0, 5)") {
		t.Errorf("label out of range: %v", err)
	}
	if p, err := autograd.LabelPositions([]int{-1, 2, -1}, 3, true, -1); err != nil || !slices.Equal(p, []int{5}) {
		t.Errorf("LabelPositions with ignored rows: %v, %v", p, err)
	}
}
