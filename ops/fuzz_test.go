package ops_test

import (
	"testing"

	"github.com/torchlean-go/torchlean/ops"
)

// FuzzShapes calls the ops that take shapes, axes and indices with arbitrary ones (on small
// buffers): each must return an error or a buffer of the length the shape asks for, never panic.
func FuzzShapes(f *testing.F) {
	f.Add(int64(2), int64(3), int64(4), int64(1), int64(0), uint8(0), int64(6))
	f.Add(int64(0), int64(1<<32), int64(1<<32), int64(-1), int64(7), uint8(3), int64(0))
	f.Add(int64(1), int64(6148914691236517206), int64(0), int64(2), int64(1), uint8(9), int64(12))
	f.Fuzz(func(t *testing.T, a, b, c, d, e int64, op uint8, n int64) {
		d0 := ops.CPU()
		n = n % 64
		if n < 0 {
			n = -n
		}
		x, err := ops.Zeros(d0, int(n))
		if err != nil {
			t.Fatal(err)
		}
		defer x.Release()
		dims := []int{int(a), int(b), int(c)}
		check := func(y *ops.Buffer, err error, want int) {
			if err == nil {
				if want >= 0 && y.Len() != want {
					t.Errorf("op %d %v: length %d, want %d", op, dims, y.Len(), want)
				}
				y.Release()
			}
		}
		prod := func(xs ...int) int {
			p := 1
			for _, v := range xs {
				p *= v
			}
			return p
		}
		switch op % 10 {
		case 0:
			y, err := ops.ReduceSumAxis(x, dims, int(d))
			want := -1
			if err == nil && int(d) >= 0 && int(d) < 3 {
				rest := append(append([]int{}, dims[:d]...), dims[d+1:]...)
				want = prod(rest...)
			}
			check(y, err, want)
		case 1:
			y, err := ops.BroadcastTo(x, dims[:1], dims, []int{int(d), int(e)})
			check(y, err, -1)
		case 2:
			y, err := ops.ReduceFromBroadcastTo(x, dims[:2], dims, []int{int(d), int(e)})
			check(y, err, -1)
		case 3:
			y, err := ops.SwapAdjacentAtDepth(x, dims, int(d))
			check(y, err, int(n))
		case 4:
			y, err := ops.Slice1d(x, int(n), int(a), int(b))
			check(y, err, int(b))
		case 5:
			y, err := ops.Transpose2d(x, int(a), int(b))
			check(y, err, int(n))
		case 6:
			y, err := ops.GatherRows(x, int(a), int(b), []int{int(c), int(d)})
			check(y, err, -1)
		case 7:
			y, err := ops.ScatterAddRows(x, x, int(a), int(b), []int{int(c)})
			check(y, err, int(n))
		case 8:
			y, err := ops.BmmWithTranspose(x, x, int(a), int(b), int(c), int(d), e%2 == 0, e%3 == 0)
			check(y, err, -1)
		case 9:
			y, err := ops.Softmax(x, int(a), int(b))
			check(y, err, int(n))
		}
	})
}
