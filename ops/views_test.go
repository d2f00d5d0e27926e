package ops

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
)

// dl runs f and downloads (and releases) its result.
func dl(t *testing.T, f func() (*Buffer, error)) []float32 {
	t.Helper()
	b, err := f()
	return download(t, b, err)
}

// strides returns the row-major strides of dims.
func strides(dims []int) []int {
	s := make([]int, len(dims))
	p := 1
	for j := len(dims) - 1; j >= 0; j-- {
		s[j] = p
		p *= dims[j]
	}
	return s
}

func numel(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// coords returns the coordinates of flat index i in dims.
func coords(i int, dims []int) []int {
	c := make([]int, len(dims))
	for j := len(dims) - 1; j >= 0; j-- {
		c[j] = i % dims[j]
		i /= dims[j]
	}
	return c
}

// broadcastSource returns, for every output element, the input element it reads (the
// definition of broadcastTo in the seeds' convention).
func broadcastSource(inDims, outDims, axisMap []int) []int {
	ins := strides(inDims)
	src := make([]int, numel(outDims))
	for i := range src {
		c := coords(i, outDims)
		off := 0
		for j, m := range axisMap {
			if m != 0 && inDims[m-1] != 1 {
				off += c[j] * ins[m-1]
			}
		}
		src[i] = off
	}
	return src
}

// viewCases are broadcasts (inDims, outDims, axisMap) covering every canonical pattern.
var viewCases = []struct{ in, out, axisMap []int }{
	{[]int{}, []int{}, []int{}},
	{[]int{}, []int{4, 5}, []int{0, 0}},
	{[]int{3}, []int{2, 3}, []int{0, 1}},
	{[]int{3, 1}, []int{3, 4}, []int{1, 2}},
	{[]int{1, 1}, []int{3, 4}, []int{1, 2}},
	{[]int{2, 3}, []int{2, 3}, []int{1, 2}},
	{[]int{4, 1, 3}, []int{2, 4, 5, 3}, []int{0, 1, 2, 3}},
	{[]int{1, 65, 1}, []int{17, 65, 33}, []int{1, 2, 3}},
	{[]int{7, 1, 9}, []int{7, 3, 9}, []int{1, 2, 3}},
	{[]int{5}, []int{2, 1, 3, 5}, []int{0, 0, 0, 1}},
	{[]int{2, 1, 3, 1}, []int{2, 2, 2, 3, 2, 2}, []int{0, 1, 2, 3, 4, 0}},
	{[]int{3, 0}, []int{2, 3, 0}, []int{0, 1, 2}},
	{[]int{1, 1, 1, 1, 1, 1, 1, 2}, []int{2, 2, 2, 2, 2, 2, 2, 2}, []int{1, 2, 3, 4, 5, 6, 7, 8}},
}

func TestBroadcastToAndAdjoint(t *testing.T) {
	for _, d := range devices(t) {
		for _, c := range viewCases {
			name := fmt.Sprintf("%v->%v by %v on %s", c.in, c.out, c.axisMap, d)
			x := mirrorInput(numel(c.in), 0, true, nil)
			src := broadcastSource(c.in, c.out, c.axisMap)
			xb := mustBuf(t, d, x)
			got := dl(t, func() (*Buffer, error) { return BroadcastTo(xb, c.in, c.out, c.axisMap) })
			if len(got) != len(src) {
				t.Fatalf("%s: %d elements, want %d", name, len(got), len(src))
			}
			for i, s := range src {
				if got[i] != x[s] {
					t.Fatalf("%s: out[%d] = %v, want x[%d] = %v", name, i, got[i], s, x[s])
				}
			}
			// The adjoint: small integers so that every order of addition is exact.
			g := make([]float32, len(src))
			want := make([]float32, len(x))
			for i := range g {
				g[i] = float32(int(cpu.SplitMix64(uint64(i))%7) - 3)
				want[src[i]] += g[i]
			}
			gb := mustBuf(t, d, g)
			r := dl(t, func() (*Buffer, error) { return ReduceFromBroadcastTo(gb, c.in, c.out, c.axisMap) })
			for i := range want {
				if r[i] != want[i] {
					t.Fatalf("%s: adjoint[%d] = %v, want %v", name, i, r[i], want[i])
				}
			}
			xb.Release()
			gb.Release()
		}
		x := mustBuf(t, d, []float32{1, 2, 3})
		for _, bad := range []struct {
			in, out, axisMap []int
			msg              string
		}{
			{[]int{3}, []int{2, 4}, []int{0, 1}, "cannot broadcast"},
			{[]int{3}, []int{3, 2}, []int{0}, "entries"},
			{[]int{3}, []int{3, 3}, []int{1, 1}, "increasing"},
			{[]int{3}, []int{3}, []int{2}, "increasing"},
			{[]int{3, 1}, []int{3}, []int{2}, "not in axisMap"},
			{[]int{3}, []int{1, 1, 1, 1, 1, 1, 1, 1, 3}, []int{0, 0, 0, 0, 0, 0, 0, 0, 1}, "rank"},
			{[]int{4}, []int{4}, []int{1}, "elements"},
		} {
			if _, err := BroadcastTo(x, bad.in, bad.out, bad.axisMap); err == nil || !strings.Contains(err.Error(), bad.msg) {
				t.Errorf("BroadcastTo(%v, %v, %v): %v, want an error about %q", bad.in, bad.out, bad.axisMap, err, bad.msg)
			}
		}
		x.Release()
	}
}

func TestSwapAdjacentAtDepth(t *testing.T) {
	for _, d := range devices(t) {
		for _, c := range []struct {
			dims  []int
			depth int
		}{{[]int{2, 3}, 0}, {[]int{2, 3, 4}, 0}, {[]int{2, 3, 4}, 1}, {[]int{5, 33, 65, 3}, 1},
			{[]int{3, 31, 257, 1}, 1}, {[]int{2, 1, 2, 1, 2, 1, 2, 3}, 6}, {[]int{4, 0, 3}, 0}} {
			n := numel(c.dims)
			x := mirrorInput(n, 0, false, nil)
			xb := mustBuf(t, d, x)
			got := dl(t, func() (*Buffer, error) { return SwapAdjacentAtDepth(xb, c.dims, c.depth) })
			od := append([]int(nil), c.dims...)
			od[c.depth], od[c.depth+1] = od[c.depth+1], od[c.depth]
			is := strides(c.dims)
			for i := range n {
				oc := coords(i, od)
				oc[c.depth], oc[c.depth+1] = oc[c.depth+1], oc[c.depth]
				s := 0
				for j, v := range oc {
					s += v * is[j]
				}
				if math.Float32bits(got[i]) != math.Float32bits(x[s]) && !(got[i] != got[i] && x[s] != x[s]) {
					t.Fatalf("swap %v at %d on %s: out[%d] = %v, want %v", c.dims, c.depth, d, i, got[i], x[s])
				}
			}
			xb.Release()
		}
		x := mustBuf(t, d, []float32{1, 2, 3, 4, 5, 6})
		for _, bad := range []struct {
			dims  []int
			depth int
		}{{[]int{6}, 0}, {[]int{2, 3}, 1}, {[]int{2, 3}, -1}, {[]int{3, 3}, 0}} {
			if _, err := SwapAdjacentAtDepth(x, bad.dims, bad.depth); err == nil {
				t.Errorf("SwapAdjacentAtDepth(%v, %d) accepted", bad.dims, bad.depth)
			}
		}
		x.Release()
	}
}

func TestReduceAxis(t *testing.T) {
	for _, d := range devices(t) {
		for _, c := range []struct {
			dims []int
			axis int
		}{{[]int{4, 5}, 0}, {[]int{4, 5}, 1}, {[]int{3, 130, 7}, 1}, {[]int{4, 3, 2, 5}, 2}, {[]int{2, 3, 4}, 2},
			{[]int{3, 0, 4}, 1}, {[]int{3, 0, 4}, 0}, {[]int{7}, 0}, {[]int{70, 1}, 0}} {
			n := numel(c.dims)
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(int(cpu.SplitMix64(uint64(i))%9) - 4)
			}
			outer, inner := numel(c.dims[:c.axis]), numel(c.dims[c.axis+1:])
			m := c.dims[c.axis]
			xb := mustBuf(t, d, x)
			sum := dl(t, func() (*Buffer, error) { return ReduceSumAxis(xb, c.dims, c.axis) })
			mean := dl(t, func() (*Buffer, error) { return ReduceMeanAxis(xb, c.dims, c.axis) })
			if len(sum) != outer*inner {
				t.Fatalf("%v axis %d: %d sums, want %d", c.dims, c.axis, len(sum), outer*inner)
			}
			for o := range outer {
				for i := range inner {
					var want float32
					for a := range m {
						want += x[(o*m+a)*inner+i]
					}
					if got := sum[o*inner+i]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%v axis %d on %s: sum[%d, %d] = %v, want %v", c.dims, c.axis, d, o, i, got, want)
					}
					wm := want / float32(m)
					if got := mean[o*inner+i]; got != wm && !(wm != wm && got != got) {
						t.Fatalf("%v axis %d on %s: mean[%d, %d] = %v, want %v", c.dims, c.axis, d, o, i, got, wm)
					}
				}
			}
			xb.Release()
		}
		s := mustBuf(t, d, []float32{-2.5})
		r, err := ReduceSumAxis(s, nil, 0)
		expect(t, "rank 0", download(t, r, err), -2.5)
		if _, err := ReduceSumAxis(s, []int{1}, 1); err == nil {
			t.Error("axis past the rank accepted")
		}
		if _, err := ReduceSumAxis(s, nil, 1); err == nil {
			t.Error("axis 1 of a rank-0 buffer accepted")
		}
		s.Release()
	}
}
