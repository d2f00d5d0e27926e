package ops

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/torchlean-go/torchlean/driver"
)

// CUDA graphs: a region of ops captured once (Device.Capture) and replayed with one driver call
// per replay (Graph.Launch).
//
// How a capture runs on the CUDA backend:
//
//   - The device's stream is put in capture mode (driver.Context.BeginCapture) after the launch
//     queue has been issued, and taken out of it (EndCapture) after the queue has issued every
//     command of the region: so the graph holds exactly the region's commands, in queue order.
//     The capture mode is driver.CaptureRelaxed. The stricter modes refuse "unsafe" calls
//     (cuMemAlloc among them) on the capturing thread and require EndCapture on the thread that
//     began the capture, while here the commands are issued by the launch queue's goroutine
//     (launcher.go), whose OS thread changes when it idles out, and the allocator calls
//     cuMemAlloc from the op's goroutine. This package enforces the rules itself instead:
//   - Host synchronizations are refused while capturing, before they reach the driver, with an
//     error wrapping ErrCapturing that names the call: downloads (Float32s, Float64s, Value, an
//     Item or Argmax above), uploads of host data (FromFloat32, Upload, NewIndices: a capture
//     cannot read host memory that changes; copy into the graph's input buffers before
//     Launch), Device.Sync, Device.Collect and the allocator's out-of-memory flush (cuMemFree and
//     stream synchronization are illegal in a capture and would invalidate it), and library
//     calls that cannot be captured (libraryCall; libraryCallCapturable is the form for calls
//     known to capture). A refused call changes nothing: the capture goes on, and the region's
//     function sees the error and returns it.
//   - Memory: a graph replays the addresses it was captured with. While capturing, the
//     allocator serves every allocation from the graph's private pool (graphPool): blocks freed
//     inside the region go back to the pool and serve later allocations of the region (the
//     replay repeats the same order on the one stream, so that reuse is as safe as eager reuse),
//     and no pool block is handed to an allocation outside the pool while the graph lives: a
//     buffer of the region released after the capture (a loss read after a replay, released at
//     the next step) goes back to the pool, not to the general cache, since the next replay
//     writes it again. Graph.Close gives the pool's free blocks to the general cache (the
//     blocks still held by live buffers follow when those are released). The pool takes its
//     blocks from the general cache when the pool has none of the size class (those blocks'
//     last eager users were issued before the capture began), else from cuMemAlloc.
//   - Buffers made before the capture and used by the region (parameters, optimizer state, the
//     graph's inputs) are read and written at their addresses by every replay: they must stay
//     alive, unreleased, while the graph may be launched. Values that change from step to step
//     must come from device memory (Counter, SGD, Adam), never from a kernel parameter.
//   - Other goroutines must not use the device while it captures: their commands would join
//     the graph.
//
// TORCHLEAN_GRAPHS=0 turns capture off (CanCapture reports it, and the autograd layer then runs
// captured steps eagerly); so does a driver without the graph entry points, and the CPU.

// ErrCaptureUnsupported is wrapped by the errors of CanCapture and Capture on a device that
// cannot capture: the CPU, TORCHLEAN_GRAPHS=0, a driver without graphs, no launch queue.
var ErrCaptureUnsupported = errors.New("ops: CUDA graph capture is not available")

// ErrCapturing is wrapped by the error of a call that a captured region cannot make (a host
// synchronization, an upload, a library call that cannot be captured).
var ErrCapturing = errors.New("not allowed inside a CUDA graph capture")

// graphsOff reports TORCHLEAN_GRAPHS=0.
var graphsOff = os.Getenv("TORCHLEAN_GRAPHS") == "0"

// grapher is the optional part of a backend that captures graphs (the CUDA backend).
type grapher interface {
	canCapture() error
	capture(f func() error) (*graphExec, error)
}

// CanCapture returns nil when Capture can record graphs on d, else an error wrapping
// ErrCaptureUnsupported that says why.
func (d *Device) CanCapture() error {
	if err := d.check(); err != nil {
		return err
	}
	g, ok := d.be.(grapher)
	switch {
	case !ok:
		return fmt.Errorf("%w on %s", ErrCaptureUnsupported, d.name)
	case graphsOff:
		return fmt.Errorf("%w: TORCHLEAN_GRAPHS=0", ErrCaptureUnsupported)
	}
	return g.canCapture()
}

// Graph is a captured region of ops on a CUDA device, replayed by Launch. It owns the region's
// memory pool (see the notes at the top of graph.go). Safe for concurrent use.
type Graph struct {
	dev    *Device
	x      *graphExec
	mu     sync.Mutex
	closed bool
}

// Capture runs f with d capturing, and returns the graph of the commands f queued on d: nothing
// f queues runs now; each Launch runs all of it. f runs on the calling goroutine, and no other
// goroutine may use d meanwhile. A call that a capture cannot make fails inside f with an error
// wrapping ErrCapturing (f should return it). When f returns an error, or the capture fails,
// Capture returns that error and no graph; the buffers f made are ordinary buffers again, whose
// contents were never computed.
// On a device that cannot capture (CanCapture) Capture returns its error without calling f.
func (d *Device) Capture(f func() error) (*Graph, error) {
	if err := d.CanCapture(); err != nil {
		return nil, err
	}
	x, err := d.be.(grapher).capture(f)
	if err != nil {
		return nil, err
	}
	return &Graph{dev: d, x: x}, nil
}

// Device returns the graph's device.
func (g *Graph) Device() *Device { return g.dev }

// Launch queues one replay of the graph on its device, ordered with the device's other work
// like an op: it returns once the replay is queued. Errors of the replay itself surface from
// later calls (Sync, a download), as a kernel's do. Launching inside a capture is an error.
func (g *Graph) Launch() error {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return errors.New("ops: graph: launch of a closed graph")
	}
	return g.x.launch()
}

// PoolBytes returns the bytes of the graph's private memory pool (0 once closed).
func (g *Graph) PoolBytes() int64 { return g.x.pool.size.Load() }

// Close destroys the graph and gives its pool's free blocks to the device's general cache.
// Idempotent; later Launches are errors.
func (g *Graph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return g.x.close()
}

// Upload copies src into dst, an existing buffer of len(src) elements, on dst's device (ordered
// with its work): how new inputs reach the buffers a graph reads. Not inside a capture.
func Upload(dst *Buffer, src []float32) error {
	if err := dst.liveIn("upload"); err != nil {
		return err
	}
	if dst.n != len(src) {
		return fmt.Errorf("ops: upload: %d values into a buffer of %d", len(src), dst.n)
	}
	if len(src) == 0 {
		return nil
	}
	return upload("upload", dst, src)
}

// CopyInto copies src into dst (the same length, the same device), a device-to-device copy
// ordered with the device's work; it may be captured.
func CopyInto(dst, src *Buffer) error {
	const op = "copy_into"
	if err := useAll(op, dst, src); err != nil {
		return err
	}
	defer doneAll(dst, src)
	if _, err := sameLength(op, dst, src); err != nil {
		return err
	}
	if dst.n == 0 {
		return nil
	}
	return opErr(op, dst.dev.be.copy(dst.mem, src.mem, dst.n))
}

// graphPool is the private memory pool of one graph (see the notes at the top of graph.go).
type graphPool struct {
	mu     sync.Mutex
	free   map[uint64][]driver.DevicePtr // size class -> free blocks
	blocks map[driver.DevicePtr]uint64   // every block of the pool -> its size class
	size   atomic.Int64                  // bytes of all blocks
	closed bool
}

func newGraphPool() *graphPool {
	return &graphPool{free: map[uint64][]driver.DevicePtr{}, blocks: map[driver.DevicePtr]uint64{}}
}

// take pops a free block of the size class.
func (p *graphPool) take(size uint64) (driver.DevicePtr, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.free[size]
	if len(list) == 0 {
		return 0, false
	}
	b := list[len(list)-1]
	p.free[size] = list[:len(list)-1]
	return b, true
}

// graphExec is the CUDA side of a Graph.
type graphExec struct {
	g      *cudaBackend
	exec   driver.GraphExec
	pool   *graphPool
	launch func() error
}

// capturing is the pool of the capture in progress on g, nil when none.
func (g *cudaBackend) capturing() *graphPool { return g.capturePool.Load() }

// refuseCapturing returns the error of call while g captures, else nil.
func (g *cudaBackend) refuseCapturing(call, why string) error {
	if g.capturing() == nil {
		return nil
	}
	return fmt.Errorf("ops: %s is %w: %s", call, ErrCapturing, why)
}

// Reasons given by refuseCapturing.
const (
	whySync   = "it waits for the device, which a captured region cannot do (read results after the graph's Launch)"
	whyUpload = "a graph cannot read host memory (copy inputs into the graph's buffers before Launch: ops.Upload)"
)

func (g *cudaBackend) canCapture() error {
	if g.queue == nil {
		return fmt.Errorf("%w: the device has no launch queue (TORCHLEAN_LAUNCH=sync or GOMAXPROCS < 2)", ErrCaptureUnsupported)
	}
	if err := g.ctx.CUDA().GraphsSupported(); err != nil {
		return fmt.Errorf("%w: %w", ErrCaptureUnsupported, err)
	}
	return nil
}

// capture implements Device.Capture on g.
func (g *cudaBackend) capture(f func() error) (*graphExec, error) {
	pool := newGraphPool()
	if !g.capturePool.CompareAndSwap(nil, pool) {
		return nil, errors.New("ops: capture: the device is capturing already (captures do not nest)")
	}
	if err := g.enter(); err != nil { // every command queued before is issued, outside the graph
		g.capturePool.Store(nil)
		return nil, err
	}
	err := g.ctx.BeginCapture(g.stream, driver.CaptureRelaxed)
	g.ctx.Unlock()
	if err != nil {
		g.capturePool.Store(nil)
		return nil, fmt.Errorf("ops: capture: %w", err)
	}
	ferr := f()
	graph, eerr := g.endCapture()
	g.capturePool.Store(nil)
	var exec driver.GraphExec
	if ferr == nil && eerr == nil {
		eerr = g.locked(func() error {
			var err error
			exec, err = g.ctx.Instantiate(graph, 0)
			return err
		})
	}
	if graph != 0 {
		_ = g.locked(func() error { return g.ctx.DestroyGraph(graph) }) // exec does not need it
	}
	if ferr != nil || eerr != nil {
		g.closePool(pool)
		if ferr != nil {
			return nil, ferr
		}
		return nil, fmt.Errorf("ops: capture: %w", eerr)
	}
	x := &graphExec{g: g, exec: exec, pool: pool}
	x.launch = func() error {
		if g.capturing() != nil {
			return fmt.Errorf("ops: a graph launch is %w: launch it after the capture", ErrCapturing)
		}
		return g.libraryCallCapturable("cuGraphLaunch", x.issue)
	}
	return x, nil
}

// issue is the graph's command on the launch queue.
func (x *graphExec) issue(c *driver.Context, s driver.Stream) error { return c.LaunchGraph(x.exec, s) }

// endCapture waits until the queue has issued the region's commands and ends the capture; the
// stream leaves capture mode whatever the outcome.
func (g *cudaBackend) endCapture() (driver.Graph, error) {
	var qerr error
	if g.queue != nil {
		qerr = g.queue.drain()
	}
	var graph driver.Graph
	err := g.locked(func() error {
		var err error
		graph, err = g.ctx.EndCapture(g.stream)
		return err
	})
	if qerr != nil {
		return graph, qerr
	}
	return graph, err
}

// locked runs f with the context locked (not waiting for the queue).
func (g *cudaBackend) locked(f func() error) error {
	if err := g.ctx.Lock(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	return f()
}

// close destroys the executable graph and closes its pool.
func (x *graphExec) close() error {
	err := func() error {
		if err := x.g.enter(); err != nil { // its launches are queued before this point
			return err
		}
		defer x.g.ctx.Unlock()
		return x.g.ctx.DestroyGraphExec(x.exec)
	}()
	x.g.closePool(x.pool)
	if err != nil {
		return fmt.Errorf("ops: graph: close: %w", err)
	}
	return nil
}

// closePool gives the pool's free blocks to the general cache and forgets its blocks: those
// still held by live buffers go to the general cache when released.
func (g *cudaBackend) closePool(p *graphPool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	g.mu.Lock()
	defer g.mu.Unlock()
	for b := range p.blocks {
		delete(g.pools, b)
	}
	for size, list := range p.free {
		g.cache[size] = append(g.cache[size], list...)
		g.cached += int64(size) * int64(len(list))
	}
	p.free, p.blocks = nil, nil
	p.size.Store(0)
}

// poolAlloc serves an allocation of the size class while capturing: the pool's free blocks, then
// the general cache's, then the driver (no flush on out of memory: it would synchronize).
func (g *cudaBackend) poolAlloc(p *graphPool, size uint64) (driver.DevicePtr, error) {
	if b, ok := p.take(size); ok {
		return b, nil
	}
	b, ok := g.cached1(size)
	if !ok {
		if err := g.ctx.Lock(); err != nil {
			return 0, err
		}
		var err error
		b, err = g.ctx.MemAlloc(size)
		g.ctx.Unlock()
		if errors.Is(err, driver.ErrOutOfMemory) {
			return 0, fmt.Errorf("%w: allocating %s on %s inside a CUDA graph capture (the cache cannot be flushed there: call Device.Collect before capturing): %w",
				ErrOutOfMemory, MiB(int64(size)), g.name, err)
		}
		if err != nil {
			return 0, fmt.Errorf("ops: allocating %s on %s: %w", MiB(int64(size)), g.name, err)
		}
	}
	p.mu.Lock()
	p.blocks[b] = size
	p.mu.Unlock()
	p.size.Add(int64(size))
	g.mu.Lock()
	if g.pools == nil {
		g.pools = map[driver.DevicePtr]*graphPool{}
	}
	g.pools[b] = p
	g.mu.Unlock()
	return b, nil
}

// put takes back a block of the pool (reporting true), or reports false when the pool was
// closed meanwhile (the block then belongs to the general cache).
func (p *graphPool) put(base driver.DevicePtr, size uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed { // closed meanwhile: the block is the general cache's
		return false
	}
	p.free[size] = append(p.free[size], base)
	return true
}

// libraryCallCapturable is libraryCall for a call that may be captured into a graph (it only
// queues work on the stream that stream capture records, such as a kernel launch by a library).
func (g *cudaBackend) libraryCallCapturable(name string, call func(x *driver.Context, s driver.Stream) error) error {
	return g.packed(func(p *argPack) error {
		p.cmd.kind, p.cmd.name, p.cmd.call = cmdCall, name, call
		return g.submit(p)
	})
}
