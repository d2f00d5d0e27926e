package ops

import (
	"math"
	"testing"
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
	}
}
