package autograd_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// The real FFT on the tape, as torch.fft.rfft and irfft (both differentiable): the spectrum of
// a cosine, and the round trip back to it (Σ back·x = Σ x² = 2).
func ExampleTape_Rfft() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	x := s.Input([]float32{1, 0, -1, 0}, 4) // cos(2πj/4)
	spec := s.Rfft(x)                       // (3 bins, re/im)
	back := s.Irfft(spec, 4)
	fmt.Println(s.Shape(spec), s.Item(s.Sum(s.Mul(back, x))))
	v, _ := s.Value(spec).Float32s()
	fmt.Println(v)
	fmt.Println("error:", s.Err())
	// Output:
	// [3 2] 2
	// [0 0 2 0 0 0]
	// error: <nil>
}
