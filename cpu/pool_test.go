package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// poolGeom2 returns the pool kernel geometry array of a pooling of rank len(in) (1 or 2, or
// more) carried as PoolAxes axes, and the output sizes; ok is false when the padded input is
// smaller than the window on some axis.
func poolGeom2(in, k, s, p []int) (geom []uint32, out []int, ok bool) {
	const A = PoolAxes
	geom = make([]uint32, PoolGeomLen)
	d := len(in)
	for a := range A {
		geom[a], geom[A+a], geom[2*A+a], geom[3*A+a] = 1, 1, 1, 1
	}
	for j := range d {
		if in[j]+2*p[j] < k[j] {
			return nil, nil, false
		}
		o := (in[j]+2*p[j]-k[j])/s[j] + 1
		out = append(out, o)
		a := A - d + j
		geom[a], geom[A+a], geom[2*A+a], geom[3*A+a], geom[4*A+a] = uint32(in[j]), uint32(o), uint32(k[j]), uint32(s[j]), uint32(p[j])
	}
	return geom, out, true
}

// poolValues returns n values drawn to make ties, signed zeros, infinities and NaNs common.
func poolValues(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch r.IntN(12) {
		case 0:
			v[i] = float32(math.NaN())
		case 1:
			v[i] = float32(math.Inf(1))
		case 2:
			v[i] = float32(math.Inf(-1))
		case 3:
			v[i] = float32(math.Copysign(0, -1))
		case 4:
			v[i] = 0
		case 5, 6, 7:
			v[i] = float32(r.IntN(3) - 1) // ties
		default:
			v[i] = float32(r.NormFloat64())
		}
	}
	return v
}

// poolDiffBits reports the first index where a and b differ in bits, or -1; NaN payloads aside
// (any NaN matches any NaN, the mirror tests' rule: the payload of a sum of two NaNs depends on
// the operand order the compiler picks for the addition).
func poolDiffBits(a, b []float32) int {
	for i := range a {
		if a[i] != a[i] && b[i] != b[i] {
			continue
		}
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// poolChunks splits [0, n) into a few ranges with random ends (a worker's range may start and
// end inside a row).
func poolChunks(r *rand.Rand, n int) [][2]int {
	var c [][2]int
	for lo := 0; lo < n; {
		hi := min(n, lo+1+r.IntN(n))
		c = append(c, [2]int{lo, hi})
		lo = hi
	}
	return c
}

// checkPoolFast runs the rank-1/2 fast path of every specialized twin against the generic path
// on one geometry and compares the bits.
func checkPoolFast(t *testing.T, r *rand.Rand, nc int, in, k, s, p []int) {
	t.Helper()
	geom, out, ok := poolGeom2(in, k, s, p)
	if !ok {
		return
	}
	g := NewPoolGeom(geom, nc)
	fast := newPool2(g)
	if fast == nil {
		t.Fatalf("in %v k %v s %v p %v: no fast path", in, k, s, p)
	}
	iv, ov := nc, nc
	for j := range in {
		iv, ov = iv*in[j], ov*out[j]
	}
	x, gO := poolValues(r, iv), poolValues(r, ov)
	name := fmt.Sprintf("nc %d in %v k %v s %v p %v", nc, in, k, s, p)
	cmp := func(what string, want []float32, run func(y []float32, lo, hi int)) {
		t.Helper()
		got := make([]float32, len(want))
		for i := range got {
			got[i] = 12345 // every element must be written
		}
		chunks := poolChunks(r, len(want))
		r.Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
		for _, c := range chunks { // in any order: a range writes its own elements only
			run(got, c[0], c[1])
		}
		if i := poolDiffBits(got, want); i >= 0 {
			t.Fatalf("%s: %s[%d] = %v (%#x), generic %v (%#x)", name, what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
	want := make([]float32, ov)
	maxPool(maxOut{y: want}, x, g, 0, ov)
	cmp("max", want, func(y []float32, lo, hi int) { MaxPoolFwd(y, x, geom, nc, lo, hi) })
	idx := make([]float32, ov)
	maxPool(maxOut{idx: idx}, x, g, 0, ov)
	cmp("argmax", idx, func(y []float32, lo, hi int) { MaxPoolArgmax(y, x, geom, nc, lo, hi) })
	// The fused pass writes both, the same bits as the two passes.
	both := make([]float32, ov)
	cmp("max of the fused pass", want, func(y []float32, lo, hi int) { MaxPoolFwdArgmax(y, both, x, geom, nc, lo, hi) })
	cmp("argmax of the fused pass", idx, func(y []float32, lo, hi int) { MaxPoolFwdArgmax(both, y, x, geom, nc, lo, hi) })
	// Some offsets another argmax would give, so that covering windows disagree (padding cells
	// among them), and some that name no cell.
	hostile := []float32{float32(math.NaN()), -1, float32(g.kv), 0.5, float32(math.Copysign(0, -1)), 1e30, float32(math.Inf(-1)), -9.223372e18}
	for i := range idx {
		switch r.IntN(8) {
		case 0, 1:
			idx[i] = float32(r.IntN(g.kv))
		case 2:
			idx[i] = hostile[r.IntN(len(hostile))]
		}
	}
	want = make([]float32, iv)
	maxPoolBwd(want, idx, gO, g, 0, iv)
	cmp("max backward", want, func(y []float32, lo, hi int) { MaxPoolBwd(y, idx, gO, geom, nc, lo, hi) })
	for _, cip := range []bool{false, true} {
		want = make([]float32, ov)
		avgPool(want, x, g, cip, 0, ov)
		cmp(fmt.Sprintf("avg (countIncludePad %v)", cip), want, func(y []float32, lo, hi int) { AvgPoolFwd(y, x, geom, nc, cip, lo, hi) })
		want = make([]float32, iv)
		avgPoolBwd(want, gO, g, cip, 0, iv)
		cmp(fmt.Sprintf("avg backward (countIncludePad %v)", cip), want, func(y []float32, lo, hi int) { AvgPoolBwd(y, gO, geom, nc, cip, lo, hi) })
	}
}

// TestPool2FastMatchesGeneric compares the rank-2 (and rank-1) fast path of max pooling
// (forward, argmax, backward) and average pooling (forward and backward, both divisors) with the
// generic N-D path bit for bit: every window and stride 1 to 4 and 1 to 3 with padding 0 to
// k/2 per axis, on random sizes 1 to 40, channels 1 to 3, and the common geometries
// exhaustively over small sizes.
func TestPool2FastMatchesGeneric(t *testing.T) {
	for _, level := range vecLevels() { // the vector kernels of 2x2 stride 2 per kernel set
		t.Run(level, func(t *testing.T) {
			defer useVecLevel(useVecLevel(level))
			checkPool2Fast(t)
		})
	}
}

// checkPool2Fast is TestPool2FastMatchesGeneric on the kernel set in use.
func checkPool2Fast(t *testing.T) {
	if poolVector() { // the 2x2 stride-2 kernels of this set run (their results are compared below)
		row, y := make([]float32, 6), make([]float32, 3)
		if !max2x2s2Fast(maxOut{y: y}, row, row, 3) || !max2x2s2BwdFast(row, row, y, y, 3) ||
			!avg2x2s2Fast(y, row, row, 3) || !avg2x2s2BwdFast(row, row, y, 3) {
			t.Fatal("a 2x2 stride-2 vector kernel declines to run")
		}
	}
	r := rand.New(rand.NewPCG(26, 2))
	n := 0
	for kh := 1; kh <= 4; kh++ {
		for kw := 1; kw <= 4; kw++ {
			for sh := 1; sh <= 3; sh++ {
				for sw := 1; sw <= 3; sw++ {
					for ph := 0; ph <= kh/2; ph++ {
						for pw := 0; pw <= kw/2; pw++ {
							for range 3 {
								in := []int{1 + r.IntN(40), 1 + r.IntN(40)}
								if r.IntN(2) == 0 {
									in = []int{1 + r.IntN(12), 1 + r.IntN(12)}
								}
								checkPoolFast(t, r, 1+r.IntN(3), in, []int{kh, kw}, []int{sh, sw}, []int{ph, pw})
								n++
							}
						}
					}
				}
			}
		}
	}
	for k := 1; k <= 4; k++ {
		for s := 1; s <= 3; s++ {
			for p := 0; p <= k/2; p++ {
				for w := 1; w <= 40; w++ {
					checkPoolFast(t, r, 1+r.IntN(3), []int{w}, []int{k}, []int{s}, []int{p})
					n++
				}
			}
		}
	}
	for _, c := range [][2]int{{2, 2}, {2, 0}, {3, 1}, {3, 0}} { // 2x2 stride 2; 3x3 stride 2 pad 1
		k, p := c[0], c[1]
		for h := 1; h <= 20; h++ {
			for w := 1; w <= 20; w++ {
				checkPoolFast(t, r, 2, []int{h, w}, []int{k, k}, []int{2, 2}, []int{p, p})
				n++
			}
		}
	}
	// Rows wide enough for the 16-window vector paths of 2x2 stride 2 (and their tails).
	for h := 1; h <= 5; h++ {
		for w := 30; w <= 72; w++ {
			checkPoolFast(t, r, 3, []int{h, w}, []int{2, 2}, []int{2, 2}, []int{0, 0})
			checkPoolFast(t, r, 2, []int{h, w}, []int{2, 2}, []int{2, 2}, []int{1, 1})
			n += 2
		}
	}
	t.Logf("%d geometries", n)
}

// TestPool2FastScope checks which geometries take the fast path: ranks 1 and 2 with strides
// of at least 1, not rank 3 nor a stride of 0.
func TestPool2FastScope(t *testing.T) {
	for _, c := range []struct {
		in, k, s, p []int
		fast        bool
	}{
		{[]int{5}, []int{2}, []int{1}, []int{0}, true},
		{[]int{5, 6}, []int{2, 3}, []int{2, 1}, []int{1, 1}, true},
		{[]int{1, 6}, []int{1, 3}, []int{1, 1}, []int{0, 1}, true},
		{[]int{4, 5, 6}, []int{2, 2, 2}, []int{2, 2, 2}, []int{0, 0, 0}, false},
		{[]int{5, 6}, []int{2, 2}, []int{0, 1}, []int{0, 0}, false},
	} {
		s1 := make([]int, len(c.s))
		for j, s := range c.s {
			s1[j] = max(s, 1)
		}
		geom, _, ok := poolGeom2(c.in, c.k, s1, c.p)
		if !ok {
			t.Fatalf("in %v k %v: bad case", c.in, c.k)
		}
		for j, s := range c.s {
			geom[3*PoolAxes+PoolAxes-len(c.in)+j] = uint32(s)
		}
		if got := newPool2(NewPoolGeom(geom, 2)) != nil; got != c.fast {
			t.Errorf("in %v k %v s %v p %v: fast path %v, want %v", c.in, c.k, c.s, c.p, got, c.fast)
		}
	}
}

// BenchmarkPool2 times the specialized twins on the first pooling of examples/fashionmnist's
// CNN (64 images of 16 channels, 28x28, 2x2 stride 2), one worker, per kernel set (avx512, avx2,
// go); the Generic rows are the N-D path on the same geometry.
func BenchmarkPool2(b *testing.B) {
	for _, level := range vecLevels() {
		if level == "mixed" { // avx512's pooling
			continue
		}
		b.Run(level, func(b *testing.B) {
			defer useVecLevel(useVecLevel(level))
			benchPool2(b)
		})
	}
}

// benchPool2 is BenchmarkPool2 on the kernel set in use.
func benchPool2(b *testing.B) {
	const nc, n = 64 * 16, 28
	geom, _, _ := poolGeom2([]int{n, n}, []int{2, 2}, []int{2, 2}, []int{0, 0})
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, nc*n*n) // ReLU outputs, as in the CNN
	for i := range x {
		x[i] = float32(max(0, r.NormFloat64()))
	}
	ov := nc * (n / 2) * (n / 2)
	y, idx, gO, dx := make([]float32, ov), make([]float32, ov), make([]float32, ov), make([]float32, nc*n*n)
	for i := range gO {
		gO[i] = float32(r.NormFloat64())
	}
	MaxPoolArgmax(idx, x, geom, nc, 0, ov)
	b.Run("MaxFwd", func(b *testing.B) {
		for b.Loop() {
			MaxPoolFwd(y, x, geom, nc, 0, ov)
		}
	})
	b.Run("MaxArgmax", func(b *testing.B) {
		for b.Loop() {
			MaxPoolArgmax(y, x, geom, nc, 0, ov)
		}
	})
	b.Run("MaxFwdArgmax", func(b *testing.B) {
		for b.Loop() {
			MaxPoolFwdArgmax(y, gO, x, geom, nc, 0, ov)
		}
	})
	b.Run("MaxBwd", func(b *testing.B) {
		for b.Loop() {
			MaxPoolBwd(dx, idx, gO, geom, nc, 0, len(dx))
		}
	})
	g := NewPoolGeom(geom, nc)
	b.Run("MaxFwdGeneric", func(b *testing.B) {
		for b.Loop() {
			maxPool(maxOut{y: y}, x, g, 0, ov)
		}
	})
	b.Run("MaxBwdGeneric", func(b *testing.B) {
		for b.Loop() {
			maxPoolBwd(dx, idx, gO, g, 0, len(dx))
		}
	})
	b.Run("AvgFwd", func(b *testing.B) {
		for b.Loop() {
			AvgPoolFwd(y, x, geom, nc, false, 0, ov)
		}
	})
	b.Run("AvgBwd", func(b *testing.B) {
		for b.Loop() {
			AvgPoolBwd(dx, gO, geom, nc, false, 0, len(dx))
		}
	})
}

// TestPool2SizesDisagree checks the rank-2 twins on output sizes that are not in/2 for 2x2
// windows of stride 2 (the cpu API does not check them; ops builds them from the input): the
// whole-channel vector paths must not run, and the results are the generic path's.
func TestPool2SizesDisagree(t *testing.T) {
	for _, level := range vecLevels() {
		t.Run(level, func(t *testing.T) {
			defer useVecLevel(useVecLevel(level))
			checkPool2SizesDisagree(t)
		})
	}
}

// checkPool2SizesDisagree is TestPool2SizesDisagree on the kernel set in use.
func checkPool2SizesDisagree(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range [][4]int{{4, 6, 2, 2}, {4, 40, 2, 17}, {4, 5, 2, 3}, {5, 4, 3, 2}, {5, 33, 3, 17}, {3, 8, 2, 4}} {
		geom, _, _ := poolGeom2([]int{c[0], c[1]}, []int{2, 2}, []int{2, 2}, []int{0, 0})
		const A = PoolAxes
		geom[A+A-2], geom[A+A-1] = uint32(c[2]), uint32(c[3])
		const nc = 2
		g := NewPoolGeom(geom, nc)
		iv, ov := nc*c[0]*c[1], nc*c[2]*c[3]
		gO, idx := poolValues(r, ov), make([]float32, ov)
		for i := range idx {
			idx[i] = float32(r.IntN(4))
		}
		name := fmt.Sprintf("in %dx%d out %dx%d", c[0], c[1], c[2], c[3])
		want, got := make([]float32, iv), unwritten(iv)
		maxPoolBwd(want, idx, gO, g, 0, iv)
		MaxPoolBwd(got, idx, gO, geom, nc, 0, iv)
		if i := poolDiffBits(got, want); i >= 0 {
			t.Errorf("%s: max backward [%d] = %v, generic %v", name, i, got[i], want[i])
		}
		want, got = make([]float32, iv), unwritten(iv)
		avgPoolBwd(want, gO, g, true, 0, iv)
		AvgPoolBwd(got, gO, geom, nc, true, 0, iv)
		if i := poolDiffBits(got, want); i >= 0 {
			t.Errorf("%s: avg backward [%d] = %v, generic %v", name, i, got[i], want[i])
		}
	}
}
