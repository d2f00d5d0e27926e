package ops

import (
	"errors"
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

// TestConcatN: any number of buffers joined in order (empty ones and repeats included), on every
// device, with its errors; live bytes come back.
func TestConcatN(t *testing.T) {
	nan, negZero := float32(math.NaN()), float32(math.Copysign(0, -1))
	for _, d := range devices(t) {
		before := d.Stats().LiveBytes
		a := mustBuf(t, d, []float32{1, 2, nan})
		b := mustBuf(t, d, []float32{negZero, 5})
		e := mustBuf(t, d, nil)
		r, err := ConcatN(a, e, b, a)
		got := download(t, r, err)
		expect(t, "concat_n", got, 1, 2, nan, negZero, 5, 1, 2, nan)
		r, err = ConcatN(e, e)
		if got := download(t, r, err); len(got) != 0 {
			t.Errorf("concat_n of empty buffers: %v", got)
		}
		if _, err := ConcatN(); err == nil || err.Error() != "ops: concat_n: no buffers" {
			t.Errorf("concat_n of nothing: %v", err)
		}
		gone := mustBuf(t, d, []float32{1})
		gone.Release()
		if _, err := ConcatN(a, gone); !errors.Is(err, ErrReleased) || err.Error() != "ops: concat_n: use of released buffer" {
			t.Errorf("concat_n of a released buffer: %v", err)
		}
		if d != CPU() {
			c := mustBuf(t, CPU(), []float32{1})
			if _, err := ConcatN(a, c); err == nil {
				t.Errorf("concat_n across devices succeeded")
			}
			c.Release()
		}
		for _, x := range []*Buffer{a, b, e} {
			x.Release()
		}
		if after := d.Stats().LiveBytes; after != before {
			t.Errorf("%s: live bytes %d, want %d", d, after, before)
		}
	}
}
