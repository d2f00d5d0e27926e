package ops

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/torchlean-go/torchlean/driver"
)

// The caching allocator of a CUDA device. Blocks are cached by size class when released and
// handed to the next allocation of that class without a driver call. The reuse rule: all of a
// device's work runs in issue order on its stream (cudaBackend), so a block may be reused as soon
// as it is released: every command that used it was issued before its release, and every command
// of its next user is issued after. Freeing a block to the driver (flush) therefore first waits
// for the launch queue and the stream.

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
	if pool := g.capturing(); pool != nil { // inside a capture: the graph's pool (graph.go)
		p, err := g.poolAlloc(pool, size)
		if err != nil || g.guard == 0 {
			return storage{ptr: p}, err
		}
		if err := g.enter(); err != nil { // commands of the region may still use the block
			return storage{}, err
		}
		defer g.ctx.Unlock()
		return g.guarded(p, n)
	}
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
	if err := g.ctx.MemsetD32Async(base, guardBits, gb, g.stream); err != nil {
		return storage{}, err
	}
	p := base + driver.DevicePtr(4*gb)
	if err := g.ctx.MemsetD32Async(p+driver.DevicePtr(4*n), guardBits, gb, g.stream); err != nil {
		return storage{}, err
	}
	return storage{ptr: p}, nil
}

// checkGuards reports whether the guard bands around a buffer still hold the NaN pattern.
func (g *cudaBackend) checkGuards(s storage, n int) error {
	if g.guard == 0 {
		return nil
	}
	if err := g.refuseCapturing("a guard check", whySync); err != nil {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.ctx.Unlock()
	band := make([]float32, g.guard)
	for side, p := range []driver.DevicePtr{s.ptr - driver.DevicePtr(4*g.guard), s.ptr + driver.DevicePtr(4*n)} {
		if err := g.ctx.CopyDtoHAsync(band, p, g.stream); err != nil {
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

// free parks the block in the cache, or in its graph's pool while the graph lives (graph.go);
// it makes no driver call (the garbage collector's cleanups call it from their own goroutine).
func (g *cudaBackend) free(s storage, n int) {
	base := s.ptr - driver.DevicePtr(4*g.guard)
	size := roundBytes(4 * uint64(n+2*g.guard))
	g.mu.Lock()
	if p := g.pools[base]; p != nil {
		g.mu.Unlock()
		if p.put(base, size) {
			return
		}
		g.mu.Lock()
	}
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
	// the block was released, so before this point, and drain + StreamSynchronize cover it (all
	// of the device's work is on its stream). A block released after this point stays cached.
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
	if err := g.ctx.StreamSynchronize(g.stream); err != nil {
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
