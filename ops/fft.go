package ops

import (
	"fmt"
	"sync"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The FFT family (ptx/fft.cu; cpu/fft.go): our own exact FFT, the same bits on every device.
// A transform of length n runs the plan cpu.NewRfftPlan(n), a function of n alone: Stockham
// stages of radices 4, 2, 3, 5, 7, 11 and 13 (one launch per stage over the whole batch), or
// Bluestein's chirp-z algorithm around a power-of-two FFT for lengths with a larger prime
// factor; the real transforms of an even length run the complex FFT of half the length on the
// row read as complex values, odd lengths the complex FFT of the row widened to complex. Every
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
)

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
// 2, 3, 4, 5, 7, 11, 13, Bluestein beyond); batch 0 gives an empty buffer. The bits are the same
// on every device (cpu.RfftPlan.Rfft states the arithmetic); the imaginary parts of bin 0 and,
// for an even n, of bin n/2 are exact zeros. n = 0 or x of a length other than batch*n is an
// error.
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
// inverse. Same bits on every device (cpu.RfftPlan.Irfft). n = 0 or a spec of a length other
// than batch*(n/2+1)*2 is an error.
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
