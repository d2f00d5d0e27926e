package autograd_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// ExampleClipGradNormDevice clips on the device (no download: a captured step may call it) and
// reads the norm after the step.
func ExampleClipGradNormDevice() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	w := s.Param("w", []int{2}, []float32{1, 1})
	s.Backward(s.Sum(s.Mul(s.Use(w), s.Input([]float32{3, 4}, 2)))) // gradient (3, 4), norm 5
	norm, _ := autograd.ClipGradNormDevice(s.Params(), 1)
	defer norm.Release()
	n, _ := norm.Float32s()
	g, _ := w.Grad().Float32s()
	fmt.Printf("norm %v, clipped gradient (%.4f, %.4f)\n", n[0], g[0], g[1])
	// Output: norm 5, clipped gradient (0.6000, 0.8000)
}

// ExampleTape_CrossEntropyIdx computes a cross-entropy from label positions on the device,
// refilled between steps.
func ExampleTape_CrossEntropyIdx() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	logits := s.Input([]float32{0, 0, 0, 0}, 2, 2)
	p, _ := autograd.LabelPositions([]int{1, -100}, 2, true, -100) // the second row ignored
	pos, _ := ops.NewIndices(s.Device(), p)
	defer pos.Release()
	fmt.Printf("%.4f\n", s.Item(s.CrossEntropyIdx(logits, pos)))
	p, _ = autograd.LabelPositions([]int{-100, 0}, 2, true, -100)
	pos.Update(p) // between steps: the same memory, new labels
	fmt.Printf("%.4f\n", s.Item(s.CrossEntropyIdx(logits, pos)))
	// Output:
	// 0.6931
	// 0.6931
}
