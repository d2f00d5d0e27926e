//go:build linux && (amd64 || arm64) && !nocuda && !race

package ops

import (
	"testing"

	"github.com/torchlean-go/torchlean/driver"
)

// TestFFTRowLaunches counts the launches of one transform on the fake GPU: one with the row
// kernels, one per stage plus the packing passes without them (n = 1024: 5 stages; n = 8192:
// 6 stages), and Bluestein's inner FFTs as one fft_row each.
func TestFFTRowLaunches(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	count := func(n int, inverse bool) int64 {
		t.Helper()
		l := n
		if inverse {
			l = 2 * (n/2 + 1)
		}
		x, err := Zeros(d, 2*l)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Release()
		var y *Buffer
		run := func() {
			if inverse {
				y, err = Irfft1dPacked(x, 2, n)
			} else {
				y, err = Rfft1dPacked(x, 2, n)
			}
			if err != nil {
				t.Fatal(err)
			}
			y.Release()
		}
		run() // makes the plan
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		before := f.Launches()
		run()
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		return f.Launches() - before
	}
	for _, c := range []struct {
		n                int
		rows, stages     int64 // forward and inverse launches on each path
		rowsInv, stagesI int64
	}{
		{1024, 1, 6, 1, 7},
		{8192, 1, 7, 1, 8},
		{97, 7, 13, 7, 13},   // Bluestein, inner FFTs of 256 (4 stages): widen, pre, FFT, mul, FFT, post, post_odd
		{20020, 6, 6, 7, 7},  // complex length 10010 > fftRowMax: per stage either way
		{16384, 1, 8, 1, 9},  // complex length 8192 = fftRowMax
		{6561, 1, 10, 1, 10}, // 8 stages of 3
	} {
		if got := count(c.n, false); got != c.rows {
			t.Errorf("rfft n=%d: %d launches, want %d", c.n, got, c.rows)
		}
		if got := count(c.n, true); got != c.rowsInv {
			t.Errorf("irfft n=%d: %d launches, want %d", c.n, got, c.rowsInv)
		}
		withStageKernels(func() {
			if got := count(c.n, false); got != c.stages {
				t.Errorf("rfft n=%d per stage: %d launches, want %d", c.n, got, c.stages)
			}
			if got := count(c.n, true); got != c.stagesI {
				t.Errorf("irfft n=%d per stage: %d launches, want %d", c.n, got, c.stagesI)
			}
		})
	}
	checkFake(t, f)
}
