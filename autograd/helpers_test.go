package autograd_test

import (
	"fmt"
	"testing"

	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// forDevices runs f on the CPU and on CUDA device 0; the CUDA run skips when no GPU is usable,
// unless TORCHLEAN_REQUIRE_CUDA=1. It checks that f leaves the live bytes of the device where
// it found them (tests release everything they create).
func forDevices(t *testing.T, f func(t *testing.T, d *ops.Device)) {
	run := func(t *testing.T, d *ops.Device) {
		base := d.Stats().LiveBytes
		f(t, d)
		if got := d.Stats().LiveBytes; got != base {
			t.Errorf("live bytes %d after the test, %d before: the test or the tape leaked", got, base)
		}
	}
	t.Run("cpu", func(t *testing.T) { run(t, ops.CPU()) })
	t.Run("cuda", func(t *testing.T) {
		d, err := ops.Open("cuda")
		testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
		run(t, d)
	})
}

// upload returns a buffer holding v (float32-rounded); the test releases it.
func upload(t *testing.T, d *ops.Device, v ...float64) *ops.Buffer {
	t.Helper()
	b, err := ops.FromFloat64(d, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// values downloads b (nil gives nil).
func values(t *testing.T, b *ops.Buffer) []float64 {
	t.Helper()
	if b == nil {
		return nil
	}
	v, err := b.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// coords returns the coordinates of the flat index i in shape (row-major).
func coords(i int, shape []int) []int {
	c := make([]int, len(shape))
	for j := len(shape) - 1; j >= 0; j-- {
		c[j] = i % shape[j]
		i /= shape[j]
	}
	return c
}

// flat returns the flat index of coordinates c in shape.
func flat(c, shape []int) int {
	i := 0
	for j, d := range shape {
		i = i*d + c[j]
	}
	return i
}
