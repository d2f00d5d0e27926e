package ops

import (
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/internal/testenv"
)

// TestFirstKernelLatency measures the time from opening the device to the first kernel's result
// (run it alone, in a fresh process, with CUDA_CACHE_DISABLE=1 for an empty JIT cache). The
// target is 2 s. It then times the first matrix product and the first softmax, the largest
// kernels a training step meets first: each waits for its own kernel's JIT compilation only
// (1.6 s and 0.6 s on an H100, where a whole matmul module took 16 s), checked against 3 s.
func TestFirstKernelLatency(t *testing.T) {
	start := time.Now()
	d, err := Open("cuda")
	testenv.RequireCUDA(t, err == nil, "no CUDA device")
	x, err := Full(d, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	y, err := Exp(x)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := y.Float32s(); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	t.Logf("first kernel after start: %.3f s", elapsed.Seconds())
	if elapsed > 2*time.Second {
		t.Errorf("first kernel took %v, target 2 s", elapsed)
	}
	for _, first := range []struct {
		name string
		run  func() (*Buffer, error)
	}{
		{"matmul", func() (*Buffer, error) { return Bmm(x, x, 1, 2, 2, 2) }},
		{"softmax", func() (*Buffer, error) { return Softmax(x, 2, 2) }},
	} {
		start := time.Now()
		z, err := first.run()
		if err == nil {
			_, err = z.Float32s()
		}
		if err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		t.Logf("first %s: %.3f s", first.name, elapsed.Seconds())
		if elapsed > 3*time.Second {
			t.Errorf("first %s took %v: more than one kernel's JIT compilation? (bound 3 s)", first.name, elapsed)
		}
	}
}
