package ops

import (
	"fmt"
	"math"
	"sync"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The FFT family (ptx/fft.cu; cpu/fft.go): our own exact FFT, the same bits on every device.
// A transform of length n runs the plan cpu.NewRfftPlan(n), a function of n alone: Stockham
// stages of radices 4, 2, 3, 5, 7, 11 and 13, or Bluestein's chirp-z algorithm around a
// power-of-two FFT for lengths with a larger prime factor; the real transforms of an even length
// run the complex FFT of half the length on the row read as complex values, odd lengths the
// complex FFT of the row widened to complex. A mixed-radix complex FFT of length at most
// fftRowMax runs in one launch, one block per row in shared memory (fft_row; rfft_row and
// irfft_row with the real transforms' packing fused), longer ones one launch per stage over the
// whole batch (fft_stage) between the packing passes; both give the same bits (fftRowPlan). Every
// constant the kernels read (twiddles, the odd radices' constants, the chirp and its transform)
// is computed on the host in float64 from exactly reduced angles and rounded to float32, once
// per length and device: the plans are cached (fftPlanCache).

var (
	fftStageOp = row(&kernelOp{name: "fft_stage", kernel: ptx.FftStage, outs: 1, ins: 3,
		grid:  strided(func(s []int) int { return s[0] * (s[1] / s[3]) }),
		units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.FFTStage(h.b[0], h.b[1], h.b[2], h.b[3], h.s[1], h.s[2], h.s[3], lo, hi)
		}})
	fftWidenOp = row(&kernelOp{name: "fft_widen", kernel: ptx.FftWiden, outs: 1, ins: 1,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.FFTWiden(h.b[0], h.b[1], lo, hi) }})
	rfftPostOp = row(&kernelOp{name: "rfft_post", kernel: ptx.RfftPost, outs: 1, ins: 2,
		grid: strided(func(s []int) int { return s[0] * (s[1] + 1) }), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.RfftPost(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }})
	rfftPostOddOp = row(&kernelOp{name: "rfft_post_odd", kernel: ptx.RfftPostOdd, outs: 1, ins: 1,
		grid: strided(func(s []int) int { return s[0] * (s[1]/2 + 1) }), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.RfftPostOdd(h.b[0], h.b[1], h.s[1], lo, hi) }})
	irfftPreOp = row(&kernelOp{name: "irfft_pre", kernel: ptx.IrfftPre, outs: 1, ins: 2,
		grid: strided(product(0, 1)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.IrfftPre(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }})
	irfftPreOddOp = row(&kernelOp{name: "irfft_pre_odd", kernel: ptx.IrfftPreOdd, outs: 1, ins: 1,
		grid: strided(product(0, 1)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.IrfftPreOdd(h.b[0], h.b[1], h.s[1], lo, hi) }})
	irfftOutOp = row(&kernelOp{name: "irfft_out", kernel: ptx.IrfftOut, outs: 1, ins: 1,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.IrfftOut(h.b[0], h.b[1], h.f[0], lo, hi) }})
	irfftOutOddOp = row(&kernelOp{name: "irfft_out_odd", kernel: ptx.IrfftOutOdd, outs: 1, ins: 1,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.IrfftOutOdd(h.b[0], h.b[1], h.f[0], lo, hi) }})
	bluesteinPreOp = row(&kernelOp{name: "bluestein_pre", kernel: ptx.BluesteinPre, outs: 1, ins: 2,
		grid: strided(product(0, 2)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.BluesteinPre(h.b[0], h.b[1], h.b[2], h.s[1], h.s[2], lo, hi)
		}})
	bluesteinMulOp = row(&kernelOp{name: "bluestein_mul", kernel: ptx.BluesteinMul, outs: 1, ins: 2,
		grid: strided(product(0, 1)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.BluesteinMul(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }})
	bluesteinPostOp = row(&kernelOp{name: "bluestein_post", kernel: ptx.BluesteinPost, outs: 1, ins: 2,
		grid: strided(product(0, 1)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.BluesteinPost(h.b[0], h.b[1], h.b[2], h.s[1], h.s[2], lo, hi)
		}})
	// The row kernels: operands (dst, src, tw, rc[, w]), sizes (batch, n, radices, rcs)[, scale];
	// rows of the batch are the CPU's units, and each twin composes cpu's twins on its rows in the
	// order the kernel computes (fftRowTwin).
	fftRowOp = row(&kernelOp{name: "fft_row", kernel: ptx.FftRow, outs: 1, ins: 3,
		grid: fftRowGrid{size(1)}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			n := h.s[1]
			z := fftRowTwin(h.b[1][2*lo*n:2*hi*n], h.b[2], h.b[3], n, h.s[2], h.s[3], hi-lo)
			copy(h.b[0][2*lo*n:2*hi*n], z)
		}})
	rfftRowOp = row(&kernelOp{name: "rfft_row", kernel: ptx.RfftRow, outs: 1, ins: 4,
		grid: fftRowGrid{fftRowLen}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			n, rows := h.s[1], hi-lo
			bins := n/2 + 1
			x, out := h.b[1][lo*n:hi*n], h.b[0][2*lo*bins:2*hi*bins]
			if n%2 == 0 {
				z := fftRowTwin(x, h.b[2], h.b[3], n/2, h.s[2], h.s[3], rows)
				cpu.RfftPost(out, z, h.b[4], n/2, 0, rows)
				return
			}
			c := make([]float32, 2*rows*n)
			cpu.FFTWiden(c, x, 0, rows*n)
			cpu.RfftPostOdd(out, fftRowTwin(c, h.b[2], h.b[3], n, h.s[2], h.s[3], rows), n, 0, rows)
		}})
	irfftRowOp = row(&kernelOp{name: "irfft_row", kernel: ptx.IrfftRow, outs: 1, ins: 4,
		grid: fftRowGrid{fftRowLen}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			n, rows := h.s[1], hi-lo
			bins := n/2 + 1
			spec, out := h.b[1][2*lo*bins:2*hi*bins], h.b[0][lo*n:hi*n]
			if n%2 == 0 {
				pre := make([]float32, rows*n)
				cpu.IrfftPre(pre, spec, h.b[4], n/2, 0, rows)
				// out starts at an even index of the whole output (n is even): the signs are the same.
				cpu.IrfftOut(out, fftRowTwin(pre, h.b[2], h.b[3], n/2, h.s[2], h.s[3], rows), h.f[0], 0, rows*n)
				return
			}
			pre := make([]float32, 2*rows*n)
			cpu.IrfftPreOdd(pre, spec, n, 0, rows)
			cpu.IrfftOutOdd(out, fftRowTwin(pre, h.b[2], h.b[3], n, h.s[2], h.s[3], rows), h.f[0], 0, rows*n)
		}})
)

// The row kernels' bounds and packing (FFT_ROW_MAX, FFT_ROW_VALUES, FFT_ROW_THREADS,
// FFT_ROW_STAGES, FFT_ROW_RADIX_BITS and FFT_ROW_RC_BITS in ptx/fft.cu, checked by
// TestSharedConstants): the longest complex FFT they run (its row of float2 is 64 KiB of shared
// memory), the complex values per thread of a block (the kernels hold ceil(fftRowValues/R)
// butterflies of radix R per thread: fftRowThreads must give at least c/fftRowValues threads,
// and at most the kernels' launch bound fftRowMaxThreads), and the plan words of fftRowPlan.
// Which path runs never changes a bit: both run the plan's stages in order with the same
// butterflies.
const (
	fftRowMax        = 8192
	fftRowValues     = 8
	fftRowMaxThreads = fftRowMax / fftRowValues // the kernels' launch bound (FFT_ROW_THREADS)
	fftRowStages     = 8
	fftRowRadixBits  = 4
	fftRowRcBits     = 8
)

// fftRowKernels lets the transforms take the row kernels (tests turn it off to run the
// per-stage kernels on every length).
var fftRowKernels = true

// fftRowPlan returns the plan words of the row kernels for the complex FFT cp: radices holds the
// radix of stage s in bits [fftRowRadixBits*s, fftRowRadixBits*(s+1)) (no stage left: 0), rcs
// the offset of its odd radix's constants in the plan's table in bits [fftRowRcBits*s,
// fftRowRcBits*(s+1)); the kernels compute the spans as the products of the radices before
// each stage, as the plan does. ok is false where the row kernels do not take cp: Bluestein
// plans (at their level; their inner FFTs may), lengths above fftRowMax, plans without a stage,
// and (never for a plan of cpu.NewRfftPlan up to fftRowMax, checked by a test) more than
// fftRowStages stages or constants beyond the offsets the words hold.
func fftRowPlan(cp *cpu.FFTPlan) (radices, rcs int, ok bool) {
	if !fftRowKernels || cp.Blue != nil || cp.N > fftRowMax || len(cp.Stages) == 0 || len(cp.Stages) > fftRowStages {
		return 0, 0, false
	}
	var rw, cw uint64
	for s, st := range cp.Stages {
		if st.Radix >= 1<<fftRowRadixBits || st.Rc >= 1<<fftRowRcBits {
			return 0, 0, false
		}
		rw |= uint64(st.Radix) << (fftRowRadixBits * s)
		cw |= uint64(st.Rc) << (fftRowRcBits * s)
	}
	// The words travel as ints (the launch sizes): where int has 32 bits (GOARCH=386, arm) a plan
	// whose words need more takes the per-stage path, which gives the same bits.
	if rw > math.MaxInt || cw > math.MaxInt {
		return 0, 0, false
	}
	return int(rw), int(cw), true
}

// fftRowSteps decodes the plan words of fftRowPlan into the stages they describe, as the row
// kernels read them (fft_row_run).
func fftRowSteps(radices, rcs int) []cpu.FFTStep {
	var steps []cpu.FFTStep
	span := 1
	for s := range fftRowStages {
		r := radices >> (fftRowRadixBits * s) & (1<<fftRowRadixBits - 1)
		if r == 0 {
			break
		}
		steps = append(steps, cpu.FFTStep{Radix: r, Span: span, Rc: rcs >> (fftRowRcBits * s) & (1<<fftRowRcBits - 1)})
		span *= r
	}
	return steps
}

// fftRowTwin is the stages of a row kernel on the CPU: the stages of the plan words (radices,
// rcs) run one after another with cpu.FFTStage (tw: the twiddles, rc: the plan's table) on the
// (rows, n) complex src, which is not written. It returns the result (src itself without a
// stage).
func fftRowTwin(src, tw, rc []float32, n, radices, rcs, rows int) []float32 {
	cur := src
	var bufs [2][]float32
	for i, st := range fftRowSteps(radices, rcs) {
		if bufs[i%2] == nil {
			bufs[i%2] = make([]float32, 2*rows*n)
		}
		cpu.FFTStage(bufs[i%2], cur, tw, rc[st.Rc:], n, st.Span, st.Radix, 0, rows)
		cur = bufs[i%2]
	}
	return cur
}

// fftRowLen is the complex length of rfft_row's and irfft_row's rows of real length s[1].
func fftRowLen(s []int) int {
	if s[1]%2 == 0 {
		return s[1] / 2
	}
	return s[1]
}

// fftRowGrid: one block per row (s[0] rows, grid-stride beyond 2^31-1) of fftRowThreads(c)
// threads with 8*c bytes of dynamic shared memory, c = n(s) the complex length of a row.
type fftRowGrid struct{ n func(s []int) int }

func (g fftRowGrid) shape(k *ptx.Kernel, s []int, _ gpuFacts) launchShape {
	c := g.n(s)
	return launchShape{kernel: k, grid: [3]uint32{uint32(max(1, min(s[0], 1<<31-1))), 1, 1},
		block: [3]uint32{uint32(fftRowThreads(c)), 1, 1}, shared: uint32(8 * c)}
}

// fftRowThreads is the block of the row kernels for a complex length c <= fftRowMax: at least
// ceil(c/fftRowValues) threads (the kernels' contract), in whole warps, at least one warp.
func fftRowThreads(c int) int {
	t := (c + fftRowValues - 1) / fftRowValues
	return max(32, (t+31)/32*32)
}

// Bounds of a device's FFT plan cache: at most fftPlanLimit plans and, beyond the plan just
// made, fftPlanByteLimit bytes of tables; the least recently used plans go first.
const (
	fftPlanLimit     = 64
	fftPlanByteLimit = 256 << 20
)

// fftPlanCache holds a device's FFT plans by length. A plan's table lives in device memory
// allocated from the backend directly: it is not a Buffer of the caller's and does not count in
// Stats.LiveBytes, but in Stats.FFTPlans and Stats.FFTPlanBytes. Collect(true) drops every plan.
// A plan evicted (or collected) while an op runs with it keeps its memory until that op is done.
type fftPlanCache struct {
	mu    sync.Mutex
	plans map[int]*fftPlan
	tick  uint64
	bytes int64
}

// fftPlan is a cached plan: its description and its table on the device.
type fftPlan struct {
	*cpu.RfftPlan
	table   *Buffer // the table's memory; never released as a Buffer (free returns it)
	last    uint64  // the cache's tick at its last use
	refs    int     // ops running with it
	evicted bool
}

// tab returns the table from float offset off on, as an operand of one launch.
func (p *fftPlan) tab(off int) *Buffer { return p.table.view(off, p.table.n-off) }

// free returns the table's memory to the backend. The caller holds the cache's lock and no op
// uses the plan.
func (p *fftPlan) free() {
	if p.table.n > 0 {
		p.table.dev.be.free(p.table.mem, p.table.n)
	}
	p.table.mem = storage{}
}

// fftPlanFor returns the plan of length n on d, made and uploaded on first use, for one op: the
// caller calls done when it no longer launches with it.
func fftPlanFor(d *Device, n int) (*fftPlan, error) {
	c := &d.fft
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	if p, ok := c.plans[n]; ok {
		p.last, p.refs = c.tick, p.refs+1
		return p, nil
	}
	desc, err := cpu.NewRfftPlan(n)
	if err != nil {
		return nil, err
	}
	t := desc.Table
	if len(t) == 0 {
		t = []float32{0, 0} // a table to point at, never read
	}
	mem, err := d.be.alloc(len(t))
	if err != nil {
		return nil, fmt.Errorf("ops: FFT plan of length %d: %w", n, err)
	}
	if err := d.be.upload(mem, t); err != nil {
		d.be.free(mem, len(t))
		return nil, fmt.Errorf("ops: FFT plan of length %d: %w", n, err)
	}
	p := &fftPlan{RfftPlan: desc, table: &Buffer{dev: d, n: len(t), mem: mem}, last: c.tick, refs: 1}
	if c.plans == nil {
		c.plans = map[int]*fftPlan{}
	}
	c.plans[n] = p
	c.bytes += 4 * int64(len(t))
	for len(c.plans) > fftPlanLimit || c.bytes-4*int64(len(t)) > fftPlanByteLimit {
		var lru *fftPlan
		for _, q := range c.plans {
			if q != p && (lru == nil || q.last < lru.last) {
				lru = q
			}
		}
		if lru == nil {
			break
		}
		c.evict(lru)
	}
	return p, nil
}

// evict takes p out of the cache; its memory goes back now or when its last op is done. The
// caller holds c.mu.
func (c *fftPlanCache) evict(p *fftPlan) {
	delete(c.plans, p.N)
	c.bytes -= 4 * int64(p.table.n)
	p.evicted = true
	if p.refs == 0 {
		p.free()
	}
}

// done ends one op's use of p (from fftPlanFor).
func (c *fftPlanCache) done(p *fftPlan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.refs--
	if p.evicted && p.refs == 0 {
		p.free()
	}
}

// stats returns the number of cached plans and the bytes of their tables.
func (c *fftPlanCache) stats() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.plans), c.bytes
}

// drop evicts every plan (Collect).
func (c *fftPlanCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.plans {
		c.evict(p)
	}
}

// fft runs the complex FFT cp (of the plan p) on the (batch, cp.N) complex in and returns the
// result, owned (a new buffer the caller releases) or in itself when cp has no stage.
func (p *fftPlan) fft(cp *cpu.FFTPlan, in *Buffer, batch int) (out *Buffer, owned bool, err error) {
	if bl := cp.Blue; bl != nil {
		a, err := bluesteinPreOp.call1(2*batch*bl.M, []*Buffer{in, p.tab(bl.Chirp)}, nil, []int{batch, cp.N, bl.M})
		if err != nil {
			return nil, false, err
		}
		for pass := range 2 {
			e, eOwned, err := p.fft(bl.Inner, a, batch)
			if err != nil || !eOwned {
				a.Release()
				if err == nil {
					err = fmt.Errorf("ops: Bluestein's inner FFT of length %d has no stage", bl.M)
				}
				return nil, false, err
			}
			a.Release()
			if pass == 0 {
				a, err = bluesteinMulOp.call1(2*batch*bl.M, []*Buffer{e, p.tab(bl.B)}, nil, []int{batch, bl.M})
			} else {
				a, err = bluesteinPostOp.call1(2*batch*cp.N, []*Buffer{e, p.tab(bl.Chirp)}, nil, []int{batch, cp.N, bl.M})
			}
			e.Release()
			if err != nil {
				return nil, false, err
			}
		}
		return a, true, nil
	}
	if radices, rcs, ok := fftRowPlan(cp); ok {
		out, err := fftRowOp.call1(2*batch*cp.N, []*Buffer{in, p.tab(cp.Tw), p.tab(0)}, nil,
			[]int{batch, cp.N, radices, rcs})
		if err != nil {
			return nil, false, err
		}
		return out, true, nil
	}
	cur := in
	for _, st := range cp.Stages {
		next, err := fftStageOp.call1(2*batch*cp.N, []*Buffer{cur, p.tab(cp.Tw), p.tab(st.Rc)}, nil,
			[]int{batch, cp.N, st.Span, st.Radix})
		if cur != in {
			cur.Release()
		}
		if err != nil {
			return nil, false, err
		}
		cur = next
	}
	return cur, cur != in, nil
}

// fftArgs checks the operand of a real transform of batch rows of length n, whose buffer must
// hold batch*per elements, and returns the output's length, batch*out.
func fftArgs(op, name string, x *Buffer, batch, n, per, out int) (int, error) {
	if n < 1 || n > cpu.FFTMaxLen {
		return 0, fmt.Errorf("ops: %s: length n = %d outside [1, %d]", op, n, cpu.FFTMaxLen)
	}
	if err := matrix(op, name, x, batch, per); err != nil {
		return 0, err
	}
	total, ok := mulFits(batch, out)
	if !ok {
		return 0, fmt.Errorf("ops: %s: a batch of %d rows of %d overflows", op, batch, out)
	}
	return total, nil
}

// Rfft1dPacked is TorchLean's rfft1dPacked: the unnormalized forward real DFT of each row of the
// (batch, n) matrix x, X[k] = sum_t x[t] exp(-2*pi*i*k*t/n) for k = 0 .. n/2, packed as a
// (batch, n/2+1, 2) buffer of [re, im] pairs. n may be any length from 1 to 2^28 (mixed radix
// 2, 3, 4, 5, 7, 11, 13, Bluestein beyond); batch 0 gives an empty buffer. On the CPU, and on a
// GPU in deterministic mode, this is our exact FFT: the same bits on every device
// (cpu.RfftPlan.Rfft states the arithmetic), the imaginary parts of bin 0 and, for an even n, of
// bin n/2 exact zeros. On a GPU in fast mode (the default) it may run through cuFFT instead
// (Device.FFTBackend says which and why), accurate to a few units of rounding but with other
// bits. n = 0 or x of a length other than batch*n is an error.
func Rfft1dPacked(x *Buffer, batch, n int) (*Buffer, error) {
	const op = "rfft1d_packed"
	total, err := fftArgs(op, "x", x, batch, n, n, 2*(n/2+1))
	if err != nil {
		return nil, err
	}
	if batch == 0 {
		return newBuffer(x.dev, 0)
	}
	if out, ok, err := cufftRfft(op, x, batch, n, total); ok { // fast mode on CUDA (cufft.go)
		return out, err
	}
	p, err := fftPlanFor(x.dev, n)
	if err != nil {
		return nil, opErr(op, err)
	}
	defer x.dev.fft.done(p)
	if radices, rcs, ok := fftRowPlan(p.C); ok {
		out, err := rfftRowOp.call1(total, []*Buffer{x, p.tab(p.C.Tw), p.tab(0), p.tab(p.Post)}, nil,
			[]int{batch, n, radices, rcs})
		return out, asOp(op, err)
	}
	var out *Buffer
	if n%2 == 0 {
		z, owned, err := p.fft(p.C, x, batch)
		if err != nil {
			return nil, asOp(op, err)
		}
		out, err = rfftPostOp.call1(total, []*Buffer{z, p.tab(p.Post)}, nil, []int{batch, n / 2})
		if owned {
			z.Release()
		}
		return out, asOp(op, err)
	}
	c, err := fftWidenOp.call1(2*batch*n, []*Buffer{x}, nil, []int{batch * n})
	if err != nil {
		return nil, asOp(op, err)
	}
	z, owned, err := p.fft(p.C, c, batch)
	if err != nil {
		c.Release()
		return nil, asOp(op, err)
	}
	out, err = rfftPostOddOp.call1(total, []*Buffer{z}, nil, []int{batch, n})
	if owned {
		z.Release()
	}
	c.Release()
	return out, asOp(op, err)
}

// Irfft1dPacked is TorchLean's irfft1dPacked, the inverse of Rfft1dPacked: spec holds batch
// half spectra of length-n rows, (batch, n/2+1, 2) [re, im] pairs, and the result is the
// (batch, n) real rows y[t] = (1/n) * (Re X[0] + sum_{0<k<n/2} 2*Re(X[k] exp(2*pi*i*k*t/n)) +
// [n even] Re X[n/2] (-1)^t): the Hermitian spectrum's inverse, the interior bins counted twice
// and the imaginary parts of bin 0 and of the Nyquist bin n/2 (n even) ignored. The scaling is
// a float32 multiply by the float32 nearest to 1/n (TorchLean's 1.0f/n), after the unnormalized
// inverse. On the CPU, and on a GPU in deterministic mode, the same bits on every device
// (cpu.RfftPlan.Irfft); on a GPU in fast mode, possibly cuFFT's (see Rfft1dPacked). n = 0 or a
// spec of a length other than batch*(n/2+1)*2 is an error.
func Irfft1dPacked(spec *Buffer, batch, n int) (*Buffer, error) {
	const op = "irfft1d_packed"
	if n < 1 {
		return nil, fmt.Errorf("ops: %s: length n = %d outside [1, %d]", op, n, cpu.FFTMaxLen)
	}
	total, err := fftArgs(op, "spec", spec, batch, n, 2*(n/2+1), n)
	if err != nil {
		return nil, err
	}
	if batch == 0 {
		return newBuffer(spec.dev, 0)
	}
	if out, ok, err := cufftIrfft(op, spec, batch, n, total); ok { // fast mode on CUDA (cufft.go)
		return out, err
	}
	p, err := fftPlanFor(spec.dev, n)
	if err != nil {
		return nil, opErr(op, err)
	}
	defer spec.dev.fft.done(p)
	if radices, rcs, ok := fftRowPlan(p.C); ok {
		out, err := irfftRowOp.call1(total, []*Buffer{spec, p.tab(p.C.Tw), p.tab(0), p.tab(p.Post)}, nil,
			[]int{batch, n, radices, rcs}, p.Scale)
		return out, asOp(op, err)
	}
	var pre *Buffer
	if n%2 == 0 {
		pre, err = irfftPreOp.call1(batch*n, []*Buffer{spec, p.tab(p.Post)}, nil, []int{batch, n / 2})
	} else {
		pre, err = irfftPreOddOp.call1(2*batch*n, []*Buffer{spec}, nil, []int{batch, n})
	}
	if err != nil {
		return nil, asOp(op, err)
	}
	e, owned, err := p.fft(p.C, pre, batch)
	if err != nil {
		pre.Release()
		return nil, asOp(op, err)
	}
	outOp := irfftOutOp
	if n%2 == 1 {
		outOp = irfftOutOddOp
	}
	out, err := outOp.call1(total, []*Buffer{e}, nil, []int{total}, p.Scale)
	if owned {
		e.Release()
	}
	pre.Release()
	return out, asOp(op, err)
}
