package ops

import (
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/internal/testenv"
)

// TestFirstKernelLatency measures the time from opening the device to the first kernel's result
// (run it alone, in a fresh process, with CUDA_CACHE_DISABLE=1 for an empty JIT cache). The
// target is 2 s.
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
}
