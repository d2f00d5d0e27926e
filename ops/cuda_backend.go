package ops

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/driver"
	"github.com/torchlean-go/torchlean/ptx"
)

// The process's CUDA devices, opened once each.
var cudaDevices struct {
	sync.Mutex
	lib    *driver.CUDA
	libErr error
	loaded bool
	open   map[int]*Device
}

// openCUDA returns CUDA device ordinal, opening it on first use.
func openCUDA(ordinal int) (*Device, error) {
	c := &cudaDevices
	c.Lock()
	defer c.Unlock()
	if d, ok := c.open[ordinal]; ok {
		return d, nil
	}
	if !c.loaded {
		c.loaded = true
		c.lib, c.libErr = driver.Load() // checks the driver version too (driver.MinDriverVersion)
	}
	if c.libErr != nil {
		return nil, c.libErr
	}
	count, err := c.lib.DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= count {
		return nil, fmt.Errorf("ops: no CUDA device %d (%d present): %w", ordinal, count, driver.ErrNoDevice)
	}
	g, err := newCUDABackend(c.lib, ordinal)
	if err != nil {
		return nil, err
	}
	d := &Device{kind: KindCUDA, name: g.name, be: g}
	if c.open == nil {
		c.open = map[int]*Device{}
	}
	c.open[ordinal] = d
	return d, nil
}

// cudaReason turns a failure to open CUDA into the reason Default reports.
func cudaReason(err error) string {
	switch {
	case errors.Is(err, driver.ErrNoLibrary):
		return "no CUDA library"
	case errors.Is(err, driver.ErrNoDevice):
		return "no CUDA device"
	case errors.Is(err, driver.ErrDriverTooOld):
		return "CUDA driver too old"
	}
	return "CUDA unusable"
}

// cudaBackend runs kernels on one device. All work goes to the legacy default stream, so it
// runs in issue order: a block returned to the cache can be handed to the next allocation at
// once (any kernel still reading it was queued earlier), and synchronous copies see all earlier
// work. Kernel launches, fills and device copies go through the device's launch queue
// (launcher.go), issued in order by a goroutine of their own; every other entry into the driver
// first waits for the queue to be issued (enter), then locks the calling goroutine's OS thread
// and makes the device's primary context current (driver.Context.Lock).
type cudaBackend struct {
	ctx       *driver.Context
	name      string
	facts     gpuFacts
	maxBlocks uint32       // cap of grid-stride grids: 32 blocks per multiprocessor
	queue     *launchQueue // nil: commands are issued by the calling goroutine (TORCHLEAN_LAUNCH=sync)

	mu     sync.Mutex // guards cache, cached and raising kernelFn.shared
	cache  map[uint64][]driver.DevicePtr
	cached int64
	load   sync.Mutex                 // serializes the loading of kernels
	fns    []atomic.Pointer[kernelFn] // by ptx.Kernel.ID, filled on first use

	guard int // floats of NaN guard band on each side of every allocation (tests only)

	stagingOnce sync.Once
	staging     *driver.Staging // nil: uploads are synchronous copies
}

// Uploads of up to stagingSlots*stagingSlotBytes (8 MiB) go through a ring of stagingSlots pinned
// slots (driver.Staging), so that the host does not wait for the GPU to drain; TORCHLEAN_UPLOAD=sync
// turns that off (every upload a synchronous copy from pageable memory).
const (
	stagingSlots     = 8
	stagingSlotBytes = 1 << 20
)

var stagedUploads = os.Getenv("TORCHLEAN_UPLOAD") != "sync"

// stager returns the backend's staging ring, created on first use; nil when uploads are
// synchronous or the pinned memory could not be had. The caller holds the context.
func (g *cudaBackend) stager() *driver.Staging {
	if !stagedUploads {
		return nil
	}
	g.stagingOnce.Do(func() {
		if st, err := g.ctx.NewStaging(stagingSlots, stagingSlotBytes); err == nil {
			g.staging = st
		}
	})
	return g.staging
}

type kernelFn struct {
	fn     driver.Function
	params []ptx.Param
	shared atomic.Uint32 // dynamic shared memory launches may use, once above the default 48 KiB (grows only, under cudaBackend.mu)
}

func newCUDABackend(lib *driver.CUDA, ordinal int) (*cudaBackend, error) {
	dev, err := lib.Device(ordinal)
	if err != nil {
		return nil, err
	}
	name, err := dev.Name()
	if err != nil {
		return nil, err
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return nil, err
	}
	sms, err := dev.SMCount()
	if err != nil {
		return nil, err
	}
	shared, err := dev.Attribute(driver.AttrMaxSharedMemoryPerBlockOptin)
	if err != nil {
		return nil, err
	}
	ctx, err := lib.PrimaryContext(dev)
	if err != nil {
		return nil, err
	}
	return newCUDABackendOn(ctx, fmt.Sprintf("cuda:%d (%s, sm_%d%d, %d SMs)", ordinal, name, major, minor, sms),
		gpuFacts{arch: 10*major + minor, sms: sms, sharedOptin: shared}, 0, useQueue()), nil
}

// gpuFacts are the device properties that launch choices depend on.
type gpuFacts struct {
	arch        int // compute capability as 10*major + minor (90 for an H100)
	sms         int // multiprocessors
	sharedOptin int // bytes of shared memory a block may use (static + dynamic, opted in)
}

// newCUDABackendOn returns a backend on ctx; guard > 0 (tests) surrounds allocations with guard
// bands of that many floats; queued gives it a launch queue.
func newCUDABackendOn(ctx *driver.Context, name string, facts gpuFacts, guard int, queued bool) *cudaBackend {
	g := &cudaBackend{
		ctx:       ctx,
		name:      name,
		facts:     facts,
		maxBlocks: uint32(max(facts.sms, 1)) * 32,
		guard:     guard,
		cache:     map[uint64][]driver.DevicePtr{},
		fns:       make([]atomic.Pointer[kernelFn], len(ptx.All)),
	}
	if queued {
		g.queue = newLaunchQueue(g.issue, ctx.Lock, ctx.Unlock)
	}
	return g
}

// enter prepares a driver call that is not a queued command: it waits until the commands queued
// before it have been issued, so that the call is ordered after them on the stream (and sees the
// queue's failure, if any), then locks the context. On success the caller must call
// g.ctx.Unlock.
func (g *cudaBackend) enter() error {
	if g.queue != nil {
		if err := g.queue.drain(); err != nil {
			return err
		}
	}
	return g.ctx.Lock()
}

// submit makes the driver call of p's command with p's parameter values: through the launch
// queue when the device has one (the command and the values are copied; the call's errors then
// surface from later calls), else at once from the calling goroutine with p's argument block.
func (g *cudaBackend) submit(p *argPack) error {
	if g.queue == nil {
		if err := g.ctx.Lock(); err != nil {
			return err
		}
		defer g.ctx.Unlock()
		return g.issue(&p.cmd, &p.a)
	}
	s, err := g.queue.slot()
	if err != nil {
		return err
	}
	s.set(&p.cmd, p.a.Values())
	g.queue.publish()
	return nil
}

// issue makes the driver call of c; a launch passes args, which hold its parameter values. The
// caller holds the context.
func (g *cudaBackend) issue(c *command, args *driver.Args) error {
	switch c.kind {
	case cmdFill:
		return g.ctx.MemsetD32Async(c.dst, c.value, c.count, 0)
	case cmdCopy:
		return g.ctx.CopyDtoDAsync(c.dst, c.src, c.count, 0)
	}
	return g.ctx.Launch(c.fn, c.grid, c.block, c.shared, 0, args)
}

// roundBytes is the allocation size class: multiples of 512 bytes up to 1 MiB, then multiples of
// an eighth of the enclosing power of two (at most 12.5% slack).
func roundBytes(b uint64) uint64 {
	if b <= 1<<20 {
		return (b + 511) &^ 511
	}
	step := uint64(1) << (bits.Len64(b-1) - 3)
	return (b + step - 1) &^ (step - 1)
}

// guardBits is the NaN pattern of guard bands.
const guardBits = 0x7fc0dead

// alloc takes a cached block of the size class when there is one (no driver call unless guard
// bands must be written), else asks the driver; on out-of-memory it flushes the cache and tries
// once more.
func (g *cudaBackend) alloc(n int) (storage, error) {
	size := roundBytes(4 * uint64(n+2*g.guard))
	if p, ok := g.cached1(size); ok && g.guard == 0 {
		return storage{ptr: p}, nil
	} else if ok {
		if err := g.enter(); err != nil { // queued commands may still use the block
			return storage{}, err
		}
		defer g.ctx.Unlock()
		return g.guarded(p, n)
	}
	// Fresh memory: no queued command can use it (cached blocks are freed only by flush, after
	// the queue has been issued and the device synchronized).
	if err := g.ctx.Lock(); err != nil {
		return storage{}, err
	}
	defer g.ctx.Unlock()
	p, err := g.ctx.MemAlloc(size)
	if errors.Is(err, driver.ErrOutOfMemory) {
		if ferr := g.flush(); ferr != nil {
			return storage{}, ferr
		}
		p, err = g.ctx.MemAlloc(size)
	}
	if errors.Is(err, driver.ErrOutOfMemory) {
		return storage{}, fmt.Errorf("%w: allocating %s on %s: %w", ErrOutOfMemory, MiB(int64(size)), g.name, err)
	}
	if err != nil {
		return storage{}, fmt.Errorf("ops: allocating %s on %s: %w", MiB(int64(size)), g.name, err)
	}
	return g.guarded(p, n)
}

// cached1 pops a cached block of the size class, if any.
func (g *cudaBackend) cached1(size uint64) (driver.DevicePtr, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	list := g.cache[size]
	if len(list) == 0 {
		return 0, false
	}
	p := list[len(list)-1]
	g.cache[size] = list[:len(list)-1]
	g.cached -= int64(size)
	return p, true
}

// guarded fills the guard bands of a fresh block (if any) and returns the usable part.
func (g *cudaBackend) guarded(base driver.DevicePtr, n int) (storage, error) {
	if g.guard == 0 {
		return storage{ptr: base}, nil
	}
	gb := uint64(g.guard)
	if err := g.ctx.MemsetD32Async(base, guardBits, gb, 0); err != nil {
		return storage{}, err
	}
	p := base + driver.DevicePtr(4*gb)
	if err := g.ctx.MemsetD32Async(p+driver.DevicePtr(4*n), guardBits, gb, 0); err != nil {
		return storage{}, err
	}
	return storage{ptr: p}, nil
}

// checkGuards reports whether the guard bands around a buffer still hold the NaN pattern.
func (g *cudaBackend) checkGuards(s storage, n int) error {
	if g.guard == 0 {
		return nil
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	band := make([]float32, g.guard)
	for side, p := range []driver.DevicePtr{s.ptr - driver.DevicePtr(4*g.guard), s.ptr + driver.DevicePtr(4*n)} {
		if err := g.ctx.CopyDtoH(band, p); err != nil {
			return err
		}
		for i, v := range band {
			if math.Float32bits(v) != guardBits {
				return fmt.Errorf("ops: guard band %d overwritten at %d: %#x", side, i, math.Float32bits(v))
			}
		}
	}
	return nil
}

// free parks the block in the cache; it makes no driver call (the garbage collector's cleanups
// call it from their own goroutine).
func (g *cudaBackend) free(s storage, n int) {
	base := s.ptr - driver.DevicePtr(4*g.guard)
	size := roundBytes(4 * uint64(n+2*g.guard))
	g.mu.Lock()
	g.cache[size] = append(g.cache[size], base)
	g.cached += int64(size)
	g.mu.Unlock()
}

func (g *cudaBackend) cachedBytes() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cached
}

// flush waits for the launch queue and the device and frees every cached block. The caller
// holds the context.
func (g *cudaBackend) flush() error {
	// Take the blocks first: every command that can still use one of them was queued before
	// the block was released, so before this point, and drain + Synchronize cover it. A block
	// released after this point stays cached.
	g.mu.Lock()
	taken := g.cache
	g.cache = map[uint64][]driver.DevicePtr{}
	var bytes int64
	for size, list := range taken {
		bytes += int64(size) * int64(len(list))
	}
	g.cached -= bytes
	g.mu.Unlock()
	giveBack := func() {
		g.mu.Lock()
		for size, list := range taken {
			g.cache[size] = append(g.cache[size], list...)
		}
		g.cached += bytes
		g.mu.Unlock()
	}
	if g.queue != nil {
		if err := g.queue.drain(); err != nil {
			giveBack()
			return err
		}
	}
	if err := g.ctx.Synchronize(); err != nil {
		giveBack()
		return err
	}
	var first error
	for _, list := range taken {
		for _, p := range list {
			if err := g.ctx.MemFree(p); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

func (g *cudaBackend) collect() error {
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	return g.flush()
}

func (g *cudaBackend) sync() error {
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	return g.ctx.Synchronize()
}

func (g *cudaBackend) memInfo() (free, total uint64) {
	if err := g.ctx.Lock(); err != nil {
		return 0, 0
	}
	defer g.ctx.Unlock()
	free, total, err := g.ctx.MemGetInfo()
	if err != nil {
		return 0, 0
	}
	return free, total
}

func (g *cudaBackend) upload(dst storage, src []float32) error {
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	if st := g.stager(); st != nil {
		return st.UploadF32(dst.ptr, src)
	}
	return g.ctx.CopyHtoD(dst.ptr, src)
}

func (g *cudaBackend) uploadIndex(dst storage, src []uint32) error {
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	if st := g.stager(); st != nil {
		return st.UploadU32(dst.ptr, src)
	}
	return g.ctx.CopyHtoDU32(dst.ptr, src)
}

func (g *cudaBackend) download(dst []float32, src storage) error {
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	return g.ctx.CopyDtoH(dst, src.ptr)
}

func (g *cudaBackend) fill(dst storage, n int, v float32) error {
	return g.packed(func(p *argPack) error {
		p.cmd.kind, p.cmd.dst, p.cmd.value, p.cmd.count = cmdFill, dst.ptr, math.Float32bits(v), uint64(n)
		return g.submit(p)
	})
}

func (g *cudaBackend) copy(dst, src storage, n int) error {
	return g.packed(func(p *argPack) error {
		p.cmd.kind, p.cmd.dst, p.cmd.src, p.cmd.count = cmdCopy, dst.ptr, src.ptr, 4*uint64(n)
		return g.submit(p)
	})
}

// function returns the kernel's driver handle and PTX parameter list, loading the kernel on
// first use from its own PTX (ptx.Kernel.Source): the driver JIT-compiles a module as a whole,
// so a module per kernel makes a first launch wait for its own kernel's compilation only (with
// an empty JIT cache on an H100: an entry of matmul.ptx 1.5-1.7 s, the whole module 16 s).
// Loaded kernels stay loaded for the life of the context. It locks the context to load.
func (g *cudaBackend) function(k *ptx.Kernel) (*kernelFn, error) {
	if f := g.fns[k.ID()].Load(); f != nil {
		return f, nil
	}
	g.load.Lock()
	defer g.load.Unlock()
	if f := g.fns[k.ID()].Load(); f != nil { // loaded while this call waited
		return f, nil
	}
	if err := g.ctx.Lock(); err != nil {
		return nil, err
	}
	defer g.ctx.Unlock()
	src, err := k.Source()
	if err != nil {
		return nil, err
	}
	mod, err := g.ctx.LoadModule(src)
	if err != nil {
		return nil, fmt.Errorf("ops: loading PTX kernel %s: %w", k, err)
	}
	params, err := k.Params()
	var fn driver.Function
	if err == nil {
		fn, err = mod.Function(k.Name)
	}
	if err != nil {
		g.ctx.UnloadModule(mod)
		return nil, fmt.Errorf("ops: kernel %s: %w", k, err)
	}
	f := &kernelFn{fn: fn, params: params}
	g.fns[k.ID()].Store(f)
	return f, nil
}

// argPacks recycles argument packs: the driver call takes a pack's address, so a local pack
// would move to the heap (some 600 bytes per launch).
var argPacks = sync.Pool{New: func() any { return new(argPack) }}

// packed runs fill with an empty argument pack from argPacks, which it takes back afterwards:
// the prologue of every command.
func (g *cudaBackend) packed(fill func(p *argPack) error) error {
	p := argPacks.Get().(*argPack)
	defer argPacks.Put(p)
	p.a.Reset()
	p.n = 0
	return fill(p)
}

// argPack is a kernel's arguments (a) with their PTX types, checked against the .param list,
// and the command that takes them to the driver (submit).
type argPack struct {
	a     driver.Args
	kinds [driver.MaxArgs]ptx.Param
	n     int
	cmd   command
}

func (p *argPack) ptr(v storage) { p.a.Ptr(v.ptr); p.push(ptx.U64) }
func (p *argPack) u64(v uint64)  { p.a.U64(v); p.push(ptx.U64) }
func (p *argPack) f32(v float32) { p.a.F32(v); p.push(ptx.F32) }
func (p *argPack) push(k ptx.Param) {
	if p.n < len(p.kinds) {
		p.kinds[p.n] = k
	}
	p.n++
}

// launch runs kernel k on a 1-D grid.
func (g *cudaBackend) launch(k *ptx.Kernel, blocks, threads uint32, p *argPack) error {
	return g.launchGrid(k, [3]uint32{blocks, 1, 1}, [3]uint32{threads, 1, 1}, p)
}

// launchGrid runs kernel k after checking the arguments against its PTX parameters.
func (g *cudaBackend) launchGrid(k *ptx.Kernel, grid, block [3]uint32, p *argPack) error {
	return g.launchShared(k, grid, block, 0, p)
}

// defaultSharedBytes is the dynamic shared memory every kernel may use without opting in.
const defaultSharedBytes = 48 << 10

// launchShared is launchGrid with shared bytes of dynamic shared memory, opting the kernel in
// (cuFuncSetAttribute) the first time it needs more than 48 KiB.
func (g *cudaBackend) launchShared(k *ptx.Kernel, grid, block [3]uint32, shared uint32, p *argPack) error {
	f, err := g.function(k)
	if err != nil {
		return err
	}
	if p.n != len(f.params) || p.n > driver.MaxArgs {
		return fmt.Errorf("ops: kernel %s takes %d parameters, got %d (at most %d)", k, len(f.params), p.n, driver.MaxArgs)
	}
	for i, want := range f.params {
		if p.kinds[i] != want {
			return fmt.Errorf("ops: kernel %s parameter %d is %v, got %v", k, i, want, p.kinds[i])
		}
	}
	if shared > defaultSharedBytes && shared > f.shared.Load() {
		if err := g.allowShared(k, f, shared); err != nil {
			return err
		}
	}
	c := &p.cmd
	c.kind, c.fn, c.grid, c.block, c.shared = cmdLaunch, f.fn, grid, block, shared
	return g.submit(p)
}

// allowShared raises f's dynamic shared memory limit to at least shared bytes (before any launch
// that needs it is queued). Under g.mu, so that the limit only ever grows when goroutines launch
// f with different sizes at once.
func (g *cudaBackend) allowShared(k *ptx.Kernel, f *kernelFn, shared uint32) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if shared <= f.shared.Load() {
		return nil
	}
	if err := g.ctx.Lock(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	if err := f.fn.SetMaxDynamicSharedBytes(int(shared)); err != nil {
		return fmt.Errorf("ops: kernel %s: %d bytes of shared memory: %w", k, shared, err)
	}
	f.shared.Store(shared)
	return nil
}

// gridFor returns the blocks of threads-thread blocks covering work items, capped for
// grid-stride loops.
func (g *cudaBackend) gridFor(work uint64, threads uint32) uint32 {
	b := (work + uint64(threads) - 1) / uint64(threads)
	return uint32(max(1, min(b, uint64(g.maxBlocks))))
}

func (g *cudaBackend) mapKernel(op *mapOp, outs, ins [3]storage, n int, scalars [2]float32) error {
	return g.packed(func(p *argPack) error {
		for _, s := range outs[:op.outs] {
			p.ptr(s)
		}
		for _, s := range ins[:op.ins] {
			p.ptr(s)
		}
		p.u64(uint64(n))
		for _, v := range scalars[:op.sc] {
			p.f32(v)
		}
		return g.launch(op.kernel, mapGrid(n), mapThreads, p)
	})
}

// mapThreads is the block size of the elementwise kernels; each thread covers mapFloat4s float4s
// (TL_MAP_U in ptx/map.cuh; the comment there has the measurements behind the shape).
const mapThreads, mapFloat4s = 128, 2

// mapGrid returns the grid of an elementwise kernel over n floats: one block per
// mapThreads*mapFloat4s float4s, so that each block makes one step of the kernel's loop (capped
// at 2^24 blocks, past which the loop takes more steps).
func mapGrid(n int) uint32 {
	const span = mapThreads * mapFloat4s
	blocks := (uint64(n)/4 + span - 1) / span
	return uint32(max(1, min(blocks, 1<<24)))
}

func (g *cudaBackend) randKernel(op *randOp, dst storage, n int, key uint64, scalars [2]float32) error {
	return g.packed(func(p *argPack) error {
		p.ptr(dst)
		p.u64(uint64(n))
		p.u64(key)
		for _, v := range scalars[:op.sc] {
			p.f32(v)
		}
		return g.launch(op.kernel, g.gridFor(uint64(n), 256), 256, p)
	})
}

func (g *cudaBackend) sumChunks(out, x storage, n int, divisor float32) error {
	return g.packed(func(p *argPack) error {
		p.ptr(out)
		p.ptr(x)
		p.u64(uint64(n))
		p.f32(divisor)
		chunks := (n + cpu.SumChunkLen - 1) / cpu.SumChunkLen
		return g.launch(ptx.SumChunks, uint32(chunks), 256, p)
	})
}

func (g *cudaBackend) kernel(op *kernelOp, a *launchArgs) error {
	return g.packed(func(p *argPack) error {
		for _, s := range a.bufs[:op.outs+op.ins] {
			p.ptr(s)
		}
		for _, ix := range a.idx[:op.idx] {
			p.ptr(ix.buf.mem)
		}
		for _, v := range a.sizes {
			p.u64(uint64(v))
		}
		for _, v := range a.scalars {
			p.f32(v)
		}
		switch op.geometry.kind {
		case gridRows:
			rows := op.geometry.space(a.sizes)
			return g.launch(op.kernel, uint32(max(1, min(rows, int(g.maxBlocks)))), 256, p)
		case gridTiles:
			batch, rows, cols := a.sizes[0], a.sizes[1], a.sizes[2]
			gx := min((cols+31)/32, 1<<31-1)
			gy := min((rows+31)/32, 65535)
			gz := min(batch, 65535)
			return g.launchGrid(op.kernel, [3]uint32{uint32(max(1, gx)), uint32(max(1, gy)), uint32(max(1, gz))}, [3]uint32{32, 8, 1}, p)
		case gridBlocks:
			return g.launch(op.kernel, uint32(max(1, min(op.geometry.space(a.sizes), 1<<31-1))), 256, p)
		case gridCustom:
			k, grid, block := op.geometry.custom(a.sizes)
			return g.launchGrid(k, grid, block, p)
		case gridDevice:
			l := op.geometry.device(a.sizes, g.facts)
			return g.launchShared(l.kernel, l.grid, l.block, l.shared, p)
		}
		bs := [2]uint32{256, 1}
		if op.geometry.block != nil {
			bs = op.geometry.block(a.sizes)
		}
		grid := [3]uint32{g.gridFor(uint64(op.geometry.space(a.sizes)), bs[0]*bs[1]), 1, 1}
		return g.launchGrid(op.kernel, grid, [3]uint32{bs[0], bs[1], 1}, p)
	})
}
