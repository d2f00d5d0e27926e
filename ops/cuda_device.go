package ops

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/torchlean-go/torchlean/driver"
	"github.com/torchlean-go/torchlean/ptx"
)

// The CUDA backend, by concern: this file holds the device registry, the backend's state and
// its stream, and the calls that wait for the launch queue (transfers, synchronization);
// cuda_alloc.go the caching allocator; cuda_launch.go the launch path (kernel loading, argument
// packs, commands, the kernel families); launcher.go the launch queue.

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

// cudaBackend runs kernels on one device.
//
// The stream: every kernel, fill, copy, upload, download and library call of the device goes to
// the device's own stream, created non-blocking (it never waits for, nor orders with, the legacy
// default stream, which this package never uses), so it runs in issue order. Kernel launches,
// fills, device copies and library calls go through the device's launch queue (launcher.go),
// issued in order by a goroutine of their own; every other entry into the driver first waits for
// the queue to be issued (enter), then locks the calling goroutine's OS thread and makes the
// device's primary context current (driver.Context.Lock), and issues its work on the stream too.
//
// The allocator's reuse rule follows from that order (cuda_alloc.go): a block released to the
// cache can be handed to the next allocation at once, because every command that used it was
// put on the stream before the release, and every command of its next user is put there after.
type cudaBackend struct {
	ctx    *driver.Context
	stream driver.Stream // the device's own stream (non-blocking)
	name   string
	facts  gpuFacts
	queue  *launchQueue // nil: commands are issued by the calling goroutine (TORCHLEAN_LAUNCH=sync)

	mu     sync.Mutex // guards cache, cached, pools and raising kernelFn.shared
	cache  map[uint64][]driver.DevicePtr
	cached int64

	// CUDA graphs (graph.go): the pool of the capture in progress (nil: none), and the blocks
	// of every live graph's pool, which never go to the general cache while the graph lives.
	capturePool atomic.Pointer[graphPool]
	pools       map[driver.DevicePtr]*graphPool
	load        sync.Mutex                 // serializes the loading of kernels
	fns         []atomic.Pointer[kernelFn] // by ptx.Kernel.ID, filled on first use

	guard int // floats of NaN guard band on each side of every allocation (tests only)

	stagingOnce sync.Once
	staging     *driver.Staging // nil: uploads are pageable copies on the stream
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
		gpuFacts{arch: 10*major + minor, sms: sms, sharedOptin: shared}, 0, useQueue())
}

// newCUDABackendOn returns a backend on ctx with a stream of its own; guard > 0 (tests) surrounds
// allocations with guard bands of that many floats; queued gives it a launch queue.
func newCUDABackendOn(ctx *driver.Context, name string, facts gpuFacts, guard int, queued bool) (*cudaBackend, error) {
	if err := ctx.Lock(); err != nil {
		return nil, err
	}
	stream, err := ctx.NewStream(true)
	ctx.Unlock()
	if err != nil {
		return nil, fmt.Errorf("ops: creating the stream of %s: %w", name, err)
	}
	g := &cudaBackend{
		ctx:    ctx,
		stream: stream,
		name:   name,
		facts:  facts,
		guard:  guard,
		cache:  map[uint64][]driver.DevicePtr{},
		fns:    make([]atomic.Pointer[kernelFn], len(ptx.All)),
	}
	if queued {
		g.queue = newLaunchQueue(g.issue, ctx.Lock, ctx.Unlock)
	}
	return g, nil
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

func (g *cudaBackend) collect() error {
	if err := g.refuseCapturing("Device.Collect", whySync); err != nil {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	return g.flush()
}

// sync waits for the device's stream: every command issued before it has run.
func (g *cudaBackend) sync() error {
	if err := g.refuseCapturing("Device.Sync", whySync); err != nil {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	return g.ctx.StreamSynchronize(g.stream)
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

// Uploads of up to stagingSlots*stagingSlotBytes (8 MiB) go through a ring of stagingSlots pinned
// slots (driver.Staging), so that the host does not wait for the GPU to drain; TORCHLEAN_UPLOAD=sync
// turns that off (every upload a pageable copy on the stream, which waits for the stream first).
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
		if st, err := g.ctx.NewStaging(stagingSlots, stagingSlotBytes, g.stream); err == nil {
			g.staging = st
		}
	})
	return g.staging
}

func (g *cudaBackend) upload(dst storage, src []float32) error {
	if err := g.refuseCapturing("an upload", whyUpload); err != nil {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	if st := g.stager(); st != nil {
		return st.UploadF32(dst.ptr, src)
	}
	return g.ctx.CopyHtoDAsync(dst.ptr, src, g.stream)
}

func (g *cudaBackend) uploadIndex(dst storage, src []uint32) error {
	if err := g.refuseCapturing("an index upload", whyUpload); err != nil {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	if st := g.stager(); st != nil {
		return st.UploadU32(dst.ptr, src)
	}
	return g.ctx.CopyHtoDAsyncU32(dst.ptr, src, g.stream)
}

// download copies src to dst after the work on the stream (to pageable memory the copy returns
// once it has completed).
func (g *cudaBackend) download(dst []float32, src storage) error {
	if err := g.refuseCapturing("a download", whySync); err != nil {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	return g.ctx.CopyDtoHAsync(dst, src.ptr, g.stream)
}
