package ops

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/driver"
	"github.com/torchlean-go/torchlean/ptx"
)

// The launch path of the CUDA backend: kernels loaded on first use, argument packs checked
// against the PTX .param lists, and the commands (launches, fills, copies, library calls) that go
// to the device's stream through its launch queue (launcher.go).

type kernelFn struct {
	fn     driver.Function
	params []ptx.Param
	shared atomic.Uint32 // dynamic shared memory launches may use, once above the default 48 KiB (grows only, under cudaBackend.mu)
}

// function returns the kernel's driver handle and PTX parameter list, loading the kernel on
// first use from its own PTX (ptx.Kernel.Source): the driver JIT-compiles a module as a whole,
// so a module per kernel makes a first launch wait for its own kernel's compilation only
// (BENCHMARKS.md has the times). Loaded kernels stay loaded for the life of the context. It
// locks the context to load.
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

// issue makes the driver call of c on the device's stream; a launch passes args, which hold its
// parameter values. The caller holds the context.
func (g *cudaBackend) issue(c *command, args *driver.Args) error {
	switch c.kind {
	case cmdFill:
		return g.ctx.MemsetD32Async(c.dst, c.value, c.count, g.stream)
	case cmdCopy:
		return g.ctx.CopyDtoDAsync(c.dst, c.src, c.count, g.stream)
	case cmdCall:
		if err := c.call(g.ctx, g.stream); err != nil {
			return fmt.Errorf("ops: %s: %w", c.name, err)
		}
		return nil
	}
	return g.ctx.Launch(c.fn, c.grid, c.block, c.shared, g.stream, args)
}

// libraryCall queues call(ctx, stream), a library's work on the device's stream (a cuFFT
// execution, a collective, a graph launch), as a command: it runs on the issuing thread with the
// context current, after every command queued before it and before every command queued after
// it, so it is ordered with the kernels around it. name names the call in its error, which
// fails the queue as a refused launch does (see launcher.go). call must not block on the GPU,
// must only queue work on stream, and must not call back into this package.
//
// A library call cannot be captured into a CUDA graph unless it is known to be capturable
// (libraryCallCapturable, graph.go): inside a capture libraryCall returns an error naming it.
func (g *cudaBackend) libraryCall(name string, call func(x *driver.Context, s driver.Stream) error) error {
	if err := g.refuseCapturing(name, "this library call is not known to be capturable into a CUDA graph"); err != nil {
		return err
	}
	return g.packed(func(p *argPack) error {
		p.cmd.kind, p.cmd.name, p.cmd.call = cmdCall, name, call
		return g.submit(p)
	})
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
	p.cmd.call, p.cmd.name = nil, "" // a launch, fill or copy sets the other fields it uses
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

// defaultSharedBytes is the dynamic shared memory every kernel may use without opting in.
const defaultSharedBytes = 48 << 10

// launch runs l after checking the arguments against its kernel's PTX parameters, opting the
// kernel in (cuFuncSetAttribute) the first time it needs more than 48 KiB of dynamic shared
// memory.
func (g *cudaBackend) launch(l launchShape, p *argPack) error {
	k := l.kernel
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
	if l.shared > defaultSharedBytes && l.shared > f.shared.Load() {
		if err := g.allowShared(k, f, l.shared); err != nil {
			return err
		}
	}
	c := &p.cmd
	c.kind, c.fn, c.grid, c.block, c.shared = cmdLaunch, f.fn, l.grid, l.block, l.shared
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

// linear is the launch of kernel k as blocks blocks of threads threads.
func linear(k *ptx.Kernel, blocks, threads uint32) launchShape {
	return launchShape{kernel: k, grid: [3]uint32{blocks, 1, 1}, block: [3]uint32{threads, 1, 1}}
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
		return g.launch(linear(op.kernel, mapGrid(n), mapThreads), p)
	})
}

// mapThreads is the block size of the elementwise kernels; each thread covers mapFloat4s float4s
// (TL_MAP_U in ptx/map.cuh).
const mapThreads, mapFloat4s = 128, 2

// mapGrid returns the grid of an elementwise kernel over n floats: one block per
// mapThreads*mapFloat4s float4s, so that each block makes one step of the kernel's loop (capped
// at 2^24 blocks, past which the loop takes more steps).
func mapGrid(n int) uint32 {
	const span = mapThreads * mapFloat4s
	blocks := (uint64(n)/4 + span - 1) / span
	return uint32(max(1, min(blocks, 1<<24)))
}

func (g *cudaBackend) randKernel(op *randOp, dst storage, n int, key drawKey, scalars [2]float32) error {
	return g.packed(func(p *argPack) error {
		p.ptr(dst)
		p.ptr(key.count)
		p.u64(uint64(n))
		p.u64(key.key)
		p.u64(key.offset)
		for _, v := range scalars[:op.sc] {
			p.f32(v)
		}
		return g.launch(linear(op.kernel, g.facts.blocksFor(uint64(n), 256), 256), p)
	})
}

func (g *cudaBackend) sumChunks(out, x storage, n int, divisor float32) error {
	return g.packed(func(p *argPack) error {
		p.ptr(out)
		p.ptr(x)
		p.u64(uint64(n))
		p.f32(divisor)
		chunks := (n + cpu.SumChunkLen - 1) / cpu.SumChunkLen
		return g.launch(linear(ptx.SumChunks, uint32(chunks), sumThreads), p)
	})
}

// sumThreads is the block of sum_chunks: one thread per partial of a chunk (SUM_THREADS).
const sumThreads = 256

func (g *cudaBackend) kernel(op *kernelOp, a *launchArgs) error {
	return g.packed(func(p *argPack) error {
		for _, s := range a.bufs {
			p.ptr(s)
		}
		for _, ix := range a.idx {
			p.ptr(ix.buf.mem)
		}
		for _, v := range a.sizes {
			p.u64(uint64(v))
		}
		for _, v := range a.scalars {
			p.f32(v)
		}
		return g.launch(op.grid.shape(op.kernel, a.sizes, g.facts), p)
	})
}
