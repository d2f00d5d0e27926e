package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
)

// poolRef is a direct, slow statement of the pooling arithmetic of cpu/pool.go: windows walked
// by decoding each window offset w = 0, 1, ... (row-major), and the backward's windows found by
// testing every output in ascending order. It gives the bits the kernels must give.
type poolRef struct {
	nc                int
	in, out, k, s, p  []int
	kv, inVol, outVol int
}

func newPoolRef(t *testing.T, shape []int, p PoolParams) *poolRef {
	out, err := PoolOutShape(shape, p)
	if err != nil {
		t.Fatal(err)
	}
	d := len(p.Kernel)
	r := &poolRef{nc: numel(shape[:len(shape)-d]), in: shape[len(shape)-d:], out: out[len(out)-d:], k: p.Kernel,
		s: p.Stride, p: p.Padding, kv: numel(p.Kernel)}
	if r.s == nil {
		r.s = p.Kernel
	}
	if r.p == nil {
		r.p = make([]int, d)
	}
	r.inVol, r.outVol = numel(r.in), numel(r.out)
	return r
}

// cell returns the input offset (in the channel) of window offset w of output o (spatial flat
// index), and whether it is in bounds.
func (r *poolRef) cell(o, w int) (int, bool) {
	oc, wc := coords(o, r.out), coords(w, r.k)
	off := 0
	for a := range r.in {
		x := oc[a]*r.s[a] - r.p[a] + wc[a]
		if x < 0 || x >= r.in[a] {
			return 0, false
		}
		off = off*r.in[a] + x
	}
	return off, true
}

// offsetIn returns the window offset of input cell i (spatial flat) in output o's window, if any.
func (r *poolRef) offsetIn(o, i int) (int, bool) {
	oc, ic := coords(o, r.out), coords(i, r.in)
	w := 0
	for a := range r.in {
		c := ic[a] - (oc[a]*r.s[a] - r.p[a])
		if c < 0 || c >= r.k[a] {
			return 0, false
		}
		w = w*r.k[a] + c
	}
	return w, true
}

func (r *poolRef) maxFwd(x []float32, arg bool) []float32 {
	y := make([]float32, r.nc*r.outVol)
	for n := range r.nc {
		for o := range r.outVol {
			best, first, at := float32(0), true, 0
			for w := range r.kv {
				if off, ok := r.cell(o, w); ok {
					v := x[n*r.inVol+off]
					if first || v > best || (v != v && best == best) {
						best, first, at = v, false, w
					}
				}
			}
			y[n*r.outVol+o] = best
			if arg {
				y[n*r.outVol+o] = float32(at)
			}
		}
	}
	return y
}

func (r *poolRef) count(o int, cip bool) int {
	if cip {
		return r.kv
	}
	c := 0
	for w := range r.kv {
		if _, ok := r.cell(o, w); ok {
			c++
		}
	}
	return c
}

func (r *poolRef) avgFwd(x []float32, cip bool) []float32 {
	y := make([]float32, r.nc*r.outVol)
	for n := range r.nc {
		for o := range r.outVol {
			acc := float32(0)
			for w := range r.kv {
				if off, ok := r.cell(o, w); ok {
					acc += x[n*r.inVol+off]
				}
			}
			y[n*r.outVol+o] = acc / float32(r.count(o, cip))
		}
	}
	return y
}

func (r *poolRef) smoothStats(x []float32, beta float32, n, o int) (p, s float32) {
	val := func(w int) float32 {
		if off, ok := r.cell(o, w); ok {
			return x[n*r.inVol+off]
		}
		return 0
	}
	p = val(0)
	for w := 1; w < r.kv; w++ {
		if v := val(w); (beta > 0 && v > p) || (beta < 0 && v < p) || (v != v && p == p) {
			p = v
		}
	}
	for w := range r.kv {
		v := val(w)
		d := v - p
		if v == p {
			d = 0
		}
		s += cpu.Expf(float32(beta * d))
	}
	return p, s
}

func (r *poolRef) smoothFwd(x []float32, beta float32) []float32 {
	y := make([]float32, r.nc*r.outVol)
	for n := range r.nc {
		for o := range r.outVol {
			p, s := r.smoothStats(x, beta, n, o)
			y[n*r.outVol+o] = p + cpu.Logf(s)/beta
		}
	}
	return y
}

// bwd gathers, for each input element, contrib(n, o, w) over the outputs o whose window holds
// it, in ascending order.
func (r *poolRef) bwd(contrib func(n, o, w, i int) (float32, bool)) []float32 {
	dx := make([]float32, r.nc*r.inVol)
	for n := range r.nc {
		for i := range r.inVol {
			acc := float32(0)
			for o := range r.outVol {
				if w, ok := r.offsetIn(o, i); ok {
					if c, use := contrib(n, o, w, n*r.inVol+i); use {
						acc += c
					}
				}
			}
			dx[n*r.inVol+i] = acc
		}
	}
	return dx
}

// poolRefGeoms are random geometries of rank 1 to 3 (and one of rank 8), batch 0 to 2.
func poolRefGeoms() []poolMirrorGeom {
	r := rand.New(rand.NewPCG(7, 11))
	var gs []poolMirrorGeom
	for c := range 60 {
		d := 1 + c%3
		shape := []int{c % 3, 1 + r.IntN(3)}
		if c%7 == 0 {
			shape = shape[1:] // one sample
		}
		p := PoolParams{}
		for range d {
			k := 1 + r.IntN(4)
			shape = append(shape, r.IntN(9))
			p.Kernel = append(p.Kernel, k)
			p.Stride = append(p.Stride, 1+r.IntN(3))
			p.Padding = append(p.Padding, r.IntN(k/2+1))
		}
		gs = append(gs, poolMirrorGeom{fmt.Sprintf("%v/%+v", shape, p), shape, p})
	}
	gs = append(gs, poolMirrorGeom{"rank8", []int{2, 3, 2, 3, 2, 3, 2, 3, 4},
		PoolParams{Kernel: []int{2, 1, 2, 3, 1, 2, 2, 2}, Stride: []int{1, 2, 1, 1, 1, 2, 1, 2}, Padding: []int{1, 0, 0, 1, 0, 1, 0, 1}}})
	return gs
}

// TestPoolReference: every pooling, forward and backward, gives the bits of poolRef on random
// geometries (with ties, NaN and infinities in some inputs).
func TestPoolReference(t *testing.T) {
	for _, d := range devices(t) {
		for gi, geo := range poolRefGeoms() {
			ref := newPoolRef(t, geo.shape, geo.p)
			n, m := numel(geo.shape), ref.nc*ref.outVol
			x, g := poolInputs(n, m, gi%2 == 1, gi%5 == 4, uint64(gi))
			check := func(what string, got []float32, err error, want []float32) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s %s: %v", geo.tag, what, err)
				}
				if i := poolDiff(got, want); i >= 0 {
					t.Fatalf("%s %s: [%d] = %v, reference %v", geo.tag, what, i, got[i], want[i])
				}
			}
			xb, gb := mustBuf(t, d, x), mustBuf(t, d, g)
			y, err := MaxPoolND(xb, geo.shape, geo.p)
			check("max", download(t, y, err), nil, ref.maxFwd(x, false))
			idx := ref.maxFwd(x, true)
			dx, err := MaxPoolNDBackward(xb, gb, geo.shape, geo.p)
			check("max bwd", download(t, dx, err), nil, ref.bwd(func(n, o, w, _ int) (float32, bool) {
				return g[n*ref.outVol+o], idx[n*ref.outVol+o] == float32(w)
			}))
			for _, cip := range []bool{false, true} {
				p := geo.p
				p.CountIncludePad = cip
				y, err := AvgPoolND(xb, geo.shape, p)
				check(fmt.Sprint("avg cip=", cip), download(t, y, err), nil, ref.avgFwd(x, cip))
				dx, err := AvgPoolNDBackward(gb, geo.shape, p)
				check(fmt.Sprint("avg bwd cip=", cip), download(t, dx, err), nil, ref.bwd(func(n, o, _, _ int) (float32, bool) {
					return g[n*ref.outVol+o] / float32(ref.count(o, cip)), true
				}))
			}
			for _, beta := range []float32{1, -0.75, 20} {
				p := geo.p
				p.Beta = float64(beta)
				y, err := SmoothMaxPoolND(xb, geo.shape, p)
				check(fmt.Sprint("smooth beta=", beta), download(t, y, err), nil, ref.smoothFwd(x, beta))
				dx, err := SmoothMaxPoolNDBackward(xb, gb, geo.shape, p)
				check(fmt.Sprint("smooth bwd beta=", beta), download(t, dx, err), nil, ref.bwd(func(n, o, _, i int) (float32, bool) {
					pv, s := ref.smoothStats(x, beta, n, o)
					dd := x[i] - pv
					if x[i] == pv {
						dd = 0
					}
					return float32(g[n*ref.outVol+o] * (cpu.Expf(float32(beta*dd)) / s)), true
				}))
			}
			xb.Release()
			gb.Release()
		}
	}
}

// poolDiff returns the first index where got and want differ in bits (any NaN matches any
// NaN), or -1; a length mismatch is index 0.
func poolDiff(got, want []float32) int {
	if len(got) != len(want) {
		return 0
	}
	for i := range got {
		if got[i] != got[i] && want[i] != want[i] {
			continue
		}
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i
		}
	}
	return -1
}

// TestPoolSmall: hand-checked values: ties go to the first maximum, NaN is the maximum, padding
// is skipped (max), counted (avg, count_include_pad) and read as 0 (smooth), and a smooth
// maximum of a window holding +Inf is +Inf.
func TestPoolSmall(t *testing.T) {
	d := CPU()
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	x := mustBuf(t, d, []float32{1, 3, 3, 2, -1, -5, nan, 4})
	defer x.Release()
	g := mustBuf(t, d, []float32{10, 20, 30, 40})
	defer g.Release()
	shape, p := []int{1, 8}, PoolParams{Kernel: []int{2}}
	y, err := MaxPoolND(x, shape, p)
	if got := download(t, y, err); poolDiff(got, []float32{3, 3, -1, nan}) >= 0 {
		t.Errorf("max = %v", got)
	}
	dx, err := MaxPoolNDBackward(x, g, shape, p)
	if got := download(t, dx, err); poolDiff(got, []float32{0, 10, 20, 0, 30, 0, 40, 0}) >= 0 {
		t.Errorf("max bwd = %v", got)
	}
	// Overlapping windows (k 3, s 1, pad 1): the middle 3 is the first maximum of no window
	// but it ties, so windows 1..3 all pick index 1.
	p = PoolParams{Kernel: []int{3}, Stride: []int{1}, Padding: []int{1}}
	x4 := mustBuf(t, d, []float32{1, 3, 3, 2})
	defer x4.Release()
	g4 := mustBuf(t, d, []float32{1, 2, 4, 8})
	defer g4.Release()
	dx, err = MaxPoolNDBackward(x4, g4, []int{1, 4}, p)
	if got := download(t, dx, err); !slices.Equal(got, []float32{0, 7, 8, 0}) {
		t.Errorf("max bwd overlapping = %v, want [0 7 8 0]", got)
	}
	p.CountIncludePad = true
	y, err = AvgPoolND(x4, []int{1, 4}, p)
	if got := download(t, y, err); !slices.Equal(got, []float32{4.0 / 3, 7.0 / 3, 8.0 / 3, 5.0 / 3}) {
		t.Errorf("avg cip = %v", got)
	}
	p.CountIncludePad = false
	y, err = AvgPoolND(x4, []int{1, 4}, p)
	if got := download(t, y, err); !slices.Equal(got, []float32{2, 7.0 / 3, 8.0 / 3, 2.5}) {
		t.Errorf("avg = %v", got)
	}
	// Smooth max with a padded 0 and an infinite cell.
	p = PoolParams{Kernel: []int{2}, Stride: []int{2}, Padding: []int{1}, Beta: 1}
	xs := mustBuf(t, d, []float32{-30, inf, 1})
	defer xs.Release()
	y, err = SmoothMaxPoolND(xs, []int{1, 3}, p)
	got := download(t, y, err)
	want0 := float32(math.Log(1 + math.Exp(-30))) // max(0, -30) = 0 pivot: the padding
	if len(got) != 2 || math.Abs(float64(got[0]-want0)) > 1e-6 || got[1] != inf {
		t.Errorf("smooth = %v, want [%v +Inf]", got, want0)
	}
	p.Beta = -1 // smooth min: window 0 is {pad 0, -30}
	y, err = SmoothMaxPoolND(xs, []int{1, 3}, p)
	got = download(t, y, err)
	if want := float32(-30 - math.Log(1+math.Exp(-30))); math.Abs(float64(got[0]-want)) > 1e-5 {
		t.Errorf("smooth min = %v, want %v", got, want)
	}
}

// TestPoolSeedForms: the seeds' single-sample 2-D and N-D entry points are the N-D functions
// with count_include_pad, one stride and padding for both axes.
func TestPoolSeedForms(t *testing.T) {
	d := CPU()
	const c, h, w = 2, 7, 6
	xv, gv := poolInputs(c*h*w, c*4*4, false, false, 3)
	x := mustBuf(t, d, xv)
	defer x.Release()
	g := mustBuf(t, d, gv)
	defer g.Release()
	shape := []int{c, h, w}
	p := PoolParams{Kernel: []int{3, 2}, Stride: []int{2, 2}, Padding: []int{1, 1}, CountIncludePad: true, Beta: 2}
	same := func(name string, a *Buffer, errA error, b *Buffer, errB error) {
		t.Helper()
		ga, gb := download(t, a, errA), download(t, b, errB)
		if poolDiff(ga, gb) >= 0 {
			t.Errorf("%s: %v, N-D form %v", name, ga, gb)
		}
	}
	a, errA := MaxPool2dFwd(x, c, h, w, 3, 2, 2, 1)
	b, errB := MaxPoolND(x, shape, p)
	same("MaxPool2dFwd", a, errA, b, errB)
	a, errA = MaxPool2dBwd(x, g, c, h, w, 3, 2, 2, 1)
	b, errB = MaxPoolBwd(x, g, []int{h, w}, []int{3, 2}, []int{2, 2}, []int{1, 1}, c)
	same("MaxPool2dBwd", a, errA, b, errB)
	a, errA = AvgPool2dFwd(x, c, h, w, 3, 2, 2, 1)
	b, errB = AvgPoolFwd(x, []int{h, w}, []int{3, 2}, []int{2, 2}, []int{1, 1}, c)
	same("AvgPool2dFwd", a, errA, b, errB)
	a, errA = AvgPool2dBwd(g, c, h, w, 3, 2, 2, 1)
	b, errB = AvgPoolNDBackward(g, shape, p)
	same("AvgPool2dBwd", a, errA, b, errB)
	a, errA = SmoothMaxPool2dFwd(x, 2, c, h, w, 3, 2, 2, 1)
	b, errB = SmoothMaxPoolFwd(x, 2, []int{h, w}, []int{3, 2}, []int{2, 2}, []int{1, 1}, c)
	same("SmoothMaxPool2dFwd", a, errA, b, errB)
	a, errA = SmoothMaxPool2dBwd(x, g, 2, c, h, w, 3, 2, 2, 1)
	b, errB = SmoothMaxPoolBwd(x, g, 2, []int{h, w}, []int{3, 2}, []int{2, 2}, []int{1, 1}, c)
	same("SmoothMaxPool2dBwd", a, errA, b, errB)
	// A batch pools each sample as alone.
	xb := mustBuf(t, d, append(slices.Clone(xv), xv...))
	defer xb.Release()
	a, errA = MaxPoolND(xb, []int{2, c, h, w}, p)
	got := download(t, a, errA)
	one, err := MaxPool2dFwd(x, c, h, w, 3, 2, 2, 1)
	want := download(t, one, err)
	if poolDiff(got, append(slices.Clone(want), want...)) >= 0 {
		t.Errorf("batch of two copies: %v, want %v twice", got, want)
	}
}

// TestPoolErrors: bad geometry and operands are errors naming the numbers.
func TestPoolErrors(t *testing.T) {
	d := CPU()
	x := mustBuf(t, d, make([]float32, 12))
	defer x.Release()
	for _, c := range []struct {
		name  string
		shape []int
		p     PoolParams
		want  string
	}{
		{"rank 0", []int{12}, PoolParams{}, "kernel [] has rank 0: want 1 to 8"},
		{"rank 9", []int{12}, PoolParams{Kernel: []int{1, 1, 1, 1, 1, 1, 1, 1, 1}}, "rank 9"},
		{"shape rank", []int{12}, PoolParams{Kernel: []int{2, 2}}, "input shape [12] for a rank-2 kernel"},
		{"stride 0", []int{3, 4}, PoolParams{Kernel: []int{2}, Stride: []int{0}}, "axis 0 has kernel 2, stride 0, padding 0"},
		{"kernel 0", []int{3, 4}, PoolParams{Kernel: []int{0}}, "axis 0 has kernel 0"},
		{"negative padding", []int{3, 4}, PoolParams{Kernel: []int{2}, Padding: []int{-1}}, "padding -1"},
		{"lengths", []int{3, 4}, PoolParams{Kernel: []int{2}, Stride: []int{1, 1}}, "want 1 entries each"},
		{"length of x", []int{2, 5}, PoolParams{Kernel: []int{2}}, "x [2 5] has 12 elements, want 10"},
		{"huge window", []int{1, 1, 1}, PoolParams{Kernel: []int{1 << 12, 1 << 12}}, "at least 2^24 cells"},
		{"beta", []int{3, 4}, PoolParams{Kernel: []int{2}, Beta: 1e-50}, "beta 1e-50 is 0 as a float32"},
		{"beta inf", []int{3, 4}, PoolParams{Kernel: []int{2}, Beta: 1e39}, "beta 1e+39 is +Inf as a float32"},
	} {
		_, err := SmoothMaxPoolND(x, c.shape, c.p)
		if c.p.Beta == 0 {
			c.p.Beta = 1
			_, err = SmoothMaxPoolND(x, c.shape, c.p)
			if _, err2 := MaxPoolND(x, c.shape, c.p); err2 == nil || err2.Error() != strings.Replace(err.Error(), "smooth_max_pool", "max_pool", 1) {
				t.Errorf("%s: max pool error %v, smooth max %v", c.name, err2, err)
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "ops: ") {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := MaxPoolFwd(x, []int{3, 4}, []int{2}, []int{2}, []int{0}, 1); err == nil || !strings.Contains(err.Error(), "want arrays of one length") {
		t.Errorf("seed N-D lengths: %v", err)
	}
	g := mustBuf(t, d, make([]float32, 5))
	defer g.Release()
	if _, err := MaxPoolNDBackward(x, g, []int{3, 4}, PoolParams{Kernel: []int{2}}); err == nil || !strings.Contains(err.Error(), "gradOut [3 2] has 5 elements, want 6") {
		t.Errorf("gradOut length: %v", err)
	}
	// An empty output (padding > k/2, or a window larger than the padded input) is a result, and
	// its backward is zeros.
	for _, p := range []PoolParams{{Kernel: []int{2}, Padding: []int{2}}, {Kernel: []int{7}}} {
		y, err := MaxPoolND(x, []int{3, 4}, p)
		if got := download(t, y, err); len(got) != 0 {
			t.Errorf("%+v: %d outputs, want 0", p, len(got))
		}
		e := mustBuf(t, d, nil)
		dx, err := MaxPoolNDBackward(x, e, []int{3, 4}, p)
		e.Release()
		if got := download(t, dx, err); len(got) != 12 || slices.ContainsFunc(got, func(v float32) bool { return v != 0 }) {
			t.Errorf("%+v: backward %v, want 12 zeros", p, got)
		}
	}
}

// TestMaxPoolOffsets: the one-pass forward returns MaxPoolND's values and the offsets
// MaxPoolNDBackward's argmax computes, the backward from them equals MaxPoolNDBackward, and
// bad operands (nil, short, released, an offsets buffer for another output, x's errors) are
// clean errors with nothing left allocated.
func TestMaxPoolOffsets(t *testing.T) {
	d := CPU()
	shape := []int{2, 3, 7, 6}
	p := PoolParams{Kernel: []int{3, 2}, Stride: []int{2, 2}, Padding: []int{1, 0}}
	xv, gv := poolInputs(numel(shape), 2*3*4*3, true, true, 7)
	x, g := mustBuf(t, d, xv), mustBuf(t, d, gv)
	defer x.Release()
	defer g.Release()
	live := d.Stats().LiveBytes
	y, offsets, err := MaxPoolNDWithOffsets(x, shape, p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := MaxPoolND(x, shape, p)
	if a, b := download(t, y, nil), download(t, want, err); poolBitsDiffer(a, b) {
		t.Errorf("values %v, MaxPoolND %v", a, b)
	}
	dx, err := MaxPoolNDBackwardOffsets(offsets, g, shape, p)
	wantDx, err2 := MaxPoolNDBackward(x, g, shape, p)
	if a, b := download(t, dx, err), download(t, wantDx, err2); poolBitsDiffer(a, b) {
		t.Errorf("backward from the offsets %v, from x %v", a, b)
	}
	short := mustBuf(t, d, make([]float32, 5))
	for _, c := range []struct {
		name    string
		offsets *Buffer
		shape   []int
		want    string
	}{
		{"nil", nil, shape, "offsets is nil"},
		{"short", short, shape, "offsets [2 3 4 3] has 5 elements, want 72"},
		{"empty output", short, []int{2, 3, 1, 1}, "has 5 elements, want 0"},
		{"bad geometry", offsets, []int{42}, "input shape [42] for a rank-2 kernel"},
	} {
		if _, err := MaxPoolNDBackwardOffsets(c.offsets, g, c.shape, p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	short.Release()
	offsets.Release()
	if _, err := MaxPoolNDBackwardOffsets(offsets, g, shape, p); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("released offsets: %v", err)
	}
	for _, c := range []struct {
		name string
		x    *Buffer
		want string
	}{
		{"nil x", nil, "x is nil"},
		{"short x", g, "has 72 elements, want 252"},
	} {
		if y, o, err := MaxPoolNDWithOffsets(c.x, shape, p); err == nil || y != nil || o != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, %v, error %v, want one containing %q", c.name, y, o, err, c.want)
		}
	}
	if got := d.Stats().LiveBytes; got != live {
		t.Errorf("live bytes %d after the checks, %d before", got, live)
	}
}

// poolBitsDiffer reports whether a and b differ in length or in the bits of an element, NaN
// payloads aside.
func poolBitsDiffer(a, b []float32) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return true
		}
	}
	return false
}
