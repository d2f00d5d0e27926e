package ops

import (
	"fmt"
	"sync"

	"github.com/torchlean-go/torchlean/cpu"
)

// The spectral convolution of a Fourier Neural Operator layer (FNO-1D), the seeds'
// spectralConv1dRfft* family, on the exact kernels already mirrored between the backends.
//
// Only the kept bins k < modes of the real FFT matter, so the transforms are truncated DFTs
// written as matrix products with two tables per (grid, modes), computed once on the host in
// float64 and rounded to float32 (see spectralHostTables):
//
//	F (2*modes, grid):  F[k][t] = cos(2πkt/grid), F[modes+k][t] = -sin(2πkt/grid)
//	G (grid, 2*modes):  G[t][k] = e_k cos(2πkt/grid)/grid, G[t][modes+k] = -e_k sin(2πkt/grid)/grid
//
// with e_k = 1 for the edge bins (k = 0, and k = grid/2 for an even grid) and 2 for the interior
// ones, and G's sine column 0 at the edges (their imaginary parts are ignored). The angle is
// reduced exactly in integers (r = k*t mod grid) and by quadrant, so sin and cos are exact 0 and
// ±1 where they should be. For x of shape (batch, grid, width) and x' its (grid, batch*width)
// transpose, with X = [Xr; Xi] and Z = [Zr; Zi] (2*modes, batch*width) and, per bin k, the
// (batch, width) slices Xr[k], Xi[k], Zr[k], Zi[k]:
//
//	X = F·x'                                       the kept bins of the unnormalized rfft
//	Zr[k] = Xr[k]·wRe[k] - Xi[k]·wIm[k],  Zi[k] = Xr[k]·wIm[k] + Xi[k]·wRe[k]
//	y' = G·Z                                       the normalized inverse of the truncated spectrum
//
// and the vector-Jacobian products, by transposes of the same products:
//
//	dZ = Gᵀ·dY'                                    ((e_k/grid)·rfft(dY), the seeds' dZ)
//	dXr[k] = dZr[k]·wRe[k]ᵀ + dZi[k]·wIm[k]ᵀ,  dXi[k] = dZi[k]·wRe[k]ᵀ - dZr[k]·wIm[k]ᵀ
//	dx' = Fᵀ·dX
//	dwRe[k] = Xr[k]ᵀ·dZr[k] + Xi[k]ᵀ·dZi[k],  dwIm[k] = Xr[k]ᵀ·dZi[k] - Xi[k]ᵀ·dZr[k]
//
// Every product is one Bmm (an ascending-K fma chain per output, one owner, no atomics): the
// weight gradients of a bin reduce over the batch as the K axis of one product, after the grid
// was reduced inside X and dZ, so the order is fixed in both modes. Every step is a mirrored
// kernel (bmm, swap_adjacent/transpose2d, add, sub, concat1d), so the CPU gives the GPU's bits.

// The spectral tables are cached per device and (grid, modes), least recently used first out,
// within spectralCacheLimit bytes per device; tables larger than that are built for the call and
// released after it. Cached tables are not counted in Stats.LiveBytes (they are not buffers of
// the caller) but in Stats.CachedBytes, and Collect(true) releases them.
var spectralCacheLimit int64 = 64 << 20 // a variable for the tests

// spectralTables are the tables F (fwd) and G (inv) of one (grid, modes); see the comment above.
type spectralTables struct {
	fwd, inv *Buffer
	bytes    int64
	lastUse  uint64
}

type spectralKey struct {
	dev         *Device
	grid, modes int
}

var spectralCache struct {
	sync.Mutex
	m     map[spectralKey]*spectralTables
	bytes map[*Device]int64
	tick  uint64
}

// spectralTablesFor returns the tables of (grid, modes) on d for one op: views of the cached
// ones, in use until done is called (their memory stays, even when another goroutine evicts
// them meanwhile), or tables built for the call alone when they are above the cache's bound
// (done releases them).
func spectralTablesFor(d *Device, grid, modes int) (tb *spectralTables, done func(), err error) {
	key := spectralKey{d, grid, modes}
	c := &spectralCache
	c.Lock()
	if tb := c.m[key]; tb != nil {
		v, done, err := tb.useLocked()
		c.Unlock()
		return v, done, err
	}
	c.Unlock()
	fwd, inv := spectralHostTables(grid, modes)
	fb, err := FromFloat32(d, fwd)
	if err != nil {
		return nil, nil, err
	}
	ib, err := FromFloat32(d, inv)
	if err != nil {
		fb.Release()
		return nil, nil, err
	}
	tb = &spectralTables{fwd: fb, inv: ib, bytes: 4 * int64(len(fwd)+len(inv))}
	if tb.bytes > spectralCacheLimit { // built for this call only: ordinary temporaries
		return tb, func() { fb.Release(); ib.Release() }, nil
	}
	c.Lock()
	defer c.Unlock()
	if old := c.m[key]; old != nil { // another goroutine built them meanwhile
		fb.Release()
		ib.Release()
		return old.useLocked()
	}
	for c.bytes[d]+tb.bytes > spectralCacheLimit {
		var lru spectralKey
		var oldest *spectralTables
		for k, e := range c.m {
			if k.dev == d && (oldest == nil || e.lastUse < oldest.lastUse) {
				lru, oldest = k, e
			}
		}
		dropSpectralLocked(lru, oldest)
	}
	if c.m == nil {
		c.m, c.bytes = map[spectralKey]*spectralTables{}, map[*Device]int64{}
	}
	c.m[key] = tb
	c.bytes[d] += tb.bytes
	d.stats.live.Add(-tb.bytes) // cached, not live: see spectralCacheLimit
	return tb.useLocked()
}

// useLocked marks the cached tables used by one op (under the cache's lock) and returns views
// of them for its launches (an evicted table is released, and a launch refuses a released
// buffer, but its memory stays until the use ends) and the use's end.
func (tb *spectralTables) useLocked() (*spectralTables, func(), error) {
	spectralCache.tick++
	tb.lastUse = spectralCache.tick
	if err := tb.fwd.use(); err != nil {
		return nil, nil, err
	}
	if err := tb.inv.use(); err != nil {
		tb.fwd.done()
		return nil, nil, err
	}
	v := &spectralTables{fwd: tb.fwd.view(0, tb.fwd.n), inv: tb.inv.view(0, tb.inv.n), bytes: tb.bytes}
	return v, func() { tb.fwd.done(); tb.inv.done() }, nil
}

// dropSpectralLocked removes the cached tables of key and releases them (their memory goes back
// once the ops using them are done, counted live until then).
func dropSpectralLocked(key spectralKey, tb *spectralTables) {
	c := &spectralCache
	delete(c.m, key)
	c.bytes[key.dev] -= tb.bytes
	key.dev.stats.live.Add(tb.bytes) // Release counts them out again
	tb.fwd.Release()
	tb.inv.Release()
}

// dropSpectralTables releases every cached spectral table of d (Collect).
func dropSpectralTables(d *Device) {
	c := &spectralCache
	c.Lock()
	defer c.Unlock()
	for k, tb := range c.m {
		if k.dev == d {
			dropSpectralLocked(k, tb)
		}
	}
}

// spectralCachedBytes returns the bytes of d's cached spectral tables (Stats.CachedBytes).
func spectralCachedBytes(d *Device) int64 {
	c := &spectralCache
	c.Lock()
	defer c.Unlock()
	return c.bytes[d]
}

// spectralHostTables returns the tables F (2*modes, grid) and G (grid, 2*modes), row-major:
// each entry computed in float64 from the exactly reduced angle (cosSin2Pi) and rounded once to
// float32 (G's factor e_k/grid applied in float64 first), with +0 for every zero.
func spectralHostTables(grid, modes int) (fwd, inv []float32) {
	cs, sn := make([]float64, grid), make([]float64, grid)
	for r := range grid {
		cs[r], sn[r] = cosSin2Pi(r, grid)
	}
	fwd = make([]float32, 2*modes*grid)
	inv = make([]float32, grid*2*modes)
	for k := range modes {
		edge := k == 0 || 2*k == grid
		scale := 2 / float64(grid)
		if edge {
			scale = 1 / float64(grid)
		}
		r := 0 // k*t mod grid, stepped by k
		for t := range grid {
			fwd[k*grid+t] = float32(cs[r])
			fwd[(modes+k)*grid+t] = float32(0 - sn[r])
			inv[t*2*modes+k] = float32(scale * cs[r])
			if !edge {
				inv[t*2*modes+modes+k] = float32(0 - scale*sn[r])
			}
			if r += k; r >= grid {
				r -= grid
			}
		}
	}
	return fwd, inv
}

// cosSin2Pi returns cos and sin of 2π r/n (0 <= r < n) in float64: cpu.UnitRoot, the same bits
// on every GOARCH (the angle reduced exactly to an octant with integers, then a double-double
// series with every float64 product explicitly rounded; correctly rounded in all cases measured),
// exact at multiples of π/2, symmetric (r and n - r differ only in the sign of sin) and never -0.
func cosSin2Pi(r, n int) (c, s float64) {
	return cpu.UnitRoot(uint64(r), uint64(n))
}

// spectralSizes checks the sizes of a spectral convolution (batch >= 0, grid > 0, width > 0,
// 1 <= modes <= grid/2+1, no overflowing product) and returns the lengths of x
// (batch*grid*width), of a weight (modes*width*width) and of the kept spectrum
// (2*modes*batch*width).
func spectralSizes(op string, batch, grid, width, modes int) (nx, nw, nm int, err error) {
	switch {
	case batch < 0:
		return 0, 0, 0, fmt.Errorf("ops: %s: batch %d is negative", op, batch)
	case grid <= 0:
		return 0, 0, 0, fmt.Errorf("ops: %s: grid %d, want grid > 0", op, grid)
	case width <= 0:
		return 0, 0, 0, fmt.Errorf("ops: %s: width %d, want width > 0", op, width)
	case modes < 1 || modes > grid/2+1:
		return 0, 0, 0, fmt.Errorf("ops: %s: modes %d, want 1 <= modes <= grid/2+1 = %d (grid %d)",
			op, modes, grid/2+1, grid)
	}
	nx, ok1 := mulFits(batch, grid, width)
	nw, ok2 := mulFits(modes, width, width)
	nm, ok3 := mulFits(2, modes, batch, width)
	_, ok4 := mulFits(2, modes, grid)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0, 0, 0, fmt.Errorf("ops: %s: sizes (batch %d, grid %d, width %d, modes %d) overflow",
			op, batch, grid, width, modes)
	}
	return nx, nw, nm, nil
}

// spectralArg is one buffer operand of a spectral op: its name for messages and its length.
type spectralArg struct {
	b    *Buffer
	name string
	n    int
}

// spectralCheck checks the sizes (spectralSizes) and the lengths and device of the operands
// args lists; it returns the first operand's device.
func spectralCheck(op string, batch, grid, width, modes int, args func(nx, nw, nm int) []spectralArg) (*Device, error) {
	nx, nw, nm, err := spectralSizes(op, batch, grid, width, modes)
	if err != nil {
		return nil, err
	}
	var bufs []*Buffer
	for _, a := range args(nx, nw, nm) {
		if err := checkLen(op, a.b, a.n, a.name); err != nil {
			return nil, err
		}
		bufs = append(bufs, a.b)
	}
	if err := sameDevice(op, bufs); err != nil {
		return nil, err
	}
	return bufs[0].dev, nil
}

// xArg, wArgs and modesArg are the operands, named with their shapes for messages.
func xArg(x *Buffer, name string, batch, grid, width, nx int) spectralArg {
	return spectralArg{x, fmt.Sprintf("%s (batch %d, grid %d, width %d)", name, batch, grid, width), nx}
}

func wArgs(wRe, wIm *Buffer, modes, width, nw int) []spectralArg {
	return []spectralArg{
		{wRe, fmt.Sprintf("wRe (modes %d, width %d, width %d)", modes, width, width), nw},
		{wIm, fmt.Sprintf("wIm (modes %d, width %d, width %d)", modes, width, width), nw},
	}
}

func modesArg(xModes *Buffer, batch, width, modes, nm int) spectralArg {
	return spectralArg{xModes, fmt.Sprintf("xModes (2, modes %d, batch %d, width %d)", modes, batch, width), nm}
}

// spectralRun sequences the steps of one spectral op: each step runs only while no earlier one
// failed, and its result is a temporary that close releases unless kept.
type spectralRun struct {
	op  string
	err error
	tmp []*Buffer
}

// do runs f (unless a step failed) and returns its result, a temporary.
func (r *spectralRun) do(f func() (*Buffer, error)) *Buffer {
	if r.err != nil {
		return nil
	}
	b, err := f()
	if err != nil {
		r.err = asOp(r.op, err)
		return nil
	}
	r.tmp = append(r.tmp, b)
	return b
}

// keep takes b out of the temporaries (nil after a failure).
func (r *spectralRun) keep(b *Buffer) *Buffer {
	if r.err != nil {
		return nil
	}
	for i, t := range r.tmp {
		if t == b {
			r.tmp[i] = nil
		}
	}
	return b
}

// close releases the temporaries.
func (r *spectralRun) close() { releaseAll(r.tmp) }

// drop releases the temporary b early (its last reader ran), keeping the peak memory low; the
// caller's own buffers (the run's x, dY) are not temporaries and stay.
func (r *spectralRun) drop(b *Buffer) {
	for i, t := range r.tmp {
		if t == b && t != nil {
			t.Release()
			r.tmp[i] = nil
		}
	}
}

// swap returns x (a, b, width) as (b, a, width): x itself when a or b is 1 (the same layout).
func (r *spectralRun) swap(x *Buffer, a, b, width int) *Buffer {
	if r.err != nil || a == 1 || b == 1 {
		return x
	}
	return r.do(func() (*Buffer, error) { return SwapAdjacentAtDepth(x, []int{a, b, width}, 0) })
}

// bmm is one product of the run (BmmWithTranspose).
func (r *spectralRun) bmm(a, b *Buffer, batch, m, n, p int, transA, transB bool) *Buffer {
	return r.do(func() (*Buffer, error) { return bmm(r.op, a, b, batch, m, n, p, transA, transB) })
}

// add and sub are Add and Sub of the run.
func (r *spectralRun) add(a, b *Buffer) *Buffer {
	return r.do(func() (*Buffer, error) { return Add(a, b) })
}
func (r *spectralRun) sub(a, b *Buffer) *Buffer {
	return r.do(func() (*Buffer, error) { return Sub(a, b) })
}

// concat is Concat1d of two buffers of h elements each.
func (r *spectralRun) concat(a, b *Buffer, h int) *Buffer {
	return r.do(func() (*Buffer, error) { return Concat1d(a, b, h, h) })
}

// halves returns the two halves (h elements each) of x, an operand the caller holds, as views
// for the launches of the run (nil after a failure).
func (r *spectralRun) halves(x *Buffer, h int) (*Buffer, *Buffer) {
	if r.err != nil {
		return nil, nil
	}
	return x.view(0, h), x.view(h, h)
}

// rfftModes is X = F·x' (see RfftModes).
func (r *spectralRun) rfftModes(tb *spectralTables, x *Buffer, batch, grid, width, modes int) *Buffer {
	xt := r.swap(x, batch, grid, width)
	xm := r.bmm(tb.fwd, xt, 1, 2*modes, grid, batch*width, false, false)
	r.drop(xt)
	return xm
}

// fromModes is the channel mixing of the kept spectrum X and the inverse: y (batch, grid, width).
func (r *spectralRun) fromModes(tb *spectralTables, xm, wRe, wIm *Buffer, batch, grid, width, modes int) *Buffer {
	bw := batch * width
	h := modes * bw
	xr, xi := r.halves(xm, h)
	zr := r.sub(r.bmm(xr, wRe, modes, batch, width, width, false, false), r.bmm(xi, wIm, modes, batch, width, width, false, false))
	zi := r.add(r.bmm(xr, wIm, modes, batch, width, width, false, false), r.bmm(xi, wRe, modes, batch, width, width, false, false))
	yt := r.bmm(tb.inv, r.concat(zr, zi, h), 1, grid, 2*modes, bw, false, false)
	y := r.swap(yt, grid, batch, width)
	if y != yt {
		r.drop(yt)
	}
	return y
}

// backward computes the VJPs from the kept spectrum xm (needed for the weights only) and dY.
func (r *spectralRun) backward(tb *spectralTables, xm, wRe, wIm, dY *Buffer, batch, grid, width, modes int,
	wantX, wantW bool) (dx, dwRe, dwIm *Buffer) {
	bw := batch * width
	h := modes * bw
	dyt := r.swap(dY, batch, grid, width)
	dz := r.bmm(tb.inv, dyt, 1, 2*modes, grid, bw, true, false) // Gᵀ·dY'
	r.drop(dyt)
	dzr, dzi := r.halves(dz, h)
	if wantX {
		dxr := r.add(r.bmm(dzr, wRe, modes, batch, width, width, false, true), r.bmm(dzi, wIm, modes, batch, width, width, false, true))
		dxi := r.sub(r.bmm(dzi, wRe, modes, batch, width, width, false, true), r.bmm(dzr, wIm, modes, batch, width, width, false, true))
		dxt := r.bmm(tb.fwd, r.concat(dxr, dxi, h), 1, grid, 2*modes, bw, true, false) // Fᵀ·dX
		dx = r.keep(r.swap(dxt, grid, batch, width))
		if dx != dxt {
			r.drop(dxt)
		}
	}
	if wantW {
		xr, xi := r.halves(xm, h)
		dwRe = r.keep(r.add(r.bmm(xr, dzr, modes, width, batch, width, true, false), r.bmm(xi, dzi, modes, width, batch, width, true, false)))
		dwIm = r.keep(r.sub(r.bmm(xr, dzi, modes, width, batch, width, true, false), r.bmm(xi, dzr, modes, width, batch, width, true, false)))
	}
	if r.err != nil {
		releaseAll([]*Buffer{dx, dwRe, dwIm})
		return nil, nil, nil
	}
	return dx, dwRe, dwIm
}

// RfftModes returns the bins k < modes of the unnormalized real DFT over the grid axis of x
// (batch, grid, width), X[k][b][c] = Σ_t x[b][t][c]·e^{-2πikt/grid}, as one buffer of shape
// (2, modes, batch, width): the real parts, then the imaginary parts. It is the product F·x' of
// the host table F (cos and -sin of the exactly reduced angles, see spectralHostTables) and x
// viewed as (grid, batch*width) (a transpose when batch > 1): one Bmm, an ascending fma chain
// over t per output, bit-identical on both backends. It is the spectrum the spectral convolution
// mixes: SpectralConv1dFromModes and SpectralConv1dBwdFromModes take it, so that a training
// step computes it once. Requires batch >= 0, grid > 0, width > 0 and 1 <= modes <= grid/2+1.
func RfftModes(x *Buffer, batch, grid, width, modes int) (*Buffer, error) {
	const op = "rfft_modes"
	d, err := spectralCheck(op, batch, grid, width, modes, func(nx, _, _ int) []spectralArg {
		return []spectralArg{xArg(x, "x", batch, grid, width, nx)}
	})
	if err != nil {
		return nil, err
	}
	if batch == 0 {
		return newBuffer(d, 0)
	}
	tb, done, err := spectralTablesFor(d, grid, modes)
	if err != nil {
		return nil, opErr(op, err)
	}
	defer done()
	r := &spectralRun{op: op}
	defer r.close()
	return r.keep(r.rfftModes(tb, x, batch, grid, width, modes)), r.err
}

// SpectralConv1dBatched returns the spectral convolution of an FNO-1D layer for each of batch
// samples: x is (batch, grid, width), wRe and wIm (modes, width, width), the result (batch,
// grid, width). Per sample and channel c, X = rfft(x[:, c]) over the grid (unnormalized), Z[k][o]
// = Σ_c X[k][c]·(wRe + i·wIm)[k][c][o] for the kept bins k < modes and 0 for the others, and y
// = irfft(Z) normalized by 1/grid, the imaginary parts of the DC and Nyquist bins ignored (the
// seeds' spectralConv1dRfftFwd, sample by sample).
//
// The arithmetic, the same bits on both backends and in both modes: X = RfftModes(x); per bin
// k, Zr[k] = Xr[k]·wRe[k] - Xi[k]·wIm[k] and Zi[k] = Xr[k]·wIm[k] + Xi[k]·wRe[k] (four Bmm over
// the bins, then Sub and Add); y = G·[Zr; Zi] with the host table G (grid, 2*modes) of the
// inverse's cos and -sin scaled by e_k/grid (e_k = 1 for the DC and Nyquist bins, whose sine
// column is 0, and 2 for the others), transposed back to (batch, grid, width). Only the kept
// bins are ever computed. The tables are cached per device and (grid, modes) (Stats.CachedBytes;
// Collect(true) releases them). Requires batch >= 0, grid > 0, width > 0 and 1 <= modes <=
// grid/2+1; batch 0 gives an empty result.
func SpectralConv1dBatched(x, wRe, wIm *Buffer, batch, grid, width, modes int) (*Buffer, error) {
	y, _, err := spectralForward("spectral_conv1d", x, wRe, wIm, batch, grid, width, modes, false)
	return y, err
}

// SpectralConv1dForward is SpectralConv1dBatched returning also the kept spectrum xModes =
// RfftModes(x) it computed on the way, for SpectralConv1dBwdFromModes (a training step's
// backward pass then skips recomputing it). The caller releases both.
func SpectralConv1dForward(x, wRe, wIm *Buffer, batch, grid, width, modes int) (y, xModes *Buffer, err error) {
	return spectralForward("spectral_conv1d", x, wRe, wIm, batch, grid, width, modes, true)
}

func spectralForward(op string, x, wRe, wIm *Buffer, batch, grid, width, modes int, keepModes bool) (y, xModes *Buffer, err error) {
	d, err := spectralCheck(op, batch, grid, width, modes, func(nx, nw, _ int) []spectralArg {
		return append([]spectralArg{xArg(x, "x", batch, grid, width, nx)}, wArgs(wRe, wIm, modes, width, nw)...)
	})
	if err != nil {
		return nil, nil, err
	}
	if batch == 0 {
		y, _ = newBuffer(d, 0)
		if keepModes {
			xModes, _ = newBuffer(d, 0)
		}
		return y, xModes, nil
	}
	tb, done, err := spectralTablesFor(d, grid, modes)
	if err != nil {
		return nil, nil, opErr(op, err)
	}
	defer done()
	r := &spectralRun{op: op}
	defer r.close()
	xm := r.rfftModes(tb, x, batch, grid, width, modes)
	y = r.keep(r.fromModes(tb, xm, wRe, wIm, batch, grid, width, modes))
	if keepModes {
		xModes = r.keep(xm)
	}
	if r.err != nil {
		releaseAll([]*Buffer{y, xModes})
		return nil, nil, r.err
	}
	return y, xModes, nil
}

// SpectralConv1dFromModes is SpectralConv1dBatched from the kept spectrum xModes = RfftModes(x)
// (2, modes, batch, width) instead of x: the channel mixing and the inverse.
func SpectralConv1dFromModes(xModes, wRe, wIm *Buffer, batch, grid, width, modes int) (*Buffer, error) {
	const op = "spectral_conv1d_from_modes"
	d, err := spectralCheck(op, batch, grid, width, modes, func(_, nw, nm int) []spectralArg {
		return append([]spectralArg{modesArg(xModes, batch, width, modes, nm)}, wArgs(wRe, wIm, modes, width, nw)...)
	})
	if err != nil {
		return nil, err
	}
	if batch == 0 {
		return newBuffer(d, 0)
	}
	if err := xModes.useIn(op); err != nil { // its halves are read through views
		return nil, err
	}
	defer xModes.done()
	tb, done, err := spectralTablesFor(d, grid, modes)
	if err != nil {
		return nil, opErr(op, err)
	}
	defer done()
	r := &spectralRun{op: op}
	defer r.close()
	return r.keep(r.fromModes(tb, xModes, wRe, wIm, batch, grid, width, modes)), r.err
}

// SpectralConv1dBatchedBwd returns the vector-Jacobian products of SpectralConv1dBatched for the
// cotangent dY (batch, grid, width): dx (batch, grid, width), dwRe and dwIm (modes, width,
// width), the weight gradients summed over the batch. With dZ = Gᵀ·dY' (the rfft of dY scaled
// by e_k/grid, the seeds' dZ) and, per bin k, the (batch, width) slices of X and dZ:
//
//	dXr[k] = dZr[k]·wRe[k]ᵀ + dZi[k]·wIm[k]ᵀ,  dXi[k] = dZi[k]·wRe[k]ᵀ - dZr[k]·wIm[k]ᵀ
//	dx = Fᵀ·[dXr; dXi]                          (transposed back to (batch, grid, width))
//	dwRe[k] = Xr[k]ᵀ·dZr[k] + Xi[k]ᵀ·dZi[k],    dwIm[k] = Xr[k]ᵀ·dZi[k] - Xi[k]ᵀ·dZr[k]
//
// each product one Bmm read in place (an ascending fma chain: over the grid for dZ, over the
// kept bins for dx, over the batch for the weights), then Add or Sub: a fixed order, no
// atomics, the same bits on both backends and in both modes. It computes X = RfftModes(x) once;
// SpectralConv1dBwdFromModes takes it from the forward pass instead.
func SpectralConv1dBatchedBwd(x, wRe, wIm, dY *Buffer, batch, grid, width, modes int) (dx, dwRe, dwIm *Buffer, err error) {
	return spectralBackward("spectral_conv1d_bwd", x, nil, wRe, wIm, dY, batch, grid, width, modes, true, true)
}

// SpectralConv1dBwdFromModes is SpectralConv1dBatchedBwd from the kept spectrum xModes =
// RfftModes(x) (SpectralConv1dForward returns it), computing dx only with wantX and dwRe, dwIm
// only with wantW (nil otherwise). xModes is read only for the weights: it may be nil without
// wantW.
func SpectralConv1dBwdFromModes(xModes, wRe, wIm, dY *Buffer, batch, grid, width, modes int, wantX, wantW bool) (dx, dwRe, dwIm *Buffer, err error) {
	const op = spectralBwdFromModes
	if wantW && xModes == nil {
		return nil, nil, nil, fmt.Errorf("ops: %s: the weight gradients need xModes (nil)", op)
	}
	return spectralBackward(op, nil, xModes, wRe, wIm, dY, batch, grid, width, modes, wantX, wantW)
}

// spectralBwdFromModes names SpectralConv1dBwdFromModes, whose x is nil and xModes given.
const spectralBwdFromModes = "spectral_conv1d_bwd_from_modes"

// spectralBackward is the backward pass from x (when xModes is nil and the weights are wanted,
// X is computed from it) or from xModes.
func spectralBackward(op string, x, xModes, wRe, wIm, dY *Buffer, batch, grid, width, modes int,
	wantX, wantW bool) (dx, dwRe, dwIm *Buffer, err error) {
	fromModes := op == spectralBwdFromModes
	d, err := spectralCheck(op, batch, grid, width, modes, func(nx, nw, nm int) []spectralArg {
		args := []spectralArg{xArg(dY, "dY", batch, grid, width, nx)}
		if !fromModes {
			args = append(args, xArg(x, "x", batch, grid, width, nx))
		} else if xModes != nil || wantW {
			args = append(args, modesArg(xModes, batch, width, modes, nm))
		}
		return append(args, wArgs(wRe, wIm, modes, width, nw)...)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if batch == 0 {
		if wantX {
			dx, _ = newBuffer(d, 0)
		}
		if wantW {
			nw := modes * width * width
			if dwRe, err = full(op, d, nw, 0); err == nil {
				if dwIm, err = full(op, d, nw, 0); err != nil {
					dwRe.Release()
					dwRe = nil
				}
			}
		}
		if err != nil {
			dx.Release()
			return nil, nil, nil, err
		}
		return dx, dwRe, dwIm, nil
	}
	if xModes != nil && wantW { // its halves are read through views
		if err := xModes.useIn(op); err != nil {
			return nil, nil, nil, err
		}
		defer xModes.done()
	}
	tb, done, err := spectralTablesFor(d, grid, modes)
	if err != nil {
		return nil, nil, nil, opErr(op, err)
	}
	defer done()
	r := &spectralRun{op: op}
	defer r.close()
	if wantW && !fromModes {
		xModes = r.rfftModes(tb, x, batch, grid, width, modes)
	}
	dx, dwRe, dwIm = r.backward(tb, xModes, wRe, wIm, dY, batch, grid, width, modes, wantX, wantW)
	return dx, dwRe, dwIm, r.err
}

// SpectralConv1dRfftFwd is the seeds' spectralConv1dRfftFwd: SpectralConv1dBatched of one
// sample, x (grid, width) and wRe, wIm (modes, width, width) row-major, the result (grid, width).
// Requires grid > 0, width > 0 and 1 <= modes <= grid/2+1.
func SpectralConv1dRfftFwd(x, wRe, wIm *Buffer, grid, width, modes int) (*Buffer, error) {
	y, _, err := spectralForward("spectral_conv1d_rfft_fwd", x, wRe, wIm, 1, grid, width, modes, false)
	return y, err
}

// SpectralConv1dRfftBwdX is the seeds' spectralConv1dRfftBwdX: the VJP dx (grid, width) of
// SpectralConv1dRfftFwd for the cotangent dY (grid, width), as SpectralConv1dBatchedBwd computes
// it (x is checked, not read).
func SpectralConv1dRfftBwdX(x, wRe, wIm, dY *Buffer, grid, width, modes int) (*Buffer, error) {
	dx, _, _, err := spectralBackward("spectral_conv1d_rfft_bwd_x", x, nil, wRe, wIm, dY, 1, grid, width, modes, true, false)
	return dx, err
}

// SpectralConv1dRfftBwdWRe is the seeds' spectralConv1dRfftBwdWRe: the VJP dwRe (modes, width,
// width) of SpectralConv1dRfftFwd for the cotangent dY, as SpectralConv1dBatchedBwd computes it.
func SpectralConv1dRfftBwdWRe(x, wRe, wIm, dY *Buffer, grid, width, modes int) (*Buffer, error) {
	_, dwRe, dwIm, err := spectralBackward("spectral_conv1d_rfft_bwd_wre", x, nil, wRe, wIm, dY, 1, grid, width, modes, false, true)
	dwIm.Release()
	return dwRe, err
}

// SpectralConv1dRfftBwdWIm is the seeds' spectralConv1dRfftBwdWIm: the VJP dwIm (modes, width,
// width) of SpectralConv1dRfftFwd for the cotangent dY, as SpectralConv1dBatchedBwd computes it.
func SpectralConv1dRfftBwdWIm(x, wRe, wIm, dY *Buffer, grid, width, modes int) (*Buffer, error) {
	_, dwRe, dwIm, err := spectralBackward("spectral_conv1d_rfft_bwd_wim", x, nil, wRe, wIm, dY, 1, grid, width, modes, false, true)
	dwRe.Release()
	return dwIm, err
}
