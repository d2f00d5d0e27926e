package ops

import (
	"math"
	"strings"
	"testing"
)

func TestLayoutSemantics(t *testing.T) {
	nan := float32(math.NaN())
	for _, d := range devices(t) {
		x := mustBuf(t, d, []float32{1, 2, 3, 4, 5, nan})
		defer x.Release()
		r, err := Transpose2d(x, 2, 3)
		expect(t, "transpose", download(t, r, err), 1, 4, 2, 5, 3, nan)
		r, err = ReduceSumByRow(x, 2, 3)
		expect(t, "sum rows", download(t, r, err), 6, nan)
		r, err = ReduceMaxByRow(x, 3, 2)
		expect(t, "max rows", download(t, r, err), 2, 4, nan)
		r, err = ReduceSumByColumn(x, 3, 2)
		expect(t, "sum cols", download(t, r, err), 9, nan)
		r, err = ReduceMaxByColumn(x, 2, 3)
		expect(t, "max cols", download(t, r, err), 4, 5, nan)
		v := mustBuf(t, d, []float32{7, 8})
		defer v.Release()
		r, err = BroadcastVecToRows(v, 2, 2)
		expect(t, "to rows", download(t, r, err), 7, 8, 7, 8)
		r, err = BroadcastVecToCols(v, 2, 3)
		expect(t, "to cols", download(t, r, err), 7, 7, 7, 8, 8, 8)
		r, err = Concat1d(v, x, 2, 6)
		expect(t, "concat", download(t, r, err), 7, 8, 1, 2, 3, 4, 5, nan)
		r, err = Slice1d(x, 6, 2, 3)
		expect(t, "slice", download(t, r, err), 3, 4, 5)
		// Empty reduced axes give zeros.
		e := mustBuf(t, d, nil)
		r, err = ReduceMaxByRow(e, 3, 0)
		expect(t, "max of empty rows", download(t, r, err), 0, 0, 0)
		r, err = ReduceSumByColumn(e, 0, 2)
		expect(t, "sum of empty columns", download(t, r, err), 0, 0)
		// Bad sizes are errors.
		if _, err := Slice1d(x, 6, 4, 3); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("slice past the end: %v", err)
		}
		if _, err := Transpose2d(x, 4, 2); err == nil {
			t.Error("transpose with a wrong shape accepted")
		}
		if _, err := Concat1d(v, x, 2, 5); err == nil {
			t.Error("concat with a wrong length accepted")
		}
		if _, err := BroadcastVecToRows(v, -1, 2); err == nil {
			t.Error("negative rows accepted")
		}
	}
}
