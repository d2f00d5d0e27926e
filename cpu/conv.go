package cpu

import "runtime"

// N-D convolution: the twins of ptx/conv.cu. Layout, batched and channel-first, row-major:
// x (batch, cin, in...), y and dY (batch, cout, out...), w (cout, cin/groups, k...), bias (cout).
// The geometry is geom, ConvGeomLen uint32 in six groups of ConvMaxRank, the spatial axes
// right-aligned (unused leading axes: size 1, kernel 1, stride 1, padding 0, dilation 1):
//
//	geom[0:8] input sizes    geom[8:16] output sizes   geom[16:24] kernel sizes
//	geom[24:32] strides      geom[32:40] paddings      geom[40:48] dilations
//
// inProd, outProd and kProd are the products of the input, output and kernel sizes; groups
// divides cin and cout (group g owns input channels [g*cin/groups, (g+1)*cin/groups) and output
// channels [g*cout/groups, ...)). Every output has one owner and a K sum in a fixed order, each
// step a single-rounding Fmaf (the GPU's __fmaf_rn), starting from +0; a bias is added last.
//
// On amd64 with the SGEMM micro-kernels of matmul_amd64.s, ConvFwd, ConvBwdInput and
// ConvBwdWeight run as implicit GEMMs: the patches are packed in the fixed K order into the
// micro-kernels' cache-sized panels straight from the input (no im2col buffer; padded cells
// packed as +0), and the micro-kernels take each output's fma steps in ascending K (see Bmm), so
// the bits are those of the plain loops (convFwdDirect, convBwdInputDirect, convBwdWeightDirect),
// which run elsewhere and with -tags noasm. Where every stride is 1, the output sizes are the
// formula's (readsInPlace) and the micro-kernel reads operands through tables (gemmKernel.fi and
// .fss: AVX-512 and AVX2), the patches are not packed but read in place from a zero-padded copy
// of each sample (shiftConv for the forward and, where pad <= (k-1)*dil, the input gradient;
// convBwdWeightShift for the weight gradient up to shiftWGMaxCout output channels per group):
// the same fma steps in the same order, the same bits.

// ConvMaxRank is the largest spatial rank of a convolution; ConvGeomLen the length of its
// geometry array (CONV_MAX_RANK and CONV_GEOM_LEN in ptx/conv.cu).
const (
	ConvMaxRank = 8
	ConvGeomLen = 6 * ConvMaxRank
)

// convGeom is a decoded geometry array.
type convGeom struct {
	in, out, k, s, p, d    [ConvMaxRank]int
	inProd, outProd, kProd int
}

func newConvGeom(geom []uint32) *convGeom {
	g := &convGeom{inProd: 1, outProd: 1, kProd: 1}
	for a := range ConvMaxRank {
		g.in[a], g.out[a], g.k[a] = int(geom[a]), int(geom[8+a]), int(geom[16+a])
		g.s[a], g.p[a], g.d[a] = int(geom[24+a]), int(geom[32+a]), int(geom[40+a])
		g.inProd *= g.in[a]
		g.outProd *= g.out[a]
		g.kProd *= g.k[a]
	}
	return g
}

// coords writes the row-major coordinates of flat index i in sizes dims.
func coords(c *[ConvMaxRank]int, i int, dims *[ConvMaxRank]int) {
	for a := ConvMaxRank - 1; a >= 0; a-- {
		c[a] = i % dims[a]
		i /= dims[a]
	}
}

// ConvFwd writes y = conv(x, w) (+ bias when hasBias) for the whole batch. Every output
// y[n][co][o] (o a row-major output position with coordinates o_a) is exactly:
//
//	acc := float32(+0)
//	for c := 0; c < cin/groups; c++ {         // the group's input channels, ascending
//		for kk := 0; kk < kProd; kk++ {       // kernel offsets, row-major (coordinates kk_a)
//			i_a := o_a*stride_a - pad_a + kk_a*dil_a
//			xv := float32(+0)                 // padding
//			if every 0 <= i_a < in_a { xv = x[n][g*cin/groups + c][i] }
//			acc = Fmaf(xv, w[co][c][kk], acc)
//		}
//	}
//	if hasBias { acc = acc + bias[co] }       // one rounding
//	y[n][co][o] = acc
//
// with g = co / (cout/groups). bias is not read when hasBias is false. The work is split over
// the cores by whole outputs, so the split never changes a bit.
func ConvFwd(y, x, w, bias []float32, geom []uint32, batch, cin, cout, groups, inProd, outProd, kProd int, hasBias bool) {
	g := newConvGeom(geom)
	total := batch * cout * outProd
	if total == 0 {
		return
	}
	if k := gemmActive; k != nil && cin/groups > 0 {
		convFwdGemm(k, y, x, w, g, batch, cin, cout, groups)
		if hasBias {
			addChannelBias(y, bias, batch, cout, outProd)
		}
		return
	}
	Parallel(total, max(1, 1<<14/max(1, cin/groups*kProd)), func(lo, hi int) {
		convFwdDirect(y, x, w, bias, g, batch, cin, cout, groups, hasBias, lo, hi)
	})
}

// convFwdDirect is ConvFwd's contract as plain loops for the outputs [lo, hi).
func convFwdDirect(y, x, w, bias []float32, g *convGeom, batch, cin, cout, groups int, hasBias bool, lo, hi int) {
	cing, coutg := cin/groups, cout/groups
	var oc, base [ConvMaxRank]int
	for u := lo; u < hi; u++ {
		nc := u / g.outProd
		co, n := nc%cout, nc/cout
		grp := co / coutg
		coords(&oc, u-nc*g.outProd, &g.out)
		for a := range ConvMaxRank {
			base[a] = oc[a]*g.s[a] - g.p[a]
		}
		acc := float32(0)
		for c := 0; c < cing; c++ {
			xc := x[(n*cin+grp*cing+c)*g.inProd:][:g.inProd]
			wc := w[(co*cing+c)*g.kProd:][:g.kProd]
			acc = g.patchDot(acc, xc, wc, &base)
		}
		if hasBias {
			acc += bias[co]
		}
		y[u] = acc
	}
}

// patchDot continues acc over the kernel offsets of one channel in row-major order: acc =
// Fmaf(xv, wc[kk], acc), xv = xc at base_a + kk_a*dil_a, +0 outside the input.
func (g *convGeom) patchDot(acc float32, xc, wc []float32, base *[ConvMaxRank]int) float32 {
	var kc [ConvMaxRank - 1]int
	k7, d7, in7 := g.k[7], g.d[7], g.in[7]
	wi := 0
	for t := 0; t < g.kProd/k7; t++ {
		off, ok := 0, true
		for a := range ConvMaxRank - 1 {
			i := base[a] + kc[a]*g.d[a]
			ok = ok && i >= 0 && i < g.in[a]
			off = off*g.in[a] + i
		}
		off *= in7
		i7 := base[7]
		for j := 0; j < k7; j++ {
			v := float32(0)
			if ok && i7 >= 0 && i7 < in7 {
				v = xc[off+i7]
			}
			acc = Fmaf(v, wc[wi], acc)
			wi++
			i7 += d7
		}
		for a := ConvMaxRank - 2; a >= 0; a-- {
			if kc[a]++; kc[a] < g.k[a] {
				break
			}
			kc[a] = 0
		}
	}
	return acc
}

// addChannelBias adds bias[c] to every element of channel c: v = v + bias[c], one rounding.
func addChannelBias(y, bias []float32, batch, ch, per int) {
	Parallel(batch*ch, max(1, 1<<14/max(1, per)), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			b := bias[r%ch]
			row := y[r*per : (r+1)*per]
			for i := range row {
				row[i] += b
			}
		}
	})
}

// ConvBwdInput writes dX, the gradient of ConvFwd with respect to x for the output gradient
// dy (batch, cout, out...), with the same geometry; with hasBias it adds bias[ci] last, which
// makes it the forward of a transposed convolution (x as dy, its output as dx). Every
// dx[n][ci][i] (coordinates i_a) is exactly:
//
//	acc := float32(+0)
//	for co := g*cout/groups; co < (g+1)*cout/groups; co++ {   // ascending
//		for kk := 0; kk < kProd; kk++ {                         // row-major
//			t_a := i_a + pad_a - kk_a*dil_a
//			if some t_a is not a multiple of stride_a { continue } // no term
//			dv := float32(+0)                                     // outside dY
//			if every 0 <= t_a/stride_a < out_a { dv = dy[n][co][t/stride] }
//			acc = Fmaf(dv, w[co][ci - g*cin/groups][kk], acc)
//		}
//	}
//	if hasBias { acc = acc + bias[ci] }
//	dx[n][ci][i] = acc
//
// with g = ci / (cin/groups).
func ConvBwdInput(dx, dy, w, bias []float32, geom []uint32, batch, cin, cout, groups, inProd, outProd, kProd int, hasBias bool) {
	g := newConvGeom(geom)
	total := batch * cin * inProd
	if total == 0 {
		return
	}
	if k := gemmActive; k != nil && cout/groups > 0 && g.outProd > 0 {
		convBwdInputGemm(k, dx, dy, w, g, batch, cin, cout, groups)
		if hasBias {
			addChannelBias(dx, bias, batch, cin, inProd)
		}
		return
	}
	Parallel(total, max(1, 1<<14/max(1, cout/groups*kProd)), func(lo, hi int) {
		convBwdInputDirect(dx, dy, w, bias, g, batch, cin, cout, groups, hasBias, lo, hi)
	})
}

// convBwdInputDirect is ConvBwdInput's contract as plain loops for the elements [lo, hi).
func convBwdInputDirect(dx, dy, w, bias []float32, g *convGeom, batch, cin, cout, groups int, hasBias bool, lo, hi int) {
	cing, coutg := cin/groups, cout/groups
	var ic, top, kc [ConvMaxRank]int
	for u := lo; u < hi; u++ {
		nc := u / g.inProd
		ci, n := nc%cin, nc/cin
		grp := ci / cing
		coords(&ic, u-nc*g.inProd, &g.in)
		for a := range ConvMaxRank {
			top[a] = ic[a] + g.p[a]
		}
		acc := float32(0)
		for co := grp * coutg; co < (grp+1)*coutg; co++ {
			dyc := dy[(n*cout+co)*g.outProd:][:g.outProd]
			wc := w[(co*cing+ci-grp*cing)*g.kProd:][:g.kProd]
			kc = [ConvMaxRank]int{}
			for kk := 0; kk < g.kProd; kk++ {
				take, ok, off := true, true, 0
				for a := range ConvMaxRank {
					t := top[a] - kc[a]*g.d[a]
					q := t / g.s[a]
					take = take && q*g.s[a] == t
					ok = ok && t >= 0 && q < g.out[a]
					off = off*g.out[a] + q
				}
				if take {
					v := float32(0)
					if ok {
						v = dyc[off]
					}
					acc = Fmaf(v, wc[kk], acc)
				}
				for a := ConvMaxRank - 1; a >= 0; a-- {
					if kc[a]++; kc[a] < g.k[a] {
						break
					}
					kc[a] = 0
				}
			}
		}
		if hasBias {
			acc += bias[ci]
		}
		dx[u] = acc
	}
}

// ConvBwdWeight writes dW (cout, cin/groups, k...), the gradient of ConvFwd with respect to w
// for the output gradient dy. Every dw[co][c][kk] is exactly:
//
//	acc := float32(+0)
//	for n := 0; n < batch; n++ {                 // ascending
//		for o := 0; o < outProd; o++ {           // output positions, row-major
//			xv := ...                            // ConvFwd's operand of (n, o, c, kk), +0 on padding
//			acc = Fmaf(dy[n][co][o], xv, acc)
//		}
//	}
//	dw[co][c][kk] = acc
func ConvBwdWeight(dw, x, dy []float32, geom []uint32, batch, cin, cout, groups, inProd, outProd, kProd int) {
	g := newConvGeom(geom)
	total := cout * (cin / groups) * kProd
	if total == 0 {
		return
	}
	if batch == 0 || outProd == 0 {
		clear(dw[:total])
		return
	}
	if k := gemmActive; k != nil {
		if g.inPlace(k.fss != nil) && cout/groups <= shiftWGMaxCout {
			convBwdWeightShift(k, dw, x, dy, g, batch, cin, cout, groups)
			return
		}
		convBwdWeightGemm(k, dw, x, dy, g, batch, cin, cout, groups)
		return
	}
	Parallel(total, max(1, 1<<14/max(1, batch*outProd)), func(lo, hi int) {
		convBwdWeightDirect(dw, x, dy, g, batch, cin, cout, groups, lo, hi)
	})
}

// convBwdWeightDirect is ConvBwdWeight's contract as plain loops for the elements [lo, hi).
func convBwdWeightDirect(dw, x, dy []float32, g *convGeom, batch, cin, cout, groups int, lo, hi int) {
	cing, coutg := cin/groups, cout/groups
	var kc, koff [ConvMaxRank]int
	o7n, s7, in7 := g.out[7], g.s[7], g.in[7]
	for u := lo; u < hi; u++ {
		cc := u / g.kProd
		c, co := cc%cing, cc/cing
		grp := co / coutg
		coords(&kc, u-cc*g.kProd, &g.k)
		for a := range ConvMaxRank {
			koff[a] = kc[a]*g.d[a] - g.p[a]
		}
		acc := float32(0)
		for n := 0; n < batch; n++ {
			xc := x[(n*cin+grp*cing+c)*g.inProd:][:g.inProd]
			dyc := dy[(n*cout+co)*g.outProd:][:g.outProd]
			var oc [ConvMaxRank - 1]int
			oi := 0
			for t := 0; t < g.outProd/o7n; t++ {
				off, ok := 0, true
				for a := range ConvMaxRank - 1 {
					i := oc[a]*g.s[a] + koff[a]
					ok = ok && i >= 0 && i < g.in[a]
					off = off*g.in[a] + i
				}
				off *= in7
				i7 := koff[7]
				for j := 0; j < o7n; j++ {
					v := float32(0)
					if ok && i7 >= 0 && i7 < in7 {
						v = xc[off+i7]
					}
					acc = Fmaf(dyc[oi], v, acc)
					oi++
					i7 += s7
				}
				for a := ConvMaxRank - 2; a >= 0; a-- {
					if oc[a]++; oc[a] < g.out[a] {
						break
					}
					oc[a] = 0
				}
			}
		}
		dw[u] = acc
	}
}

// ConvBwdBias writes db[co] for co in [lo, hi), the gradient of the bias: exactly
//
//	acc := float32(+0)
//	for n := 0; n < batch; n++ { for o := 0; o < outProd; o++ { acc = acc + dy[n][co][o] } }
//	db[co] = acc
func ConvBwdBias(db, dy []float32, batch, cout, outProd, lo, hi int) {
	co := lo
	// Four channels' sums side by side (each in its own order): independent chains that the
	// CPU overlaps, where one chain waits on each addition's latency.
	for ; co+4 <= hi; co += 4 {
		var a0, a1, a2, a3 float32
		for n := 0; n < batch; n++ {
			r0 := dy[(n*cout+co)*outProd:][:outProd]
			r1, r2, r3 := dy[(n*cout+co+1)*outProd:][:len(r0)], dy[(n*cout+co+2)*outProd:][:len(r0)], dy[(n*cout+co+3)*outProd:][:len(r0)]
			for o, v := range r0 {
				a0 += v
				a1 += r1[o]
				a2 += r2[o]
				a3 += r3[o]
			}
		}
		db[co], db[co+1], db[co+2], db[co+3] = a0, a1, a2, a3
	}
	for ; co < hi; co++ {
		acc := float32(0)
		for n := 0; n < batch; n++ {
			for _, v := range dy[(n*cout+co)*outProd:][:outProd] {
				acc += v
			}
		}
		db[co] = acc
	}
}

// ---- implicit GEMM on the SGEMM micro-kernels ----

// packFn packs a block of an operand: for A, rows [i0, i0+rows) and steps [k0, k0+kc) as
// panels of mr rows (packA's layout); for B, steps [k0, k0+kc) and columns [j0, j0+cols) as
// panels of nr columns (packB's layout). Rows or columns past the block are packed as zeros.
type packFn func(dst []float32, i0, rows, k0, kc, r int)

// convGemm computes rows [r0, r1) and columns [c0, c1) of C = A · B, A (m, n) and B (n, p)
// given by their packers, C at c with row stride ldc: gemmBlocked's loops (K blocks of gemmKC
// reloading the accumulators, so the K order is ascending and nothing is rounded twice).
func convGemm(k *gemmKernel, s *gemmScratch, c []float32, ldc, n, r0, r1, c0, c1 int, pa, pb packFn) {
	mr, nr := k.mr, k.nr
	kcMax := min(gemmKC, n)
	rows, cols := r1-r0, c1-c0
	if rows <= 0 || cols <= 0 {
		return
	}
	if n == 0 {
		for r := r0; r < r1; r++ {
			clear(c[r*ldc+c0 : r*ldc+c1])
		}
		return
	}
	mc := roundUp(ceilDiv(rows, ceilDiv(rows, gemmMC)), mr)
	nc := roundUp(ceilDiv(cols, ceilDiv(cols, gemmNC)), nr)
	s.a = growF32(s.a, mc*kcMax)
	s.b = growF32(s.b, nc*kcMax)
	s.tile = growF32(s.tile, mr*nr)
	tile := s.tile
	for jc := c0; jc < c1; jc += nc {
		ncb := min(nc, c1-jc)
		for pc := 0; pc < n; pc += kcMax {
			kc := min(kcMax, n-pc)
			load := pc > 0
			pb(s.b, jc, ncb, pc, kc, nr)
			for ic := r0; ic < r1; ic += mc {
				mcb := min(mc, r1-ic)
				pa(s.a, ic, mcb, pc, kc, mr)
				for jr := 0; jr < ncb; jr += nr {
					bp := s.b[jr*kc : (jr+nr)*kc]
					w := min(nr, ncb-jr)
					for ir := 0; ir < mcb; ir += mr {
						ap := s.a[ir*kc : (ir+mr)*kc]
						h := min(mr, mcb-ir)
						ci := (ic+ir)*ldc + jc + jr
						if h == mr && w == nr {
							_ = c[ci+(mr-1)*ldc+nr-1]
							k.fn(kc, &ap[0], &bp[0], &c[ci], ldc, load)
							continue
						}
						if load {
							for r := 0; r < h; r++ {
								copy(tile[r*nr:r*nr+w], c[ci+r*ldc:ci+r*ldc+w])
							}
						}
						k.fn(kc, &ap[0], &bp[0], &tile[0], nr, load)
						for r := 0; r < h; r++ {
							copy(c[ci+r*ldc:ci+r*ldc+w], tile[r*nr:r*nr+w])
						}
					}
				}
			}
		}
	}
}

// convRun runs items work items on the cores, each with its own scratch (gemmParallel), or on
// the caller when the work is small.
func convRun(items int, work int, run func(it int, s *gemmScratch)) {
	workers := runtime.GOMAXPROCS(0)
	if work < gemmMinParallel || items == 1 {
		workers = 1
	}
	if workers == 1 {
		s := gemmPool.Get().(*gemmScratch)
		for it := range items {
			run(it, s)
		}
		gemmPool.Put(s)
		return
	}
	gemmParallel(items, workers, run)
}

// colChunks splits p columns into chunks (multiples of nr) so that have*chunks items keep the
// cores busy; it returns the chunk width. With fewer than two items per core, the chunks are as
// even as nr allows and the item count is a multiple of the core count (lcm(have, cores)), so no
// core waits on another's last chunk.
func colChunks(p, have, nr int) int {
	workers := runtime.GOMAXPROCS(0)
	if have >= 2*workers {
		return p
	}
	parts := workers / gcd(max(have, 1), workers)
	return max(nr, ceilDiv(ceilDiv(p, nr), parts)*nr)
}

// fillRun writes dst[r*ds] = src[i0 + r*ss] for r < n where 0 <= i0 + r*ss < lim, and +0
// elsewhere (src may be nil when nothing is in range).
func fillRun(dst []float32, ds int, src []float32, i0, ss, n, lim int) {
	// the r with 0 <= i0 + r*ss < lim: [rlo, rhi)
	rlo, rhi := 0, n
	if ss == 1 { // the common stride, without the divisions
		rlo, rhi = min(n, max(0, -i0)), min(n, max(0, lim-i0))
	} else {
		if i0 < 0 {
			rlo = min(n, (-i0+ss-1)/ss)
		}
		if last := lim - i0; last <= 0 {
			rhi = 0
		} else {
			rhi = min(n, (last+ss-1)/ss)
		}
	}
	rhi = max(rhi, rlo)
	if ds == 1 {
		clear(dst[:rlo])
		if ss == 1 {
			if rhi > rlo {
				copy(dst[rlo:rhi], src[i0+rlo:i0+rhi])
			}
		} else {
			for r := rlo; r < rhi; r++ {
				dst[r] = src[i0+r*ss]
			}
		}
		clear(dst[rhi:n])
		return
	}
	for r := 0; r < rlo; r++ {
		dst[r*ds] = 0
	}
	if rhi > rlo {
		d := dst[rlo*ds : (rhi-1)*ds+1]
		if ss == 1 {
			for r, v := range src[i0+rlo : i0+rhi] {
				d[r*ds] = v
			}
		} else {
			s := src[i0+rlo*ss : i0+(rhi-1)*ss+1]
			for r := range rhi - rlo {
				d[r*ds] = s[r*ss]
			}
		}
	}
	for r := rhi; r < n; r++ {
		dst[r*ds] = 0
	}
}

// gatherSpec describes the patch operand of an implicit GEMM over one (sample, group): the
// element of step t = c*len(steps) + kk (channel c, kernel step kk) and position o (coordinates
// o_a in pos) is src[c*cstride + i] with i_a = o_a*ps_a + steps[kk][a], +0 where some i_a is
// outside [0, lim_a).
type gatherSpec struct {
	src     []float32
	cstride int
	lim     [ConvMaxRank]int   // source sizes
	pos     [ConvMaxRank]int   // position grid
	ps      [ConvMaxRank]int   // position strides in the source
	steps   [][ConvMaxRank]int // per kernel step of a channel, its offsets per axis (stepOffsets)
	runs    []posRun           // packPosBySteps' scratch
	cols    []stepCol          // packPosBySteps' scratch
	segs    []stepSeg          // packStepsByPos' scratch
}

// stepOffsets lists the kernel steps of a channel, row-major over the offsets koff lists per
// axis, each as its offset on every axis (built once per call, shared by the work items).
func stepOffsets(koff [ConvMaxRank][]int) [][ConvMaxRank]int {
	n := 1
	for a := range koff {
		n *= len(koff[a])
	}
	steps := make([][ConvMaxRank]int, n)
	for kk := range steps {
		r := kk
		for a := ConvMaxRank - 1; a >= 0; a-- {
			l := len(koff[a])
			steps[kk][a] = koff[a][r%l]
			r /= l
		}
	}
	return steps
}

// firstAxis returns the first of the leading axes (all but the last) that can reject a cell or
// move the base: the axes before it have size 1, one position and offset 0 for every step (the
// unused axes of a low-rank convolution), so the packers skip them.
func (gs *gatherSpec) firstAxis() int {
	for a := range ConvMaxRank - 1 {
		if gs.lim[a] != 1 || gs.pos[a] != 1 {
			return a
		}
		for _, st := range gs.steps {
			if st[a] != 0 {
				return a
			}
		}
	}
	return ConvMaxRank - 1
}

// packStepsByPos packs steps [k0, k0+kc) x positions [j0, j0+cols) into dst as panels of nr
// positions (B(step, position)): dst[(j - j%nr)*kc + k*nr + j%nr]. The positions' pieces (runs
// along the last axis, cut at panel edges) are listed once (stepSegs); each step then copies
// its pieces.
func (gs *gatherSpec) packStepsByPos(dst []float32, j0, cols, k0, kc, nr int) {
	segs := gs.stepSegs(j0, cols, kc, nr)
	s7, l7 := gs.ps[7], gs.lim[7]
	a0 := gs.firstAxis()
	nk := len(gs.steps)
	for k := 0; k < kc; k++ {
		t := k0 + k
		c := t / nk
		off := &gs.steps[t-c*nk]
		src := gs.src[c*gs.cstride:]
		for si := range segs {
			sg := &segs[si]
			d := dst[sg.dst+k*nr:][:sg.n]
			base, ok := 0, true
			for a := a0; a < ConvMaxRank-1; a++ {
				i := sg.ip[a] + off[a]
				ok = ok && i >= 0 && i < gs.lim[a]
				base = base*gs.lim[a] + i
			}
			i7 := sg.i7 + off[7]
			switch {
			case !ok:
				clear(d)
			case s7 == 1: // fillRun's stride-1 case, inline: +0, the cells in range, +0
				lo := min(sg.n, max(0, -i7))
				hi := max(lo, min(sg.n, l7-i7))
				for r := range lo {
					d[r] = 0
				}
				if hi > lo {
					copy(d[lo:hi], src[base*l7+i7+lo:])
				}
				for r := hi; r < sg.n; r++ {
					d[r] = 0
				}
			default:
				fillRun(d, 1, src[base*l7:], i7, s7, sg.n, l7)
			}
		}
		if r := cols % nr; r != 0 {
			q := cols - r
			clear(dst[q*kc+k*nr+r : q*kc+k*nr+nr])
		}
	}
}

// stepSeg is one piece of packStepsByPos: n consecutive positions along the last axis, all in
// one panel, written at dst + k*nr for step k; ip and i7 are the source coordinates of its first
// position before the step's offsets (o_a*ps_a).
type stepSeg struct {
	dst, n, i7 int
	ip         [ConvMaxRank - 1]int
}

// stepSegs lists the pieces of positions [j0, j0+cols) for packStepsByPos (panels of nr, kc
// steps), into gs.segs (reused).
func (gs *gatherSpec) stepSegs(j0, cols, kc, nr int) []stepSeg {
	segs := gs.segs[:0]
	var pc [ConvMaxRank]int
	coords(&pc, j0, &gs.pos)
	for j := 0; j < cols; {
		run := min(cols-j, gs.pos[7]-pc[7])
		var sg stepSeg
		for a := range ConvMaxRank - 1 {
			sg.ip[a] = pc[a] * gs.ps[a]
		}
		i7 := pc[7] * gs.ps[7]
		for run > 0 {
			q := j % nr
			sg.dst, sg.n, sg.i7 = (j-q)*kc+q, min(run, nr-q), i7
			segs = append(segs, sg)
			j += sg.n
			run -= sg.n
			i7 += sg.n * gs.ps[7]
		}
		pc[7] = 0
		for a := ConvMaxRank - 2; a >= 0; a-- {
			if pc[a]++; pc[a] < gs.pos[a] {
				break
			}
			pc[a] = 0
		}
	}
	gs.segs = segs
	return segs
}

// posRun is a run of consecutive GEMM positions along the last spatial axis of one sample:
// positions [k, k+n) of the packed block, sample smp, source coordinates ip[a] = o_a*ps_a of
// the leading axes and i7 = o_7*ps_7 of the last one at the run's start.
type posRun struct {
	k, n, smp, i7 int
	ip            [ConvMaxRank - 1]int
}

// packRunMax bounds a run, so that the rows of a packed panel that one run writes stay in the
// L1 cache while every column of the panel fills them.
const packRunMax = 64

// posRuns splits positions [k0, k0+kc) (nPos per sample) into runs of at most packRunMax
// along the last axis, into gs.runs (reused).
func (gs *gatherSpec) posRuns(nPos, k0, kc int) []posRun {
	runs := gs.runs[:0]
	var pc [ConvMaxRank]int
	for k := 0; k < kc; {
		pk := k0 + k
		smp := pk / nPos
		coords(&pc, pk-smp*nPos, &gs.pos)
		r := posRun{k: k, n: min(kc-k, gs.pos[7]-pc[7], packRunMax), smp: smp, i7: pc[7] * gs.ps[7]}
		for a := range ConvMaxRank - 1 {
			r.ip[a] = pc[a] * gs.ps[a]
		}
		runs = append(runs, r)
		k += r.n
	}
	gs.runs = runs
	return runs
}

// stepCol is one packed column of packPosBySteps: its channel's offset in src and its kernel
// offsets per axis.
type stepCol struct {
	csrc int
	off  [ConvMaxRank]int
}

// packPosBySteps packs positions [k0, k0+kc) (the GEMM's K) x steps [j0, j0+cols) (its
// columns) as panels of nr steps: dst[(j - j%nr)*kc + k*nr + j%nr] = element (step j, position
// k), positions numbered over nPos per sample and samples sstride apart in src. It walks the
// runs of positions in the outer loop and the columns in the inner one, so that a run's rows of
// each panel are written while they are in the cache.
func (gs *gatherSpec) packPosBySteps(dst []float32, sstride, nPos, j0, cols, k0, kc, nr int) {
	runs := gs.posRuns(nPos, k0, kc)
	s7, l7 := gs.ps[7], gs.lim[7]
	a0 := gs.firstAxis()
	scols := gs.cols[:0]
	nk := len(gs.steps)
	for j := range cols {
		t := j0 + j
		c := t / nk
		scols = append(scols, stepCol{csrc: c * gs.cstride, off: gs.steps[t-c*nk]})
	}
	gs.cols = scols
	for ri := range runs {
		r := &runs[ri]
		for j := range scols {
			sc := &scols[j]
			base, ok := 0, true
			for a := a0; a < ConvMaxRank-1; a++ {
				i := r.ip[a] + sc.off[a]
				ok = ok && i >= 0 && i < gs.lim[a]
				base = base*gs.lim[a] + i
			}
			q := j % nr
			d := dst[(j-q)*kc+r.k*nr+q:]
			if ok {
				fillRun(d, nr, gs.src[r.smp*sstride+sc.csrc+base*l7:], r.i7+sc.off[7], s7, r.n, l7)
			} else {
				for e := 0; e < r.n; e++ {
					d[e*nr] = 0
				}
			}
		}
	}
	if rem := cols % nr; rem != 0 {
		panel := dst[(cols-rem)*kc:][:kc*nr]
		for k := 0; k < kc; k++ {
			clear(panel[k*nr+rem : k*nr+nr])
		}
	}
}

// taps lists, per axis, the offset of each kernel tap in a zero-padded box from an output
// position's first cell, t*dilation for t < kernel size, or (k-1-t)*dilation reversed (the
// input gradient's box of dY).
func (g *convGeom) taps(reversed bool) [ConvMaxRank][]int {
	var taps [ConvMaxRank][]int
	for a := range ConvMaxRank {
		taps[a] = make([]int, g.k[a])
		for t := range taps[a] {
			if reversed {
				taps[a][t] = (g.k[a] - 1 - t) * g.d[a]
			} else {
				taps[a][t] = t * g.d[a]
			}
		}
	}
	return taps
}

// inPlace reports whether a path that reads the patches in place runs: the geometry allows it
// (readsInPlace), the micro-kernel has the entry it needs (has), and tests have not turned the
// paths off (convShiftOff).
func (g *convGeom) inPlace(has bool) bool { return has && !convShiftOff && g.readsInPlace() }

// kernelOffsets lists, per axis, the input offset of each kernel tap from an output position's
// first input cell: t*dilation - padding for t < kernel size.
func (g *convGeom) kernelOffsets() [ConvMaxRank][]int {
	var koff [ConvMaxRank][]int
	for a := range ConvMaxRank {
		koff[a] = make([]int, g.k[a])
		for t := range koff[a] {
			koff[a][t] = t*g.d[a] - g.p[a]
		}
	}
	return koff
}

// convFwdGemm is ConvFwd as one implicit GEMM per (sample, group): y_g (cout/groups, outProd)
// = w_g (cout/groups, cin/groups*kProd) · patches (cin/groups*kProd, outProd), K in ConvFwd's
// order (channel, then kernel offset).
func convFwdGemm(k *gemmKernel, y, x, w []float32, g *convGeom, batch, cin, cout, groups int) {
	cing, coutg := cin/groups, cout/groups
	kk := cing * g.kProd
	if g.inPlace(k.fi != nil) {
		// The box is x padded by pad; step kk's cell for output o is o_a + kk_a*dil_a.
		sc := newShiftConv(g.in, g.p, g.out, g.taps(false), cing, k.nr)
		convShift(k, sc, y, x, batch, groups, coutg,
			func(n, grp int) int { return (n*cin + grp*cing) * g.inProd },
			func(n, grp int) int { return (n*cout + grp*coutg) * g.outProd },
			func(ap []float32, grp int) { packA(ap, w[grp*coutg*kk:], coutg, kk, 0, coutg, 0, kk, k.mr, false) })
		return
	}
	P := g.outProd
	chunk := colChunks(P, batch*groups, k.nr)
	nChunks := ceilDiv(P, chunk)
	steps := stepOffsets(g.kernelOffsets())
	convRun(batch*groups*nChunks, batch*cout*P*kk, func(it int, s *gemmScratch) {
		ng, ch := it/nChunks, it%nChunks
		n, grp := ng/groups, ng%groups
		gs := gatherSpec{src: x[(n*cin+grp*cing)*g.inProd:], cstride: g.inProd, lim: g.in, pos: g.out, ps: g.s,
			steps: steps}
		wg := w[grp*coutg*kk : (grp+1)*coutg*kk]
		pa := func(dst []float32, i0, rows, k0, kc, mr int) { packA(dst, wg, coutg, kk, i0, rows, k0, kc, mr, false) }
		pb := func(dst []float32, j0, cols, k0, kc, nr int) { gs.packStepsByPos(dst, j0, cols, k0, kc, nr) }
		c0 := ch * chunk
		convGemm(k, s, y[(n*cout+grp*coutg)*P:], P, kk, 0, coutg, c0, min(P, c0+chunk), pa, pb)
	})
}

// convBwdWeightGemm is ConvBwdWeight as one implicit GEMM per group: dw_g (cout/groups,
// cin/groups*kProd) = dY_g (cout/groups, batch*outProd) · patches^T, K = (sample, position)
// ascending.
func convBwdWeightGemm(k *gemmKernel, dw, x, dy []float32, g *convGeom, batch, cin, cout, groups int) {
	cing, coutg := cin/groups, cout/groups
	cols := cing * g.kProd
	P := g.outProd
	inner := batch * P
	chunk := colChunks(cols, groups, k.nr)
	nChunks := ceilDiv(cols, chunk)
	steps := stepOffsets(g.kernelOffsets())
	convRun(groups*nChunks, cout*cols*inner, func(it int, s *gemmScratch) {
		grp, ch := it/nChunks, it%nChunks
		gs := gatherSpec{src: x[grp*cing*g.inProd:], cstride: g.inProd, lim: g.in, pos: g.out, ps: g.s,
			steps: steps}
		// A(i, k) = dy[n][grp*coutg + i][o], k = n*P + o
		// (runs of positions outer, rows inner: a run's rows of the panel stay in the cache)
		pa := func(dst []float32, i0, rows, k0, kc, mr int) {
			for q := 0; q < rows; q += mr {
				h := min(mr, rows-q)
				d := dst[q*kc : (q+mr)*kc]
				for kq := 0; kq < kc; {
					pk := k0 + kq
					n := pk / P
					o := pk - n*P
					run := min(kc-kq, P-o, packRunMax)
					// rows grp*coutg+i0+q.. of sample n, positions [o, o+run): a transpose of
					// h rows of dy (row stride P), as packA does for a row-major A
					packRows(d[kq*mr:], dy[(n*cout+grp*coutg+i0+q)*P+o:], P, run, mr, h)
					kq += run
				}
			}
		}
		pb := func(dst []float32, j0, cols, k0, kc, nr int) {
			gs.packPosBySteps(dst, cin*g.inProd, P, j0, cols, k0, kc, nr)
		}
		c0 := ch * chunk
		convGemm(k, s, dw[grp*coutg*cols:], cols, inner, 0, coutg, c0, min(cols, c0+chunk), pa, pb)
	})
}

// convBwdInputGemm is ConvBwdInput as implicit GEMMs: for each residue class r of the input
// positions modulo the strides (i_a = r_a + stride_a*m_a), the kernel offsets that take part
// are the same for the whole class (those with r_a + pad_a - kk_a*dil_a a multiple of
// stride_a), and dY's element for (m, kk) is at m_a + e_a(kk), e_a = (r_a + pad_a -
// kk_a*dil_a)/stride_a: a convolution of stride 1 in m. Per (sample, group, class):
// dx_class (cin/groups, positions) = w^T (cin/groups, cout/groups*|offsets|) · dY patches, K in
// ConvBwdInput's order (output channel, then the taking offsets ascending). With every stride
// 1 there is one class and the result is stored in place; otherwise it is computed into a
// scratch and scattered.
func convBwdInputGemm(k *gemmKernel, dx, dy, w []float32, g *convGeom, batch, cin, cout, groups int) {
	cing, coutg := cin/groups, cout/groups
	if g.inPlace(k.fi != nil) && g.padWithinKernel() {
		// The box is dY padded by (k_a-1)*dil_a - pad_a; step kk's cell for input element i
		// is i_a + (k_a-1-kk_a)*dil_a (the output o_a = i_a + pad_a - kk_a*dil_a, shifted).
		var pad [ConvMaxRank]int
		for a := range ConvMaxRank {
			pad[a] = (g.k[a]-1)*g.d[a] - g.p[a]
		}
		sc := newShiftConv(g.out, pad, g.in, g.taps(true), coutg, k.nr)
		convShift(k, sc, dx, dy, batch, groups, cing,
			func(n, grp int) int { return (n*cout + grp*coutg) * g.outProd },
			func(n, grp int) int { return (n*cin + grp*cing) * g.inProd },
			func(ap []float32, grp int) { packWT(ap, w, g.kProd, cing, coutg, grp, k.mr) })
		return
	}
	nClass := 1
	for a := range ConvMaxRank {
		nClass *= g.s[a]
	}
	type class struct {
		cnt   [ConvMaxRank]int
		r     [ConvMaxRank]int
		steps [][ConvMaxRank]int // e_a per taking offset, per step (stepOffsets)
		kidx  []int              // flat kernel index of each taking offset (row-major)
		nPos  int
		inner int
	}
	classes := make([]class, 0, nClass)
	var rc [ConvMaxRank]int
	for ci := 0; ci < nClass; ci++ {
		coords(&rc, ci, &g.s)
		var cl class
		cl.r = rc
		cl.nPos = 1
		var ks, koff [ConvMaxRank][]int
		for a := range ConvMaxRank {
			cl.cnt[a] = max(0, ceilDiv(g.in[a]-rc[a], g.s[a]))
			cl.nPos *= cl.cnt[a]
			for t := 0; t < g.k[a]; t++ {
				v := rc[a] + g.p[a] - t*g.d[a]
				if q := v / g.s[a]; q*g.s[a] == v {
					koff[a] = append(koff[a], q)
					ks[a] = append(ks[a], t)
				}
			}
		}
		cl.steps = stepOffsets(koff)
		nk := len(cl.steps)
		cl.kidx = make([]int, nk)
		var kc [ConvMaxRank]int
		for t := range nk {
			rem, flat, mul := t, 0, 1
			for a := ConvMaxRank - 1; a >= 0; a-- {
				l := len(ks[a])
				kc[a] = ks[a][rem%l]
				rem /= l
				flat += kc[a] * mul
				mul *= g.k[a]
			}
			cl.kidx[t] = flat
		}
		cl.inner = coutg * nk
		if cl.nPos > 0 {
			classes = append(classes, cl)
		}
	}
	strided := nClass > 1
	work := batch * cin * g.inProd * coutg * g.kProd / nClass
	items := batch * groups * len(classes)
	convRun(items, work, func(it int, s *gemmScratch) {
		ng, cli := it/len(classes), it%len(classes)
		n, grp := ng/groups, ng%groups
		cl := &classes[cli]
		xs := dx[(n*cin+grp*cing)*g.inProd:]
		if cl.inner == 0 { // no kernel offset takes part: every element is +0
			scatterClass(xs, nil, g, cl.r, cl.cnt, cing, cl.nPos)
			return
		}
		gs := gatherSpec{src: dy[(n*cout+grp*coutg)*g.outProd:], cstride: g.outProd, lim: g.out, pos: cl.cnt,
			steps: cl.steps}
		for a := range ConvMaxRank {
			gs.ps[a] = 1
		}
		nk := len(cl.kidx)
		// A(i, t) = w[grp*coutg + co][i][kidx[kk]], t = co*nk + kk
		pa := func(dst []float32, i0, rows, k0, kc, mr int) {
			for q := 0; q < rows; q += mr {
				h := min(mr, rows-q)
				d := dst[q*kc : (q+mr)*kc]
				for kq := 0; kq < kc; kq++ {
					t := k0 + kq
					co := t / nk
					wk := cl.kidx[t-co*nk]
					row := d[kq*mr : kq*mr+mr]
					base := ((grp*coutg+co)*cing+i0+q)*g.kProd + wk
					for i := 0; i < h; i++ {
						row[i] = w[base+i*g.kProd]
					}
					clear(row[h:])
				}
			}
		}
		pb := func(dst []float32, j0, cols, k0, kc, nr int) { gs.packStepsByPos(dst, j0, cols, k0, kc, nr) }
		if !strided {
			convGemm(k, s, xs, g.inProd, cl.inner, 0, cing, 0, cl.nPos, pa, pb)
			return
		}
		tmp := make([]float32, cing*cl.nPos)
		convGemm(k, s, tmp, cl.nPos, cl.inner, 0, cing, 0, cl.nPos, pa, pb)
		scatterClass(xs, tmp, g, cl.r, cl.cnt, cing, cl.nPos)
	})
}

// scatterClass stores a residue class's results tmp (cing, nPos) at positions r + stride*m of
// the channels of xs (+0 everywhere when tmp is nil).
func scatterClass(xs, tmp []float32, g *convGeom, r, cnt [ConvMaxRank]int, cing, nPos int) {
	var m [ConvMaxRank]int
	for c := 0; c < cing; c++ {
		dst := xs[c*g.inProd:][:g.inProd]
		for p := 0; p < nPos; p++ {
			coords(&m, p, &cnt)
			off := 0
			for a := range ConvMaxRank {
				off = off*g.in[a] + r[a] + g.s[a]*m[a]
			}
			if tmp == nil {
				dst[off] = 0
			} else {
				dst[off] = tmp[c*nPos+p]
			}
		}
	}
}

// ---- stride-1 convolutions with the patches read in place ----

// convShiftOff makes the stride-1 convolutions take the packing path (convFwdGemm,
// convBwdInputGemm, convBwdWeightGemm) instead of the in-place reads (shiftConv,
// convBwdWeightShift). For tests and benchmarks; not changed concurrently
// with a convolution.
var convShiftOff bool

// shiftConv is a convolution of stride 1 over one (sample, group) as a GEMM whose patch operand
// is read in place through a step table (gemmKernel.fi). The source's channels are copied once
// into a zero-padded box (pad cells before and after it on each axis); output positions are
// numbered in the box's row-major strides, q(o) = Σ o_a*bst_a, so that the patch element of step
// t (channel c, kernel step kk) at position o is box[c*cP + off[kk] + q(o)] for every o: a row
// of B is a run of the box. C is computed on the box's grid, positions q in [0, nq) (those whose
// coordinates are not an output read wrapped cells and are dropped), a block of columns at a
// time, and the outputs are copied out. Each output takes the same fma steps in the same order
// as on the packing path (padding read as +0), so the bits are the same.
type shiftConv struct {
	src, pad, out [ConvMaxRank]int // the source's sizes, the zero cells on each side, the result's sizes
	box, bst      [ConvMaxRank]int // src + 2*pad and its row-major strides
	cP            int              // the box's volume
	chans         int              // source channels
	outProd       int
	boff          []int    // per step t = c*len(steps)+kk: 4*(c*cP + the box offset of kernel step kk), in bytes
	nq            int      // positions computed: q(last output)+1, rounded up to nr
	rows          [][2]int // per output row (all axes but the last): its q and its flat output index
	srcRows       []int    // per source row (all axes but the last): the box position of its first cell
}

// newShiftConv plans a shiftConv of chans source channels of sizes src, padded by pad, with
// the result's sizes out and the kernel steps' offsets taps[a][t] on each axis (the cell of
// step kk, coordinates kk_a, for output o is o_a + taps[a][kk_a] in the box), for micro-kernels
// of nr columns.
func newShiftConv(src, pad, out [ConvMaxRank]int, taps [ConvMaxRank][]int, chans, nr int) *shiftConv {
	sc := &shiftConv{src: src, pad: pad, out: out, chans: chans, cP: 1, outProd: 1}
	for a := ConvMaxRank - 1; a >= 0; a-- {
		sc.box[a] = src[a] + 2*pad[a]
		sc.bst[a] = sc.cP
		sc.cP *= sc.box[a]
		sc.outProd *= out[a]
	}
	steps := stepOffsets(taps)
	sc.boff = make([]int, chans*len(steps))
	for c := range chans {
		for kk, st := range steps {
			off := c * sc.cP
			for a := range ConvMaxRank {
				off += st[a] * sc.bst[a]
			}
			sc.boff[c*len(steps)+kk] = 4 * off
		}
	}
	qLast := 0
	for a := range ConvMaxRank {
		qLast += (out[a] - 1) * sc.bst[a]
	}
	sc.nq = roundUp(qLast+1, nr)
	// The rows' first cells: output rows at their grid position, source rows at their padded one.
	var oc [ConvMaxRank]int
	nRows := sc.outProd / out[ConvMaxRank-1]
	sc.rows = make([][2]int, nRows)
	for r := range nRows {
		coords(&oc, r*out[ConvMaxRank-1], &out)
		q := 0
		for a := range ConvMaxRank {
			q += oc[a] * sc.bst[a]
		}
		sc.rows[r] = [2]int{q, r * out[ConvMaxRank-1]}
	}
	w := src[ConvMaxRank-1]
	sc.srcRows = make([]int, sizesProd(src)/max(1, w))
	for r := range sc.srcRows {
		coords(&oc, r*w, &src)
		q := 0
		for a := range ConvMaxRank {
			q += (oc[a] + pad[a]) * sc.bst[a]
		}
		sc.srcRows[r] = q
	}
	return sc
}

// sizesProd is the product of sizes.
func sizesProd(sizes [ConvMaxRank]int) int {
	n := 1
	for _, d := range sizes {
		n *= d
	}
	return n
}

// fillBox copies the source channels src (chans x srcProd) into box, zeroing the padding and
// the nr cells of slack after the last channel that the last column panel reads.
func (sc *shiftConv) fillBox(box, src []float32) {
	clear(box)
	w := sc.src[ConvMaxRank-1]
	for c := range sc.chans {
		for r, q := range sc.srcRows {
			copy(box[c*sc.cP+q:][:w], src[(c*len(sc.srcRows)+r)*w:][:w])
		}
	}
}

// run computes dst (rows x outProd, row stride outProd) = A · patches for the positions
// [j0, j1) of the box's grid (multiples of nr), with ap the packed A (panels of mr rows, the
// whole K each, zero rows past rows) and box the filled box; tile is scratch.
func (sc *shiftConv) run(k *gemmKernel, dst, ap, box []float32, rows, j0, j1 int, tile []float32) {
	mr, nr := k.mr, k.nr
	K := len(sc.boff)
	mp := roundUp(rows, mr)
	nb := len(tile) / mp
	kcMax := min(gemmKC, K)
	ri := 0 // the first output row whose run may still meet a block
	for b0 := j0; b0 < j1; b0 += nb {
		w := min(nb, j1-b0)
		for pc := 0; pc < K; pc += kcMax {
			kc := min(kcMax, K-pc)
			for jr := 0; jr < w; jr += nr {
				bp := &box[b0+jr]
				for ir := 0; ir < mp; ir += mr {
					k.fi(kc, &ap[ir*K+pc*mr], bp, &tile[ir*nb+jr], nb, &sc.boff[pc], pc > 0)
				}
			}
		}
		// Copy out the outputs among the block's positions [b0, b0+w).
		ow := sc.out[ConvMaxRank-1]
		for ; ri < len(sc.rows) && sc.rows[ri][0]+ow <= b0; ri++ {
		}
		for r := ri; r < len(sc.rows) && sc.rows[r][0] < b0+w; r++ {
			q, o := sc.rows[r][0], sc.rows[r][1]
			lo, hi := max(q, b0), min(q+ow, b0+w)
			for i := range rows {
				copy(dst[i*sc.outProd+o+lo-q:][:hi-lo], tile[i*nb+lo-b0:][:hi-lo])
			}
		}
	}
}

// shiftBlock is the number of grid positions shiftConv computes per block (a multiple of every
// kernel's nr): C's block of roundUp(rows, mr) x shiftBlock floats stays in L2. A variable so
// that tests can shrink it.
var shiftBlock = 512

// convShift runs the plan sc for batch*groups (sample, group) pairs, the column range split
// into chunks when the pairs are too few for the cores: pair ng's source channels start at
// src[srcAt(ng)], its result rows at dst[dstAt(ng)]; pack writes a group's packed A (panels of
// mr rows, whole K), once per call. Each item fills its pair's box, so a pair split into
// column chunks (few pairs for the cores, e.g. batch 1) is filled once per chunk.
func convShift(k *gemmKernel, sc *shiftConv, dst, src []float32, batch, groups, rows int,
	srcAt, dstAt func(n, grp int) int, pack func(ap []float32, grp int)) {
	K := len(sc.boff)
	mp := roundUp(rows, k.mr)
	chunk := colChunks(sc.nq, batch*groups, k.nr)
	nChunks := ceilDiv(sc.nq, chunk)
	srcProd := sizesProd(sc.src)
	// The groups' packed A, shared by their items.
	aps := make([]float32, groups*mp*K)
	for grp := range groups {
		pack(aps[grp*mp*K:(grp+1)*mp*K], grp)
	}
	convRun(batch*groups*nChunks, batch*groups*rows*K*sc.nq, func(it int, s *gemmScratch) {
		ng, ch := it/nChunks, it%nChunks
		n, grp := ng/groups, ng%groups
		s.b = growF32(s.b, sc.chans*sc.cP+k.nr)
		sc.fillBox(s.b, src[srcAt(n, grp):][:sc.chans*srcProd])
		s.tile = growF32(s.tile, mp*min(shiftBlock, chunk))
		j0 := ch * chunk
		sc.run(k, dst[dstAt(n, grp):], aps[grp*mp*K:], s.b, rows, j0, min(sc.nq, j0+chunk), s.tile)
	})
}

// readsInPlace reports whether every stride is 1 and every output size is in + 2*pad -
// (k-1)*dil (what the paths that read the patches in place assume of the geometry; the cpu API
// does not check that the sizes agree, ops builds them so).
func (g *convGeom) readsInPlace() bool {
	for a := range ConvMaxRank {
		if g.s[a] != 1 || g.out[a] != g.in[a]+2*g.p[a]-(g.k[a]-1)*g.d[a] {
			return false
		}
	}
	return true
}

// padWithinKernel reports whether pad_a <= (k_a-1)*dil_a on every axis: then every output of
// a stride-1 convolution's input gradient lies in dY padded by (k_a-1)*dil_a - pad_a.
func (g *convGeom) padWithinKernel() bool {
	for a := range ConvMaxRank {
		if g.p[a] > (g.k[a]-1)*g.d[a] {
			return false
		}
	}
	return true
}

// packWT packs the input gradient's A for group grp: A(i, t) = w[grp*coutg + co][i][kk] with t
// = co*kProd + kk (i < cing), as panels of mr rows over the whole K, rows past cing zero.
func packWT(ap, w []float32, kProd, cing, coutg, grp, mr int) {
	K := coutg * kProd
	for q := 0; q < cing; q += mr {
		h := min(mr, cing-q)
		d := ap[q*K : (q+mr)*K]
		for co := range coutg {
			wc := w[(grp*coutg+co)*cing*kProd:]
			for kk := range kProd {
				row := d[(co*kProd+kk)*mr:][:mr]
				for i := range h {
					row[i] = wc[(q+i)*kProd+kk]
				}
				clear(row[h:])
			}
		}
	}
}

// wgPanel is one row panel of convBwdWeightShift: h <= mr rows of dW^T, row i at off + i
// floats from a position of the channel-last box, holding the taps t = t0 + i of the kernel
// row kl (t = kx*C + c: last-axis tap kx, channel c).
type wgPanel struct{ off, h, kl, t0 int }

// shiftWGMaxCout is the most output channels per group for which the weight gradient reads
// its patches in place: packing costs the patches' size once per call while the product grows
// with the output channels, so with many of them the packed panels' cache reuse wins (measured,
// 3x3 at batch 8 on a 2-core Zen 4 with the AVX-512 tile: in place 1.6x faster at 64 channels
// and 1.2x at 128, packed 1.1x faster at 256 and 1.6x at 512; the AVX2 tile takes the same
// bound, not measured separately).
const shiftWGMaxCout = 128

// shiftWGBox is the most floats convBwdWeightShift holds in its boxes and dY^T at a time, but
// at least one sample's (samples are taken in chunks of about this size, K continuing from one
// chunk to the next).
var shiftWGBox = 1 << 20

// convBwdWeightShift is ConvBwdWeight for stride 1 with both operands read in place: per
// group, dW^T (rows (kernel row, last-axis tap, channel), columns co) = patches^T · dY^T, K =
// (sample, output position) ascending. Each sample's channels are copied into a zero-padded
// channel-last box (position-major, shiftConv's grid) and dY into dY^T (position-major), so
// that the patch rows of one kernel row (its last-axis taps times the channels, consecutive
// floats where the dilation is 1) are read at one stride per output position, and an output
// row of positions is one segment of K for the micro-kernel (gemmKernel.fss). Same fma steps
// in the same order as the plain loops.
func convBwdWeightShift(k *gemmKernel, dw, x, dy []float32, g *convGeom, batch, cin, cout, groups int) {
	C, coutg := cin/groups, cout/groups
	mr, nr := k.mr, k.nr
	last := ConvMaxRank - 1
	kw, dl := g.k[last], g.d[last]
	sc := newShiftConv(g.in, g.p, g.out, g.taps(false), 1, nr)
	kRows := len(sc.boff) / kw // kernel rows (taps of the leading axes)
	var panels []wgPanel
	for kl := range kRows {
		base := sc.boff[kl*kw] / 4 * C // the kernel row's first tap, in floats of the box
		if dl == 1 {
			// The row's kw*C taps are consecutive floats.
			for t0 := 0; t0 < kw*C; t0 += mr {
				panels = append(panels, wgPanel{off: base + t0, h: min(mr, kw*C-t0), kl: kl, t0: t0})
			}
			continue
		}
		for kx := range kw {
			for c0 := 0; c0 < C; c0 += mr {
				panels = append(panels, wgPanel{off: base + kx*dl*C + c0, h: min(mr, C-c0), kl: kl, t0: kx*C + c0})
			}
		}
	}
	colPanels := ceilDiv(coutg, nr)
	items := len(panels) * colPanels
	P, ow, iw := g.outProd, g.out[last], g.in[last]
	boxLen := sc.cP * C
	chunkN := max(1, min(batch, shiftWGBox/max(1, boxLen+P*coutg)))
	sb := gemmPool.Get().(*gemmScratch)
	defer gemmPool.Put(sb)
	sb.a = growF32(sb.a, chunkN*boxLen+mr)
	sb.b = growF32(sb.b, chunkN*P*coutg+nr)
	box, dyT := sb.a, sb.b
	segs := make([]int, 0, 2*chunkN*len(sc.rows))
	tiles := make([]float32, items*mr*nr)
	for grp := range groups {
		for n0 := 0; n0 < batch; n0 += chunkN {
			nc := min(chunkN, batch-n0)
			Parallel(nc, max(1, (1<<15)/max(1, boxLen+P*coutg)), func(lo, hi int) {
				for n := lo; n < hi; n++ {
					bn := box[n*boxLen : (n+1)*boxLen]
					clear(bn)
					xs := x[((n0+n)*cin+grp*C)*g.inProd:]
					for r, q := range sc.srcRows { // bn[(q+j)*C + c] = x[c][r*iw + j]
						packT(bn[q*C:][:iw*C], xs[r*iw:], g.inProd, iw, C, C)
					}
					// dY^T of the sample: dyT[o*coutg + co] = dy[co][o].
					packT(dyT[n*P*coutg:(n+1)*P*coutg], dy[((n0+n)*cout+grp*coutg)*P:], P, P, coutg, coutg)
				}
			})
			segs = segs[:0]
			for n := range nc {
				for _, r := range sc.rows {
					segs = append(segs, 4*(n*boxLen+r[0]*C), 4*(n*P+r[1])*coutg)
				}
			}
			convRun(items, nc*P*coutg*C*kRows*kw, func(it int, _ *gemmScratch) {
				pn, cp := &panels[it/colPanels], it%colPanels
				k.fss(ow, &box[pn.off], &dyT[cp*nr], &tiles[it*mr*nr], nr, 4*C, 4*coutg, &segs[0], len(segs)/2, n0 > 0)
			})
		}
		// dw[grp*coutg + co][c][kl*kw + kx] from row i (t = t0 + i), column co of each tile.
		dwg := dw[grp*coutg*C*kRows*kw:]
		for it := range items {
			pn, cp := &panels[it/colPanels], it%colPanels
			tile := tiles[it*mr*nr:]
			for co := cp * nr; co < min(coutg, (cp+1)*nr); co++ {
				for i := range pn.h {
					t := pn.t0 + i
					dwg[(co*C+t%C)*kRows*kw+pn.kl*kw+t/C] = tile[i*nr+co-cp*nr]
				}
			}
		}
	}
}
