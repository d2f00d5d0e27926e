package ops

import (
	"math"
	"testing"

	"github.com/torchlean-go/torchlean/ptx"
)

func TestSoftmaxSemantics(t *testing.T) {
	for _, d := range devices(t) {
		x := mustBuf(t, d, []float32{1000, -1000, 3, 4, 1, 2, 3, 4})
		defer x.Release()
		mask := mustBuf(t, d, []float32{0, 1, 0, 0, 0, 0, 0, 0})
		defer mask.Release()
		r, err := MaskedSoftmax(x, mask, 2, 4)
		expect(t, "masked softmax", download(t, r, err), 0, 1, 0, 0, 0, 0, 0, 0)

		sm, err := Softmax(x, 2, 4)
		y := download(t, sm, err)
		e := []float64{math.Exp(-3), math.Exp(-2), math.Exp(-1), 1}
		z := e[0] + e[1] + e[2] + e[3]
		expect(t, "softmax", y, 1, 0, 0, 0, float32(e[0]/z), float32(e[1]/z), float32(e[2]/z), float32(e[3]/z))
		ls, err := LogSoftmax(x, 2, 4)
		expect(t, "log_softmax", download(t, ls, err)[4:], float32(-3-math.Log(z)), float32(-2-math.Log(z)),
			float32(-1-math.Log(z)), float32(-math.Log(z)))

		// VJPs against the float64 formulas on the second row.
		yb := mustBuf(t, d, y[4:])
		defer yb.Release()
		g := mustBuf(t, d, []float32{0.5, -1, 2, 0.25})
		defer g.Release()
		gv := []float64{0.5, -1, 2, 0.25}
		dot := 0.0
		for i := range gv {
			dot += gv[i] * float64(y[4+i])
		}
		dx, err := SoftmaxBwd(yb, g, 1, 4)
		got := download(t, dx, err)
		for i := range gv {
			want := float64(y[4+i]) * (gv[i] - dot)
			if math.Abs(float64(got[i])-want) > 1e-6 {
				t.Errorf("%s softmax_bwd[%d] = %v, want %v", d, i, got[i], want)
			}
		}
		if _, err := Softmax(x, 3, 4); err == nil {
			t.Error("softmax with a wrong shape accepted")
		}

		// Rows with infinite entries: NaN where the max is infinite (PyTorch's results), an
		// exact 0 (log: -Inf) for -Inf beside a finite max.
		inf := float32(math.Inf(1))
		xi := mustBuf(t, d, []float32{-inf, -inf, inf, 1, -inf, 1})
		defer xi.Release()
		nan := float32(math.NaN())
		sm, err = Softmax(xi, 3, 2)
		expect(t, "softmax of infinities", download(t, sm, err), nan, nan, nan, nan, 0, 1)
		ls, err = LogSoftmax(xi, 3, 2)
		expect(t, "log_softmax of infinities", download(t, ls, err), nan, nan, nan, nan, -inf, 0)
	}
}

// TestSoftmaxLongLaunch checks which long-row kernel runs and its dynamic shared memory on a
// few devices: the async kernels where a row fits in shared memory (sm_80 and later, 3 or 4
// groups, cols % 4 == 0), else the register kernels.
func TestSoftmaxLongLaunch(t *testing.T) {
	h100 := gpuFacts{arch: 90, sms: 132, sharedOptin: 232448}
	small := gpuFacts{arch: 90, sms: 132, sharedOptin: 131072}
	sm75 := gpuFacts{arch: 75, sms: 40, sharedOptin: 65536}
	soft := softmaxLongLaunch(ptx.SoftmaxFwdLong, ptx.SoftmaxFwdLongAsync)
	logs := softmaxLongLaunch(ptx.LogSoftmaxFwdLong, ptx.LogSoftmaxFwdLongAsync)
	for _, c := range []struct {
		name   string
		f      func([]int, gpuFacts) launchShape
		cols   int
		d      gpuFacts
		kernel *ptx.Kernel
		shared uint32
		block  uint32
	}{
		{"softmax 32768 h100", soft, 32768, h100, ptx.SoftmaxFwdLongAsync, 131072, 1024},
		{"log 32768 h100", logs, 32768, h100, ptx.LogSoftmaxFwdLongAsync, 131072, 1024},
		{"log 20000 h100", logs, 20000, h100, ptx.LogSoftmaxFwdLongAsync, 80000, 768},
		{"softmax 32768, row and static arrays do not fit", soft, 32768, small, ptx.SoftmaxFwdLong, 0, 1024},
		{"log 20001: cols % 4 != 0", logs, 20001, h100, ptx.LogSoftmaxFwdLong, 0, 768},
		{"softmax 16384: two groups", soft, 16384, h100, ptx.SoftmaxFwdLong, 0, 512},
		{"log 32768 sm_75", logs, 32768, sm75, ptx.LogSoftmaxFwdLong, 0, 1024},
	} {
		got := c.f([]int{4096, c.cols}, c.d)
		if got.kernel != c.kernel || got.shared != c.shared || got.block[0] != c.block {
			t.Errorf("%s: kernel %v, %d shared bytes, %d threads; want %v, %d, %d", c.name,
				got.kernel, got.shared, got.block[0], c.kernel, c.shared, c.block)
		}
	}
	if got := soft([]int{10, 32768}, h100).grid[0]; got != 10 {
		t.Errorf("async grid for 10 rows = %d, want 10 (one block per row up to one per SM)", got)
	}
}
