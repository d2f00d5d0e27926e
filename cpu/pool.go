package cpu

import "math"

// The pooling family: the twins of ptx/pool.cu. Layout: channel-first and row-major, x of
// (nc, in[0], ..., in[d-1]) and y of (nc, out[0], ..., out[d-1]), nc the leading axes flattened
// (channels of one sample, or batch*channels). A window is the box of K[a] cells starting at
// o[a]*S[a] - P[a] on every axis; its cells are visited in row-major order of the window (window
// offsets ascending, the last axis fastest), and a cell's window offset w is its row-major index
// in the K box. A cell outside the input is padding: max and average pooling skip it (average
// pooling counts it in the divisor with countIncludePad), smooth max pooling reads it as 0.
//
// The backward twins are gather-style: one unit per input element, which sums the contributions
// of the windows that contain it in ascending window order (row-major over the output axes),
// from acc = 0, one rounded addition per window. No unit writes another's element, so the
// result is a function of the values only, in either mode of the device. (The rank-2 max
// backward scatters the outputs' gradients into its range in ascending output order instead,
// which adds the same terms to each element in the same order: the same bits.)
//
// Products are wrapped in float32(...) (no fma); Expf and Logf are the project's float32
// algorithms (f32math.go), the ones ptx/f32math.cuh computes on the GPU.

// PoolAxes is the number of spatial axes of a pool kernel's geometry array (POOL_AXES in
// ptx/pool.cu): a pooling of rank d < PoolAxes is carried as PoolAxes axes, the first
// PoolAxes-d of them of input and output size 1, window 1, stride 1 and padding 0, which change
// no result.
const PoolAxes = 8

// PoolGeomLen is the length of a pool kernel's geometry array: the input sizes, output sizes,
// windows, strides and paddings of the PoolAxes axes, PoolAxes entries each, in that order.
const PoolGeomLen = 5 * PoolAxes

// PoolGeom is the geometry of a pooling: nc channels, and per spatial axis the input and output
// sizes, window, stride and padding (leading axes of size 1 with window 1 and no padding
// dropped, at least one kept).
type PoolGeom struct {
	NC                int
	In, Out, K, S, P  []int
	inVol, outVol, kv int
}

// NewPoolGeom reads the geometry of nc channels from a pool kernel's geometry array (PoolGeomLen
// entries).
func NewPoolGeom(geom []uint32, nc int) *PoolGeom {
	g := &PoolGeom{NC: nc, inVol: 1, outVol: 1, kv: 1}
	const A = PoolAxes
	for a := range A {
		in, out, k, st, p := int(geom[a]), int(geom[A+a]), int(geom[2*A+a]), int(geom[3*A+a]), int(geom[4*A+a])
		if len(g.In) == 0 && a < A-1 && in == 1 && out == 1 && k == 1 && p == 0 {
			continue
		}
		g.In, g.Out, g.K, g.S, g.P = append(g.In, in), append(g.Out, out), append(g.K, k), append(g.S, st), append(g.P, p)
		g.inVol, g.outVol, g.kv = g.inVol*in, g.outVol*out, g.kv*k
	}
	return g
}

// window decodes output element i: its window's first cell per axis into start, and the offset
// of its channel in x.
func (g *PoolGeom) window(i int, start *[PoolAxes]int) int {
	r := i
	for a := len(g.Out) - 1; a >= 0; a-- {
		o := r % g.Out[a]
		r /= g.Out[a]
		start[a] = o*g.S[a] - g.P[a]
	}
	return r * g.inVol
}

// inRows calls f(off, w, n) for the rows of the in-bounds cells of the window starting at start,
// in row-major order: the n cells at input offsets off, off+1, ... (in the channel) have window
// offsets w, w+1, ....
func (g *PoolGeom) inRows(start *[PoolAxes]int, f func(off, w, n int)) {
	d := len(g.K)
	var lo, hi, c [PoolAxes]int
	for a := range d {
		lo[a], hi[a] = max(start[a], 0), min(start[a]+g.K[a], g.In[a])
		if lo[a] >= hi[a] {
			return
		}
		c[a] = lo[a]
	}
	last := d - 1
	for {
		off, w := 0, 0
		for a := range last {
			off = off*g.In[a] + c[a]
			w = w*g.K[a] + c[a] - start[a]
		}
		off = off*g.In[last] + lo[last]
		w = w*g.K[last] + lo[last] - start[last]
		f(off, w, hi[last]-lo[last])
		a := last - 1
		for ; a >= 0; a-- {
			if c[a]++; c[a] < hi[a] {
				break
			}
			c[a] = lo[a]
		}
		if a < 0 {
			return
		}
	}
}

// allRows calls f(ok, off, x0) for every row of the window starting at start, padding included,
// in row-major order: the row's cells are x0, x0+1, ..., x0+K[last]-1 on the last axis, at input
// offsets off+x (in the channel); ok is false when the row lies outside the input on another
// axis (off is then meaningless).
func (g *PoolGeom) allRows(start *[PoolAxes]int, f func(ok bool, off, x0 int)) {
	d := len(g.K)
	last := d - 1
	var c [PoolAxes]int
	for {
		off, ok := 0, true
		for a := range last {
			x := start[a] + c[a]
			ok = ok && x >= 0 && x < g.In[a]
			off = off*g.In[a] + x
		}
		f(ok, off*g.In[last], start[last])
		a := last - 1
		for ; a >= 0; a-- {
			if c[a]++; c[a] < g.K[a] {
				break
			}
			c[a] = 0
		}
		if a < 0 {
			return
		}
	}
}

// covering calls f(o, w, count) for the windows that contain input element i, in ascending
// (row-major) order of their output coordinates: o is the window's output index (channel
// included), w the element's window offset in it and count the number of the window's in-bounds
// cells.
func (g *PoolGeom) covering(i int, f func(o, w, count int)) {
	d := len(g.K)
	var t, lo, hi, c [PoolAxes]int
	r := i
	for a := d - 1; a >= 0; a-- {
		x := r % g.In[a]
		r /= g.In[a]
		t[a] = x + g.P[a]
		lo[a] = t[a] - (g.K[a] - 1)
		if lo[a] <= 0 {
			lo[a] = 0
		} else {
			lo[a] = (lo[a] + g.S[a] - 1) / g.S[a]
		}
		hi[a] = min(t[a]/g.S[a], g.Out[a]-1)
		if lo[a] > hi[a] {
			return
		}
		c[a] = lo[a]
	}
	for {
		o, w, count := r, 0, 1
		for a := range d {
			s0 := c[a]*g.S[a] - g.P[a]
			o = o*g.Out[a] + c[a]
			w = w*g.K[a] + t[a] - c[a]*g.S[a]
			count *= min(s0+g.K[a], g.In[a]) - max(s0, 0)
		}
		f(o, w, count)
		a := d - 1
		for ; a >= 0; a-- {
			if c[a]++; c[a] <= hi[a] {
				break
			}
			c[a] = lo[a]
		}
		if a < 0 {
			return
		}
	}
}

// MaxPoolFwd writes the outputs [lo, hi) of max pooling of x (geometry g): for each output, over
// the in-bounds cells v of its window in row-major order,
//
//	best, first := 0, true
//	for each in-bounds v {
//		if first || v > best || (v != v && best == best) { best, first = v, false }
//	}
//	y[i] = best
//
// The first maximum wins ties, and the first NaN is the maximum (PyTorch's rule). Every
// window of a non-empty output holds an in-bounds cell (padding <= k/2).
func MaxPoolFwd(y, x []float32, geom []uint32, nc int, lo, hi int) {
	maxPoolOut(maxOut{y: y}, x, geom, nc, lo, hi)
}

// MaxPoolArgmax writes, for the outputs [lo, hi), float32(w) with w the window offset of the
// maximum MaxPoolFwd selects (exact: the window volume is below 2^24).
func MaxPoolArgmax(idx, x []float32, geom []uint32, nc int, lo, hi int) {
	maxPoolOut(maxOut{idx: idx}, x, geom, nc, lo, hi)
}

// MaxPoolFwdArgmax writes both MaxPoolFwd's y and MaxPoolArgmax's idx for the outputs [lo, hi)
// in one pass.
func MaxPoolFwdArgmax(y, idx, x []float32, geom []uint32, nc int, lo, hi int) {
	maxPoolOut(maxOut{y: y, idx: idx}, x, geom, nc, lo, hi)
}

// maxOut is where max pooling writes: the maxima (y) and their window offsets (idx), either
// nil when not wanted.
type maxOut struct{ y, idx []float32 }

// put writes output i: the maximum's bits bb and its window offset at.
func (m maxOut) put(i int, bb uint32, at int) {
	if m.y != nil {
		m.y[i] = math.Float32frombits(bb)
	}
	if m.idx != nil {
		m.idx[i] = float32(at)
	}
}

// from returns the outputs from i on.
func (m maxOut) from(i int) maxOut {
	if m.y != nil {
		m.y = m.y[i:]
	}
	if m.idx != nil {
		m.idx = m.idx[i:]
	}
	return m
}

// maxPoolOut runs max pooling into out on the rank-2 fast path or the generic one.
func maxPoolOut(out maxOut, x []float32, geom []uint32, nc int, lo, hi int) {
	g := NewPoolGeom(geom, nc)
	if p := newPool2(g); p != nil {
		p.maxPool(out, x, lo, hi)
		return
	}
	maxPool(out, x, g, lo, hi)
}

// maxPool is MaxPoolFwd and MaxPoolArgmax on the generic geometry (any rank).
func maxPool(out maxOut, x []float32, g *PoolGeom, lo, hi int) {
	var start [PoolAxes]int
	for i := lo; i < hi; i++ {
		xs := x[g.window(i, &start):]
		best, first, at := float32(0), true, 0
		g.inRows(&start, func(off, w, n int) {
			row := xs[off : off+n]
			for j, v := range row {
				if first || v > best || (v != v && best == best) {
					best, first, at = v, false, w+j
				}
			}
		})
		out.put(i, math.Float32bits(best), at)
	}
}

// MaxPoolBwd writes the input gradients [lo, hi) of max pooling from the argmax offsets idx
// (MaxPoolArgmax) and the output gradient gO: for input element i, over the windows o that
// contain it in ascending order, with w its window offset in o,
//
//	acc := float32(0)
//	for each covering o { if idx[o] == float32(w) { acc = acc + gO[o] } }
//	dx[i] = acc
func MaxPoolBwd(dx, idx, gO []float32, geom []uint32, nc int, lo, hi int) {
	g := NewPoolGeom(geom, nc)
	if p := newPool2(g); p != nil {
		p.maxPoolBwd(dx, idx, gO, lo, hi)
		return
	}
	maxPoolBwd(dx, idx, gO, g, lo, hi)
}

// maxPoolBwd is MaxPoolBwd on the generic geometry (any rank).
func maxPoolBwd(dx, idx, gO []float32, g *PoolGeom, lo, hi int) {
	for i := lo; i < hi; i++ {
		acc := float32(0)
		g.covering(i, func(o, w, _ int) {
			if idx[o] == float32(w) {
				acc = acc + gO[o]
			}
		})
		dx[i] = acc
	}
}

// AvgPoolFwd writes the outputs [lo, hi) of average pooling of x: over the in-bounds cells v of
// the window in row-major order,
//
//	acc := float32(0)
//	for each in-bounds v { acc = acc + v }
//	y[i] = acc / float32(den)
//
// den is the window volume Π K with countIncludePad, else the number of in-bounds cells.
func AvgPoolFwd(y, x []float32, geom []uint32, nc int, countIncludePad bool, lo, hi int) {
	g := NewPoolGeom(geom, nc)
	if p := newPool2(g); p != nil {
		p.avgPool(y, x, countIncludePad, lo, hi)
		return
	}
	avgPool(y, x, g, countIncludePad, lo, hi)
}

// avgPool is AvgPoolFwd on the generic geometry (any rank).
func avgPool(y, x []float32, g *PoolGeom, countIncludePad bool, lo, hi int) {
	var start [PoolAxes]int
	for i := lo; i < hi; i++ {
		xs := x[g.window(i, &start):]
		acc, count := float32(0), 0
		g.inRows(&start, func(off, _, n int) {
			for _, v := range xs[off : off+n] {
				acc = acc + v
			}
			count += n
		})
		if countIncludePad {
			count = g.kv
		}
		y[i] = acc / float32(count)
	}
}

// AvgPoolBwd writes the input gradients [lo, hi) of average pooling from the output gradient
// gO: for input element i, over the covering windows o in ascending order,
//
//	acc := float32(0)
//	for each covering o { acc = acc + gO[o]/float32(den[o]) }
//	dx[i] = acc
//
// with den[o] as in AvgPoolFwd.
func AvgPoolBwd(dx, gO []float32, geom []uint32, nc int, countIncludePad bool, lo, hi int) {
	g := NewPoolGeom(geom, nc)
	if p := newPool2(g); p != nil {
		p.avgPoolBwd(dx, gO, countIncludePad, lo, hi)
		return
	}
	avgPoolBwd(dx, gO, g, countIncludePad, lo, hi)
}

// avgPoolBwd is AvgPoolBwd on the generic geometry (any rank).
func avgPoolBwd(dx, gO []float32, g *PoolGeom, countIncludePad bool, lo, hi int) {
	for i := lo; i < hi; i++ {
		acc := float32(0)
		g.covering(i, func(o, _, count int) {
			if countIncludePad {
				count = g.kv
			}
			acc = acc + gO[o]/float32(count)
		})
		dx[i] = acc
	}
}

// smoothStats returns the pivot and the sum of exponentials of output i's window (padding read
// as 0), in row-major order of the window's cells v (padding included):
//
//	p := v[0]
//	for each later v {   // beta > 0: the maximum; beta < 0: the minimum; the first NaN wins
//		if (beta > 0 && v > p) || (beta < 0 && v < p) || (v != v && p == p) { p = v }
//	}
//	s := float32(0)
//	for each v {
//		d := v - p; if v == p { d = 0 }     // 0 also for infinite v equal to the pivot
//		s = s + Expf(float32(beta*d))
//	}
func smoothStats(x []float32, g *PoolGeom, beta float32, i int) (p, s float32) {
	var start [PoolAxes]int
	xs := x[g.window(i, &start):]
	last := len(g.K) - 1
	k, n := g.K[last], g.In[last]
	first := true
	g.allRows(&start, func(ok bool, off, x0 int) {
		for c := range k {
			v := float32(0)
			if xx := x0 + c; ok && xx >= 0 && xx < n {
				v = xs[off+xx]
			}
			if first || (beta > 0 && v > p) || (beta < 0 && v < p) || (v != v && p == p) {
				p, first = v, false
			}
		}
	})
	g.allRows(&start, func(ok bool, off, x0 int) {
		for c := range k {
			v := float32(0)
			if xx := x0 + c; ok && xx >= 0 && xx < n {
				v = xs[off+xx]
			}
			d := v - p
			if v == p {
				d = 0
			}
			s = s + Expf(float32(beta*d))
		}
	})
	return p, s
}

// SmoothMaxPoolFwd writes the outputs [lo, hi) of smooth max pooling (log-sum-exp with beta,
// finite and non-zero; beta < 0 is a smooth minimum): with p and s of the window as smoothStats
// states,
//
//	y[i] = p + Logf(s)/beta
func SmoothMaxPoolFwd(y, x []float32, geom []uint32, nc int, beta float32, lo, hi int) {
	g := NewPoolGeom(geom, nc)
	for i := lo; i < hi; i++ {
		p, s := smoothStats(x, g, beta, i)
		y[i] = p + Logf(s)/beta
	}
}

// SmoothMaxPoolStats writes, for the outputs [lo, hi), the pivot p and the sum s of
// smoothStats: the window statistics SmoothMaxPoolBwd reads.
func SmoothMaxPoolStats(pivot, sum, x []float32, geom []uint32, nc int, beta float32, lo, hi int) {
	g := NewPoolGeom(geom, nc)
	for i := lo; i < hi; i++ {
		pivot[i], sum[i] = smoothStats(x, g, beta, i)
	}
}

// SmoothMaxPoolBwd writes the input gradients [lo, hi) of smooth max pooling: for input
// element i with value v, over the covering windows o in ascending order, with pivot[o] and
// sum[o] from SmoothMaxPoolStats,
//
//	acc := float32(0)
//	for each covering o {
//		d := v - pivot[o]; if v == pivot[o] { d = 0 }
//		e := Expf(float32(beta*d))
//		acc = acc + float32(gO[o]*(e/sum[o]))
//	}
//	dx[i] = acc
//
// Padding cells receive no gradient (they are not inputs).
func SmoothMaxPoolBwd(dx, x, pivot, sum, gO []float32, geom []uint32, nc int, beta float32, lo, hi int) {
	g := NewPoolGeom(geom, nc)
	for i := lo; i < hi; i++ {
		v := x[i]
		acc := float32(0)
		g.covering(i, func(o, _, _ int) {
			p := pivot[o]
			d := v - p
			if v == p {
				d = 0
			}
			e := Expf(float32(beta * d))
			acc = acc + float32(gO[o]*(e/sum[o]))
		})
		dx[i] = acc
	}
}

// pool2 is a pooling geometry of rank 1 or 2 (rank 1 carried as a first axis of size 1, window
// 1, stride 1 and padding 0) with its per-axis window ranges precomputed: the fast path of the
// max and average pooling twins. It computes the generic path's arithmetic in the same order
// (window cells row-major, covering windows ascending from acc = 0), so its bits are the same;
// only the decoding of coordinates is hoisted out of the per-element loops.
type pool2 struct {
	nc, h, w, oh, ow, kh, kw, sh, sw, ph, pw, kv int
	// Per output row (column): the window's first cell y0 (x0), possibly negative, and its
	// in-bounds cells [r0, r1) ([c0, c1)), with r1 >= r0 (c1 >= c0).
	y0, r0, r1, x0, c0, c1 []int
	// Per input row (column): the covering output rows [oy0, oy1] (columns [ox0, ox1]),
	// inclusive, empty when oy1 < oy0 (ox1 < ox0); built by avgPoolBwd's overlapping path only.
	oy0, oy1, ox0, ox1 []int
}

// newPool2 returns the rank-2 form of g, or nil when g has another rank or a stride below 1
// (the generic path then runs).
func newPool2(g *PoolGeom) *pool2 {
	d := len(g.K)
	if d > 2 {
		return nil
	}
	p := &pool2{nc: g.NC, h: 1, oh: 1, kh: 1, sh: 1, kv: g.kv}
	if d == 2 {
		p.h, p.oh, p.kh, p.sh, p.ph = g.In[0], g.Out[0], g.K[0], g.S[0], g.P[0]
	}
	p.w, p.ow, p.kw, p.sw, p.pw = g.In[d-1], g.Out[d-1], g.K[d-1], g.S[d-1], g.P[d-1]
	if p.sh < 1 || p.sw < 1 {
		return nil
	}
	p.y0, p.r0, p.r1 = poolRanges(p.oh, p.h, p.kh, p.sh, p.ph)
	p.x0, p.c0, p.c1 = poolRanges(p.ow, p.w, p.kw, p.sw, p.pw)
	return p
}

// poolRanges returns, for the out windows of one axis (input size n, window k, stride s,
// padding pad), each window's first cell and its in-bounds cells [lo, hi), hi clamped to >= lo.
func poolRanges(out, n, k, s, pad int) (start, lo, hi []int) {
	buf := make([]int, 3*out)
	start, lo, hi = buf[:out], buf[out:2*out], buf[2*out:]
	for o := range out {
		st := o*s - pad
		start[o], lo[o], hi[o] = st, max(st, 0), min(st+k, n)
		hi[o] = max(hi[o], lo[o])
	}
	return start, lo, hi
}

// coverRanges returns, for the n input cells of one axis, the inclusive range [lo, hi] of the
// output windows (out of them, window k, stride s, padding pad) that contain the cell, as
// PoolGeom.covering computes it (empty when hi < lo).
func coverRanges(n, out, k, s, pad int) (lo, hi []int) {
	buf := make([]int, 2*n)
	lo, hi = buf[:n], buf[n:]
	for x := range n {
		t := x + pad
		l := t - (k - 1)
		if l <= 0 {
			l = 0
		} else {
			l = (l + s - 1) / s
		}
		lo[x], hi[x] = l, min(t/s, out-1)
	}
	return lo, hi
}

// maxPool is maxPool of the generic path on the rank-2 geometry. The window's first in-bounds
// cell seeds best (the generic loop takes it unconditionally); comparing it again changes
// nothing (v > v is false). v > best is compared on order-preserving integer keys (poolKey)
// while neither is NaN; the first NaN ends the window's scan, as no later cell can replace it.
func (p *pool2) maxPool(out maxOut, x []float32, lo, hi int) {
	if lo >= hi {
		return
	}
	ov, iv := p.oh*p.ow, p.h*p.w
	c, r := lo/ov, lo%ov
	oy, ox := r/p.ow, r%p.ow
	fa, fb := p.fullCols()
	for i := lo; i < hi; i++ {
		xs := x[c*iv:]
		r0, r1, sy := p.r0[oy], p.r1[oy], p.y0[oy]
		if ox >= fa && ox < fb && r0 == sy && r1 == sy+p.kh {
			// A run of windows wholly inside the input.
			n := min(fb-ox, hi-i)
			rows := xs[sy*p.w:]
			if p.kh == 2 && p.kw == 2 {
				// With stride 2 the windows' cells are consecutive pairs.
				if s := p.x0[ox]; p.sw != 2 || !max2x2s2Fast(out.from(i), rows[s:], rows[p.w+s:], n) {
					max2x2Run(out.from(i), rows, rows[p.w:], p.x0[ox:ox+n])
				}
			} else {
				p.maxRun(out.from(i), rows, p.x0[ox:ox+n])
			}
			i += n - 1
			c, oy, ox = nextCell(c, oy, ox, n, p.oh, p.ow)
			continue
		}
		c0, c1, sx := p.c0[ox], p.c1[ox], p.x0[ox]
		best, at := uint32(0), 0
		if r0 < r1 && c0 < c1 {
			bb, at0 := math.Float32bits(xs[r0*p.w+c0]), (r0-sy)*p.kw+c0-sx
			kb := poolKey(bb)
		rows:
			for rr := r0; rr < r1; rr++ {
				row := xs[rr*p.w+c0 : rr*p.w+c1]
				wb := (rr-sy)*p.kw + c0 - sx
				for j, v := range row {
					vb := math.Float32bits(v)
					if v != v || bb&0x7fffffff > 0x7f800000 {
						// A NaN: the first one (the window's best when it is the first
						// cell) is the maximum, and nothing later replaces it.
						if bb&0x7fffffff <= 0x7f800000 {
							bb, at0 = vb, wb+j
						}
						break rows
					}
					// v > best, branch-free (the maximum's place is unpredictable).
					if kv := poolKey(vb); kv > kb {
						bb, kb, at0 = vb, kv, wb+j
					}
				}
			}
			best, at = bb, at0
		}
		out.put(i, best, at)
		c, oy, ox = nextCell(c, oy, ox, 1, p.oh, p.ow)
	}
}

// nextCell moves a cursor (channel c, row y, column x) of a grid of h rows of w columns n cells
// on, within the row (x + n <= w).
func nextCell(c, y, x, n, h, w int) (int, int, int) {
	if x += n; x < w {
		return c, y, x
	}
	if y++; y < h {
		return c, y, 0
	}
	return c + 1, 0, 0
}

// fullCols returns the output columns [fa, fb) whose windows lie wholly inside the input's
// columns (fb <= fa when none); they are contiguous, as the windows move right with ox.
func (p *pool2) fullCols() (fa, fb int) {
	fa = p.ow
	for ox := range p.ow {
		if p.c0[ox] == p.x0[ox] && p.c1[ox] == p.x0[ox]+p.kw {
			fa, fb = min(fa, ox), ox+1
		}
	}
	return fa, fb
}

// maxRun is maxPool's loop for windows wholly inside the input: output j (of out) is the
// maximum of the window whose first cell is rows[x0[j]], rows holding the input from the
// windows' first row on. It compares as maxPool does (poolKey, the first NaN ends the scan),
// branch-free (maxStep), as where the maximum sits is unpredictable.
func (p *pool2) maxRun(out maxOut, rows []float32, x0 []int) {
	w, kh, kw := p.w, p.kh, p.kw
	for j, s := range x0 {
		win := rows[s:]
		bb, at := math.Float32bits(win[0]), 0
		kb := poolKey(bb)
	scan:
		for rr := range kh {
			t := rr * kw
			for jj, v := range win[rr*w : rr*w+kw] {
				vb := math.Float32bits(v)
				if v != v {
					if bb&0x7fffffff <= 0x7f800000 {
						bb, at = vb, t+jj
					}
					break scan
				}
				bb, kb, at = maxStep(bb, kb, at, vb, t+jj)
			}
		}
		out.put(j, bb, at)
	}
}

// max2x2Run is maxRun for 2x2 windows, top and bottom the windows' two input rows: three
// branch-free steps in the window's row-major order, after one test for a NaN (rare) that sends
// the window to the scan's rule.
func max2x2Run(out maxOut, top, bottom []float32, x0 []int) {
	for j, s := range x0 {
		a, b, c, d := top[s], top[s+1], bottom[s], bottom[s+1]
		var bb uint32
		var at int
		if a != a || b != b || c != c || d != d {
			bb, at = math.Float32bits(a), 0
			for t, v := range [4]float32{a, b, c, d} {
				if v != v {
					bb, at = math.Float32bits(v), t
					break
				}
			}
		} else {
			bb = math.Float32bits(a)
			kb := poolKey(bb)
			bb, kb, at = maxStep(bb, kb, at, math.Float32bits(b), 1)
			bb, kb, at = maxStep(bb, kb, at, math.Float32bits(c), 2)
			bb, _, at = maxStep(bb, kb, at, math.Float32bits(d), 3)
		}
		out.put(j, bb, at)
	}
}

// maxStep is one branch-free step of a window's scan: the cell vb (not NaN) at offset t
// replaces the best so far (bits bb, key kb, offset at) where its key is greater, by a mask
// from the sign of kb - kv (in 64 bits, as the keys span the int32 range).
func maxStep(bb uint32, kb int32, at int, vb uint32, t int) (uint32, int32, int) {
	kv := poolKey(vb)
	m := int32((int64(kb) - int64(kv)) >> 63) // -1 where kv > kb
	return bb ^ (bb^vb)&uint32(m), kb ^ (kb^kv)&m, at ^ (at^t)&int(m)
}

// poolKey maps the bits of a float32 that is not NaN to an int32 ordered as the floats are
// (-0 and +0 both to 0): poolKey(a) > poolKey(b) exactly when a > b.
func poolKey(u uint32) int32 {
	s := int32(u) >> 31
	return int32(u) ^ (s & 0x7fffffff) - s
}

// avgPool is avgPool of the generic path on the rank-2 geometry.
func (p *pool2) avgPool(y, x []float32, countIncludePad bool, lo, hi int) {
	if lo >= hi {
		return
	}
	ov, iv := p.oh*p.ow, p.h*p.w
	c, r := lo/ov, lo%ov
	oy, ox := r/p.ow, r%p.ow
	fa, fb := p.fullCols()
	vec := p.kh == 2 && p.kw == 2 && p.sw == 2 // 2x2 windows of stride 2: cells in consecutive pairs
	for i := lo; i < hi; i++ {
		xs := x[c*iv:]
		r0, r1, c0, c1 := p.r0[oy], p.r1[oy], p.c0[ox], p.c1[ox]
		if sy := p.y0[oy]; vec && ox >= fa && ox < fb && r0 == sy && r1 == sy+2 {
			// A run of windows wholly inside the input (count 4 either way).
			n := min(fb-ox, hi-i)
			if rows, s := xs[sy*p.w:], p.x0[ox]; avg2x2s2Fast(y[i:i+n], rows[s:], rows[p.w+s:], n) {
				i += n - 1
				c, oy, ox = nextCell(c, oy, ox, n, p.oh, p.ow)
				continue
			}
		}
		acc := float32(0)
		for rr := r0; rr < r1; rr++ {
			for _, v := range xs[rr*p.w+c0 : rr*p.w+c1] {
				acc = acc + v
			}
		}
		count := (r1 - r0) * (c1 - c0)
		if countIncludePad {
			count = p.kv
		}
		y[i] = acc / float32(count)
		c, oy, ox = nextCell(c, oy, ox, 1, p.oh, p.ow)
	}
}

// covers builds the per-input covering ranges of the backward twins.
func (p *pool2) covers() {
	p.oy0, p.oy1 = coverRanges(p.h, p.oh, p.kh, p.sh, p.ph)
	p.ox0, p.ox1 = coverRanges(p.w, p.ow, p.kw, p.sw, p.pw)
}

// maxPoolBwd is maxPoolBwd of the generic path on the rank-2 geometry, computed scatter-style
// within the range, one channel at a time (its cells stay in cache): the channel's cells in
// [lo, hi) are cleared, then every output o whose window meets them, in ascending order, adds
// its gradient to the cell its offset names,
//
//	dx[t] = dx[t] + gO[o]   where idx[o] == float32(w), 0 <= w < kv, t the in-bounds cell of
//	                        window offset w in window o, lo <= t < hi
//
// Cell t thus receives exactly the gather formula's terms (the covering windows o whose offset
// is t's), in its order (ascending o, from +0), so the bits are the generic path's; the range
// is still written by this call alone. An offset that names no cell (not an integer, out of the
// window, a padding cell, NaN) adds nothing, as in the gather. One pass over the outputs
// instead of a search of the covering windows per input cell.
func (p *pool2) maxPoolBwd(dx, idx, gO []float32, lo, hi int) {
	if lo >= hi {
		return
	}
	if p.oh*p.ow == 0 { // no window: no gradient
		clear(dx[lo:hi])
		return
	}
	// The cell of window offset k lies wy[k] rows and wx[k] columns from the window's first.
	wy, wx, cell := make([]int, p.kv), make([]int, p.kv), make([]int, p.kv)
	for k := range p.kv {
		wy[k], wx[k] = k/p.kw, k%p.kw
	}
	ov, iv := p.oh*p.ow, p.h*p.w
	cLo, cHi := lo/iv, (hi-1)/iv
	for c := cLo; c <= cHi; c++ {
		// The channel's cells [a, b) of the range.
		ch := dx[c*iv : (c+1)*iv]
		a, b := max(lo-c*iv, 0), min(hi-c*iv, iv)
		if a == 0 && b == iv && p.max2x2s2BwdChannel(ch, gO[c*ov:(c+1)*ov], idx[c*ov:(c+1)*ov]) {
			continue
		}
		clear(ch[a:b])
		// The output rows whose windows meet input rows [ra, rb].
		ra, rb := a/p.w, (b-1)/p.w
		oa, ob := 0, min(p.oh-1, (rb+p.ph)/p.sh)
		if n := ra + p.ph - p.kh + 1; n > 0 {
			oa = (n + p.sh - 1) / p.sh
		}
		for oy := oa; oy <= ob; oy++ {
			o0 := c*ov + oy*p.ow
			// cell[k]: the channel offset of window offset k in the window at column 0, or
			// -w where that row lies outside the input (a window starts left of column w, so
			// its cells then fall below 0, outside [a, b)).
			for k := range cell {
				cell[k] = -p.w
				if iy := p.y0[oy] + wy[k]; iy >= 0 && iy < p.h {
					cell[k] = iy*p.w + wx[k]
				}
			}
			maxScatterRow(ch, gO[o0:o0+p.ow], idx[o0:o0+p.ow], cell, wx, p.x0[0], p.sw, p.w, a, b, !p.disjoint())
		}
	}
}

// whole2x2s2 reports whether the windows are 2x2 of stride 2 without padding and the output
// sizes are in/2 (what ops builds; the cpu API does not check them): every window lies wholly
// inside the input and tiles its rows from the first cell on.
func (p *pool2) whole2x2s2() bool {
	return p.kh == 2 && p.kw == 2 && p.sh == 2 && p.sw == 2 && p.ph == 0 && p.pw == 0 &&
		p.oh == p.h/2 && p.ow == p.w/2
}

// avg2x2s2BwdChannels writes avgPoolBwd's values into dx[lo:hi] for 2x2 windows of stride 2
// without padding (every window whole: 0 + g/4 in each of its cells): the whole channels in the
// range row by row (avg2x2s2BwdFast), zeroing the last row and column that no window holds, and
// the partial ones at the range's ends through disjointRows. It reports false, writing nothing,
// without the vector kernel.
func (p *pool2) avg2x2s2BwdChannels(dx, gO []float32, lo, hi int) bool {
	ov, iv := p.oh*p.ow, p.h*p.w
	if ov == 0 || !poolVector() {
		return false
	}
	den := make([]float32, p.ow)
	for ox := range den {
		den[ox] = 4
	}
	partial := func(lo, hi int) {
		p.disjointRows(dx, lo, hi, func(seg []float32, base int, colOut, colIn []int32) {
			avgBwdRow(seg, gO[base:base+p.ow], den, colOut, colIn)
		})
	}
	cLo, cHi := ceilDiv(lo, iv), hi/iv // the whole channels [cLo, cHi)
	if cLo >= cHi {
		partial(lo, hi)
		return true
	}
	partial(lo, cLo*iv)
	for c := cLo; c < cHi; c++ {
		ch, g := dx[c*iv:(c+1)*iv], gO[c*ov:(c+1)*ov]
		for oy := range p.oh {
			avg2x2s2BwdFast(ch[2*oy*p.w:], ch[(2*oy+1)*p.w:], g[oy*p.ow:(oy+1)*p.ow], p.ow)
		}
		p.clearUncovered(ch)
	}
	partial(cHi*iv, hi)
	return true
}

// max2x2s2BwdChannel writes maxPoolBwd's values over one whole channel ch (gradients g and
// offsets at of its outputs) for 2x2 windows of stride 2 without padding: each output row's
// windows write both of their input rows (max2x2s2BwdFast), and the last row and column that
// no window holds (odd sizes) are zeroed. It reports false, writing nothing, for another
// geometry or without the vector kernel.
func (p *pool2) max2x2s2BwdChannel(ch, g, at []float32) bool {
	if !p.whole2x2s2() || !max2x2s2BwdFast(ch[:2*p.w], ch[p.w:2*p.w], g[:p.ow], at[:p.ow], p.ow) {
		return false
	}
	for oy := 1; oy < p.oh; oy++ {
		o0 := oy * p.ow
		max2x2s2BwdFast(ch[2*oy*p.w:], ch[(2*oy+1)*p.w:], g[o0:o0+p.ow], at[o0:o0+p.ow], p.ow)
	}
	p.clearUncovered(ch)
	return true
}

// clearUncovered zeroes the cells of channel ch that no 2x2 stride-2 window holds (whole2x2s2):
// the last column where w is odd, the last row where h is odd.
func (p *pool2) clearUncovered(ch []float32) {
	if 2*p.ow < p.w {
		for r := range 2 * p.oh {
			ch[r*p.w+2*p.ow] = 0
		}
	}
	clear(ch[2*p.oh*p.w:])
}

// maxScatterRow is maxPoolBwd's step for one output row (gradients g, offsets at, the first
// window's first column x0, the stride sw, the row's cell table): ch[t] = ch[t] + g[ox] for the
// cell t of each offset that names one, where a <= t < b. Without add (disjoint windows: no
// cell has another term) it stores ch[t] = 0 + g[ox] without a read.
func maxScatterRow(ch, g, at []float32, cell, wx []int, x0, sw, w, a, b int, add bool) {
	at = at[:len(g)]
	kv := uint(len(cell))
	wx = wx[:kv]
	for ox, xs := 0, x0; ox < len(g); ox, xs = ox+1, xs+sw {
		v := at[ox]
		k := int(v)
		if float32(k) != v || uint(k) >= kv {
			continue
		}
		t := cell[k] + xs
		if uint(xs+wx[k]) >= uint(w) || uint(t-a) >= uint(b-a) {
			continue
		}
		if add {
			ch[t] = ch[t] + g[ox]
		} else {
			ch[t] = 0 + g[ox]
		}
	}
}

// disjoint reports whether the windows do not overlap (strides at least the window on both
// axes, PyTorch's default): an input cell then lies in at most one window, and a backward sum
// has at most one term.
func (p *pool2) disjoint() bool { return p.sh >= p.kh && p.sw >= p.kw }

// disjointRows walks the input cells [lo, hi) of disjoint windows one input row segment at a
// time, for the backward twins: seg is dx's segment of input row iy (channel c), its columns
// [ix, ix+len(seg)). Rows no window holds are zeroed. For the others, row(seg, base, colOut,
// colIn) gets base, the index of the covering output row's first output (c*oh*ow + oy*ow); the
// tables colOut and colIn (built once per call, cut to the segment) give, per input column, the
// covering output column and the column's offset in it (colIn -1: none).
func (p *pool2) disjointRows(dx []float32, lo, hi int, row func(seg []float32, base int, colOut, colIn []int32)) {
	ov, iv := p.oh*p.ow, p.h*p.w
	colOut, colIn := make([]int32, p.w), make([]int32, p.w)
	for ix := range p.w {
		tx := ix + p.pw
		if ox := tx / p.sw; ox < p.ow && tx-ox*p.sw < p.kw {
			colOut[ix], colIn[ix] = int32(ox), int32(tx-ox*p.sw)
		} else {
			colIn[ix] = -1
		}
	}
	for i := lo; i < hi; {
		c, r := i/iv, i%iv
		iy, ix := r/p.w, r%p.w
		end := min(p.w, ix+hi-i)
		seg := dx[i : i+end-ix]
		i += len(seg)
		ty := iy + p.ph
		oy := ty / p.sh
		if oy >= p.oh || ty-oy*p.sh >= p.kh {
			clear(seg)
			continue
		}
		row(seg, c*ov+oy*p.ow, colOut[ix:end], colIn[ix:end])
	}
}

// avgBwdRow writes one input row segment of avgPoolBwd over disjoint windows: seg[j] =
// 0 + g[ox]/den[ox] with ox = colOut[j], or +0 where colIn[j] = -1 (no window holds the cell).
func avgBwdRow(seg, g, den []float32, colOut, colIn []int32) {
	colOut, colIn = colOut[:len(seg)], colIn[:len(seg)]
	for j := range seg {
		ox := colOut[j]
		v := 0 + g[ox]/den[ox]
		if colIn[j] < 0 {
			v = 0
		}
		seg[j] = v
	}
}

// avgPoolBwd is avgPoolBwd of the generic path on the rank-2 geometry: a covering window's
// in-bounds count is the product of its rows' and columns' counts.
func (p *pool2) avgPoolBwd(dx, gO []float32, countIncludePad bool, lo, hi int) {
	if lo >= hi {
		return
	}
	if p.disjoint() {
		// dx = 0 + gO[o]/den(o) for the cell's window o, +0 where none holds it.
		if p.whole2x2s2() && p.avg2x2s2BwdChannels(dx, gO, lo, hi) {
			return
		}
		den := make([]float32, p.ow)
		p.disjointRows(dx, lo, hi, func(seg []float32, base int, colOut, colIn []int32) {
			oy := base % (p.oh * p.ow) / p.ow
			for ox := range den {
				count := p.kv
				if !countIncludePad {
					count = (p.r1[oy] - p.r0[oy]) * (p.c1[ox] - p.c0[ox])
				}
				den[ox] = float32(count)
			}
			avgBwdRow(seg, gO[base:base+p.ow], den, colOut, colIn)
		})
		return
	}
	p.covers()
	ov, iv := p.oh*p.ow, p.h*p.w
	c, r := lo/iv, lo%iv
	iy, ix := r/p.w, r%p.w
	for i := lo; i < hi; i++ {
		acc := float32(0)
		for oy := p.oy0[iy]; oy <= p.oy1[iy]; oy++ {
			base, ny := c*ov+oy*p.ow, p.r1[oy]-p.r0[oy]
			for ox := p.ox0[ix]; ox <= p.ox1[ix]; ox++ {
				count := p.kv
				if !countIncludePad {
					count = ny * (p.c1[ox] - p.c0[ox])
				}
				acc = acc + gO[base+ox]/float32(count)
			}
		}
		dx[i] = acc
		c, iy, ix = nextCell(c, iy, ix, 1, p.h, p.w)
	}
}
