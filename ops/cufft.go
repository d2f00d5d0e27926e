package ops

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/torchlean-go/torchlean/driver"
)

// cuFFT, the fast tier of the real FFT (Rfft1dPacked, Irfft1dPacked).
//
// With deterministic mode off (SetDeterministic), a CUDA device runs the real transforms through
// libcufft wherever cufftPreferred says so, and our own exact FFT (fft.go) everywhere else: in
// deterministic mode, on the CPU, for sizes the policy leaves to ours, and whenever libcufft is
// missing, fails to load or fails to make a plan. The fallback is silent; Device.FFTBackend tells
// which tier a size gets and why. cuFFT's arithmetic is not ours and differs between its versions
// and GPUs: its results are within a relative tolerance of ours (the Rel tier of the mirror
// table: TestCUFFT checks relative L2 <= cufftRelL2(n) = 8 * log2(n) * 2^-24 per row), never
// bit-identical, so a program that needs the same bits everywhere turns deterministic mode on.
//
// Layout. cuFFT's R2C output, batch rows of n/2+1 interleaved complex values (cufftComplex:
// float re, then float im) with a row distance of n/2+1, is the seeds' (batch, n/2+1, 2) packing
// as it stands, so the forward transform writes its result buffer directly; it reads the caller's
// x without writing it (an out-of-place 1-D R2C; TestCUFFT checks the input unchanged). The
// inverse takes three commands:
//  1. a copy of spec with the imaginary parts of bin 0 and, for an even n, of bin n/2 set to
//     zero (masked_fill with a cached mask): cuFFT's C2R does not ignore them (its result for a
//     non-Hermitian input is unspecified), while the seeds' inverse does; and C2R overwrites its
//     input, which must never be the caller's buffer;
//  2. cufftExecC2R of that copy (unnormalized);
//  3. the scale: y = float32(raw * s), s the float32 nearest to 1/n, one correctly rounded float32
//     multiply per element: the rounding rule of our irfft's last step (cpu.IrfftOut) applied to
//     cuFFT's unnormalized result.
//
// Plans: cached per device in cufftCache, keyed by (n, batch, direction), at most cufftPlanLimit
// plans and, beyond the newest, cufftByteLimit bytes of cuFFT work areas (cufftGetSize) and
// inverse masks; the least recently used go first. Each plan is bound to the device's own stream
// (cufftSetStream) when it is made. Stats shows them as CUFFTPlans and CUFFTWorkBytes (outside
// LiveBytes); Collect(true) destroys them. Devices are never closed (they live for the process),
// so Collect is where plans end.
//
// Ordering: an execution is a library command on the device's launch queue
// (cudaBackend.libraryCall), issued in order with the kernels around it. cuFFT's exec is not known
// to be capturable into a CUDA graph: inside Device.Capture the cuFFT tier returns an error wrapping
// ErrCapturing (the exact tier, used in deterministic mode, is made of kernels and can be
// captured). Making and destroying a plan are driver calls outside the queue: they wait for the
// queue to be issued first (cudaBackend.enter), so a plan is destroyed only after every execution
// queued with it has reached the stream (and cufftDestroy's free waits for the device).

// Bounds of a device's cuFFT plan cache.
const (
	cufftPlanLimit = 32
	cufftByteLimit = 1 << 30
)

// cufftSlower lists the sizes where our FFT measured faster than cuFFT on the GPU: n in
// [nMin, nMax] with at most batchMax rows (0: any batch). The table is to be filled from the GPU
// check's BenchmarkFFTTier (rfft and irfft, tiers cufft and exact, paired in the bench table);
// until a measurement says otherwise cuFFT takes every size. A function of the sizes alone.
var cufftSlower = []struct{ nMin, nMax, batchMax int }{}

// cufftPreferred reports whether the cuFFT tier should run batch rows of length n (fast mode, a
// CUDA device with cuFFT): every size that fits cuFFT's 32-bit plans (batch * (n/2+1) * 2 floats
// below 2^31) and that cufftSlower does not leave to our FFT.
func cufftPreferred(n, batch int) bool {
	if n < 1 || batch < 1 {
		return false
	}
	if total, ok := mulFits(batch, 2*(n/2+1)); !ok || total > math.MaxInt32 {
		return false
	}
	for _, s := range cufftSlower {
		if n >= s.nMin && n <= s.nMax && (s.batchMax == 0 || batch <= s.batchMax) {
			return false
		}
	}
	return true
}

// FFTTier names an implementation of the real FFT.
type FFTTier string

const (
	FFTExact FFTTier = "exact" // our FFT (fft.go): the same bits on every device
	FFTCUFFT FFTTier = "cufft" // NVIDIA's cuFFT: fast mode on a CUDA device, within Rel tolerance of ours
)

// FFTBackend reports which tier Rfft1dPacked and Irfft1dPacked use on d for batch rows of length
// n in the current mode, and, for FFTExact, why not cuFFT: "CPU device", "deterministic mode",
// "size policy" (cufftPreferred), "no cuFFT: <the loader's error>", "cuFFT plan failed: <error>"
// (this size falls back from then on), or "cuFFT disabled: <error>" (a failure that ends the tier
// on the device). It loads libcufft if no op did yet, but makes no plan: a size whose first plan
// fails reports FFTCUFFT until that op ran.
func (d *Device) FFTBackend(n, batch int) (FFTTier, string) {
	if err := d.check(); err != nil {
		return FFTExact, err.Error()
	}
	_, reason := cufftFor(d, n, batch)
	if reason != "" {
		return FFTExact, reason
	}
	return FFTCUFFT, ""
}

// cufftLib is what the tier needs from libcufft: *driver.CUFFT, or a stand-in in tests. Every
// method but the Exec ones runs with the context locked (enter); the Exec ones on the issuing
// thread of the launch queue.
type cufftLib interface {
	PlanMany1D(n, batch int, kind driver.FFTKind, istride, idist, ostride, odist int) (driver.FFTPlan, error)
	SetStream(p driver.FFTPlan, s driver.Stream) error
	WorkSize(p driver.FFTPlan) (int64, error)
	ExecR2C(p driver.FFTPlan, in, out driver.DevicePtr) error
	ExecC2R(p driver.FFTPlan, in, out driver.DevicePtr) error
	Destroy(p driver.FFTPlan) error
}

var cufftProcess struct {
	once sync.Once
	lib  *driver.CUFFT
	err  error
}

// cufftOpen returns the process's libcufft (driver.LoadCUFFT, once: TORCHLEAN_CUFFT or the usual
// names) for the device g; none for a device on the fake driver, whose addresses the real library
// cannot use. Tests replace it.
var cufftOpen = func(g *cudaBackend) (cufftLib, error) {
	if g.ctx.CUDA().Fake() {
		return nil, errors.New("the device runs on the fake driver, whose addresses the real libcufft cannot use")
	}
	cufftProcess.once.Do(func() { cufftProcess.lib, cufftProcess.err = driver.LoadCUFFT() })
	if cufftProcess.err != nil {
		return nil, cufftProcess.err
	}
	return cufftProcess.lib, nil
}

// cufftKey is a plan's sizes and direction.
type cufftKey struct {
	n, batch int
	inverse  bool
}

func (k cufftKey) String() string {
	dir := "R2C"
	if k.inverse {
		dir = "C2R"
	}
	return fmt.Sprintf("n = %d, batch %d, %s", k.n, k.batch, dir)
}

// cufftPlan is a cached plan: its cuFFT handle, the bytes of its work area and, for the
// inverse, the mask of the spectrum's edge imaginary parts (1 at the imaginary parts of bin 0 and,
// n even, of bin n/2 of every row, 0 elsewhere; memory from the backend, outside LiveBytes).
type cufftPlan struct {
	key     cufftKey
	lib     cufftLib // the library that made it
	h       driver.FFTPlan
	work    int64
	mask    *Buffer // inverse only; never released as a Buffer (destroy frees it)
	last    uint64
	refs    int
	evicted bool
}

// bytes is what the plan counts in CUFFTWorkBytes.
func (p *cufftPlan) bytes() int64 {
	b := p.work
	if p.mask != nil {
		b += 4 * int64(p.mask.n)
	}
	return b
}

// cufftCache is a device's cuFFT state: the library (once per device, from cufftOpen), the
// reason when there is none, the plans, the sizes whose plans failed, and the number of
// executions queued (tests read it: deterministic mode never adds to it).
type cufftCache struct {
	mu       sync.Mutex
	ready    bool
	lib      cufftLib // nil: no cuFFT on the device (reason says why)
	reason   string
	plans    map[cufftKey]*cufftPlan
	failed   map[[2]int]string // (n, batch) -> why its plan failed
	dead     []*cufftPlan      // evicted while the device captured: destroyed at the next chance
	tick     uint64
	bytes    int64
	execs    atomic.Int64
	makePlan func(c *cufftCache, g *cudaBackend, k cufftKey) (*cufftPlan, error) // tests replace it; nil: makeCUFFTPlan
}

// cufftFailedLimit bounds the remembered failed sizes (the map is cleared when it is full).
const cufftFailedLimit = 256

// cufftFor returns the CUDA backend of d when the cuFFT tier runs batch rows of length n, else
// the reason it does not (the one place the tier needs to know the backend, like NCCL's).
func cufftFor(d *Device, n, batch int) (*cudaBackend, string) {
	g, ok := d.be.(*cudaBackend)
	switch {
	case !ok:
		return nil, "CPU device"
	case Deterministic():
		return nil, "deterministic mode"
	case !cufftPreferred(n, batch):
		return nil, "size policy"
	}
	c := &d.cufft
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		c.ready = true
		lib, err := cufftOpen(g)
		if err != nil || lib == nil {
			c.reason = fmt.Sprintf("no cuFFT: %v", err)
		} else {
			c.lib = lib
		}
	}
	if c.lib == nil {
		return nil, c.reason
	}
	if why, ok := c.failed[[2]int{n, batch}]; ok {
		return nil, why
	}
	return g, ""
}

// acquire returns the plan k of d, made on first use, for one op (release ends the use). On a
// failure to make it, it reports ok false: the caller falls back to our FFT, the reason kept.
// A queue failure (device error) is an error.
func (c *cufftCache) acquire(g *cudaBackend, k cufftKey) (p *cufftPlan, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	if p := c.plans[k]; p != nil {
		p.last, p.refs = c.tick, p.refs+1
		return p, true, nil
	}
	if c.lib == nil { // disabled meanwhile
		return nil, false, nil
	}
	c.bury(g)
	mk := c.makePlan
	if mk == nil {
		mk = makeCUFFTPlan
	}
	p, err = mk(c, g, k)
	if err != nil {
		if g.queue != nil {
			if qerr := g.queue.error(); qerr != nil {
				return nil, false, qerr
			}
		}
		c.fail(k, err)
		return nil, false, nil
	}
	p.key, p.last, p.refs = k, c.tick, 1
	if c.plans == nil {
		c.plans = map[cufftKey]*cufftPlan{}
	}
	c.plans[k] = p
	c.bytes += p.bytes()
	for len(c.plans) > cufftPlanLimit || c.bytes-p.bytes() > cufftByteLimit {
		var lru *cufftPlan
		for _, q := range c.plans {
			if q != p && (lru == nil || q.last < lru.last) {
				lru = q
			}
		}
		if lru == nil {
			break
		}
		c.evict(g, lru)
	}
	return p, true, nil
}

// fail records the failure of plan k: this size falls back from now on, or, for a failure of the
// library itself (setup, device, missing dependency, not supported), every size on the device.
// The caller holds c.mu.
func (c *cufftCache) fail(k cufftKey, err error) {
	for _, r := range []driver.FFTResult{driver.FFTSetupFailed, driver.FFTInvalidDevice,
		driver.FFTMissingDependency, driver.FFTNotSupported, driver.FFTInternalError} {
		if errors.Is(err, r) {
			c.lib, c.reason = nil, fmt.Sprintf("cuFFT disabled: plan for %v: %v", k, err)
			return
		}
	}
	if len(c.failed) >= cufftFailedLimit || c.failed == nil {
		c.failed = map[[2]int]string{}
	}
	c.failed[[2]int{k.n, k.batch}] = fmt.Sprintf("cuFFT plan failed: %v: %v", k, err)
}

// makeCUFFTPlan makes plan k on g: the inverse's mask first (allocated and uploaded like an FFT
// table), then, with the queue issued and the context locked, cufftPlanMany, cufftSetStream to
// the device's stream and cufftGetSize. cuFFT allocates its work area itself (cudaMalloc): when
// that fails, the allocator's cached blocks go back to the driver and the plan is tried once more.
func makeCUFFTPlan(c *cufftCache, g *cudaBackend, k cufftKey) (*cufftPlan, error) {
	p := &cufftPlan{}
	bins := k.n/2 + 1
	if k.inverse {
		m, err := cufftMask(g, k.n, k.batch)
		if err != nil {
			return nil, err
		}
		p.mask = m
	}
	kind, idist, odist := driver.FFTR2C, k.n, bins
	if k.inverse {
		kind, idist, odist = driver.FFTC2R, bins, k.n
	}
	if err := g.enter(); err != nil {
		p.freeMask(g)
		return nil, err
	}
	defer g.ctx.Unlock()
	h, err := c.lib.PlanMany1D(k.n, k.batch, kind, 1, idist, 1, odist)
	if errors.Is(err, driver.FFTAllocFailed) {
		if ferr := g.flush(); ferr == nil {
			h, err = c.lib.PlanMany1D(k.n, k.batch, kind, 1, idist, 1, odist)
		}
	}
	if err == nil {
		p.h = h
		if err = c.lib.SetStream(h, g.stream); err == nil {
			p.work, err = c.lib.WorkSize(h)
		}
		if err != nil {
			c.lib.Destroy(h)
		}
	}
	if err != nil {
		p.freeMask(g) // the allocator's cache: no driver call
		return nil, err
	}
	p.lib = c.lib
	return p, nil
}

// cufftMask returns the inverse's mask of batch rows of length n (see cufftPlan), in memory from
// the backend.
func cufftMask(g *cudaBackend, n, batch int) (*Buffer, error) {
	row := 2 * (n/2 + 1)
	host := make([]float32, batch*row)
	for b := range batch {
		host[b*row+1] = 1
		if n%2 == 0 {
			host[b*row+row-1] = 1
		}
	}
	mem, err := g.alloc(len(host))
	if err != nil {
		return nil, err
	}
	if err := g.upload(mem, host); err != nil {
		g.free(mem, len(host))
		return nil, err
	}
	return &Buffer{n: len(host), mem: mem}, nil
}

// freeMask returns the mask's memory to the backend.
func (p *cufftPlan) freeMask(g *cudaBackend) {
	if p.mask != nil && !p.mask.mem.isZero() {
		g.free(p.mask.mem, p.mask.n)
		p.mask.mem = storage{}
	}
}

// destroy frees p: cufftDestroy after the queue is issued and the stream has run it, then the
// mask. While the device
// captures a graph (no free is allowed then) p waits in c.dead. The caller holds c.mu.
func (c *cufftCache) destroy(g *cudaBackend, p *cufftPlan) {
	if g.capturing() != nil {
		c.dead = append(c.dead, p)
		return
	}
	err := g.enter()
	if err != nil { // the queue failed (the device's error is sticky): the handle still goes
		err = g.ctx.Lock()
	}
	if err == nil {
		// The plan's last executions have run before its work area goes: cuFFT does not
		// document that cufftDestroy waits for them. (An eviction is rare; the wait is cheap.)
		_ = g.ctx.StreamSynchronize(g.stream)
		p.lib.Destroy(p.h) // an error leaves nothing to do: the handle is gone either way
		g.ctx.Unlock()
	}
	p.freeMask(g)
}

// bury destroys the plans evicted during a capture, once the device no longer captures. The
// caller holds c.mu.
func (c *cufftCache) bury(g *cudaBackend) {
	if len(c.dead) == 0 || g.capturing() != nil {
		return
	}
	dead := c.dead
	c.dead = nil
	for _, p := range dead {
		c.destroy(g, p)
	}
}

// evict takes p out of the cache; it is destroyed now or when its last op is done. The caller
// holds c.mu.
func (c *cufftCache) evict(g *cudaBackend, p *cufftPlan) {
	delete(c.plans, p.key)
	c.bytes -= p.bytes()
	p.evicted = true
	if p.refs == 0 {
		c.destroy(g, p)
	}
}

// release ends one op's use of p (from acquire).
func (c *cufftCache) release(g *cudaBackend, p *cufftPlan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.refs--
	if p.evicted && p.refs == 0 {
		c.destroy(g, p)
	}
}

// stats returns the number of cached plans and their bytes (work areas and masks).
func (c *cufftCache) stats() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.plans), c.bytes
}

// drop destroys every plan of d (Collect(true)); plans in use go when their ops are done.
func (c *cufftCache) drop(d *Device) {
	g, ok := d.be.(*cudaBackend)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.plans {
		c.evict(g, p)
	}
	c.bury(g)
}

// cufftRfft runs Rfft1dPacked on the cuFFT tier when it applies to x's device and sizes: ok
// false means the caller runs our FFT. total is the result's length, batch*(n/2+1)*2.
func cufftRfft(op string, x *Buffer, batch, n, total int) (out *Buffer, ok bool, err error) {
	g, _ := cufftFor(x.dev, n, batch)
	if g == nil {
		return nil, false, nil
	}
	if err := g.refuseCapturing(op+" (cufftExecR2C)", "cuFFT's execution is not known to be capturable (deterministic mode runs our FFT, which is)"); err != nil {
		return nil, true, err
	}
	c := &x.dev.cufft
	p, ok, err := c.acquire(g, cufftKey{n: n, batch: batch})
	if !ok || err != nil {
		return nil, err != nil, opErr(op, err)
	}
	defer c.release(g, p)
	if err := x.useIn(op); err != nil {
		return nil, true, err
	}
	defer x.done()
	out, err = newBuffer(x.dev, total)
	if err != nil {
		return nil, true, opErr(op, err)
	}
	lib, h, in, dst := p.lib, p.h, x.mem.ptr, out.mem.ptr
	if err := g.libraryCall("cufftExecR2C", func(*driver.Context, driver.Stream) error {
		return lib.ExecR2C(h, in, dst)
	}); err != nil {
		out.Release()
		return nil, true, opErr(op, err)
	}
	c.execs.Add(1)
	return out, true, nil
}

// cufftIrfft runs Irfft1dPacked on the cuFFT tier when it applies (see cufftRfft); total is the
// result's length, batch*n.
func cufftIrfft(op string, spec *Buffer, batch, n, total int) (out *Buffer, ok bool, err error) {
	g, _ := cufftFor(spec.dev, n, batch)
	if g == nil {
		return nil, false, nil
	}
	if err := g.refuseCapturing(op+" (cufftExecC2R)", "cuFFT's execution is not known to be capturable (deterministic mode runs our FFT, which is)"); err != nil {
		return nil, true, err
	}
	c := &spec.dev.cufft
	p, ok, err := c.acquire(g, cufftKey{n: n, batch: batch, inverse: true})
	if !ok || err != nil {
		return nil, err != nil, opErr(op, err)
	}
	defer c.release(g, p)
	mask := &Buffer{dev: spec.dev, n: p.mask.n, mem: p.mask.mem}
	in, err := maskFillOp.one([]*Buffer{spec, mask}, 0) // the copy C2R may destroy, edges zeroed
	if err != nil {
		return nil, true, asOp(op, err)
	}
	defer in.Release()
	raw, err := newBuffer(spec.dev, total)
	if err != nil {
		return nil, true, opErr(op, err)
	}
	defer raw.Release()
	lib, h, src, dst := p.lib, p.h, in.mem.ptr, raw.mem.ptr
	if err := g.libraryCall("cufftExecC2R", func(*driver.Context, driver.Stream) error {
		return lib.ExecC2R(h, src, dst)
	}); err != nil {
		return nil, true, opErr(op, err)
	}
	c.execs.Add(1)
	out, err = scaleOp.one([]*Buffer{raw}, float64(recipFloat32(n)))
	return out, true, asOp(op, err)
}

// recipFloat32 returns the float32 nearest to 1/n (TorchLean's 1.0f/n, our irfft's scale): 1/n
// rounded to float64 and then to float32 is the correctly rounded float32 quotient, since a
// quotient rounded first to 53 bits and then to 24 is correctly rounded (53 >= 2*24 + 2).
func recipFloat32(n int) float32 { return float32(1 / float64(n)) }
