package ops

import (
	"fmt"
	"math"
	"runtime/debug"
	"sync"

	"github.com/torchlean-go/torchlean/cpu"
)

// hostMemory is hostMemoryBytes, asked once (a system call per allocation cost the CPU ops a
// third of their dispatch time).
var hostMemory = sync.OnceValues(hostMemoryBytes)

// cpuBackend runs the Go twins of package cpu on host memory, splitting large buffers across
// GOMAXPROCS goroutines (every kernel is independent per element or per chunk, so the split
// never changes a bit). Released slices are cached by size class, as on CUDA, so that an op
// does not pay for zeroing fresh memory, up to cpuCacheLimit bytes: a release that would pass
// the limit first drops every cached slice (the garbage collector reclaims them), so the cache
// never holds more than the limit however the sizes drift.
type cpuBackend struct {
	mu     sync.Mutex
	cache  map[int][][]float32 // size class (floats) -> free slices of that capacity
	cached int64
	limit  int64 // the cache's limit in bytes; 0: cpuCacheLimit()
}

// cpuCacheLimit is the most bytes the CPU backend keeps cached: 1/32 of RAM, between 64 MiB and
// 1 GiB (64 MiB when RAM is unknown).
var cpuCacheLimit = sync.OnceValue(func() int64 {
	total, _ := hostMemory()
	return min(max(int64(total/32), 64<<20), 1<<30)
})

// grain is the smallest slice worth a goroutine.
const grain = 1 << 15

// checkedBytes is the size from which an allocation that the cache cannot serve first checks the
// memory available now.
const checkedBytes = 256 << 20

// hostBackend is the CPU device's backend (whose cache hostCheck may drop).
var hostBackend = &cpuBackend{}

// tooLarge returns the error for an allocation of size bytes larger than the most memory the
// process can have, nil otherwise. A Go allocation larger than memory is a fatal error (or the
// kernel kills the process when the memory is touched), not a panic: such sizes are refused
// first.
func tooLarge(size uint64, where string) error {
	if total, what := hostMemory(); total > 0 && size > total {
		return fmt.Errorf("%w: %s requested %s, more than its %s %s",
			ErrOutOfMemory, MiB(int64(size)), where, MiB(int64(total)), what)
	}
	return nil
}

// hostCheck returns ErrOutOfMemory, as the CPU's buffers do, when size bytes of host memory for
// a download (Float32s, Float64s) do not fit: more than tooLarge allows, or, from checkedBytes,
// more than the memory available now. nil means the slice may be made.
func hostCheck(size uint64) error {
	if err := tooLarge(size, "in host memory"); err != nil || size < checkedBytes {
		return err
	}
	if avail, what, ok := hostBackend.available(size); !ok {
		return fmt.Errorf("%w: %s requested in host memory, %s %s", ErrOutOfMemory, MiB(int64(size)), MiB(int64(avail)), what)
	}
	return nil
}

func (c *cpuBackend) alloc(n int) (storage, error) {
	if err := tooLarge(4*uint64(n), "on the CPU"); err != nil {
		return storage{}, err
	}
	class := int(roundBytes(4*uint64(n)) / 4)
	c.mu.Lock()
	if list := c.cache[class]; len(list) > 0 {
		s := list[len(list)-1]
		c.cache[class] = list[:len(list)-1]
		c.cached -= 4 * int64(class)
		c.mu.Unlock()
		return storage{host: s[:n]}, nil
	}
	c.mu.Unlock()
	if 4*uint64(class) >= checkedBytes {
		avail, what, ok := c.available(4 * uint64(class))
		if !ok {
			if avail < 4*uint64(n) {
				return storage{}, fmt.Errorf("%w: %s requested on the CPU, %s %s", ErrOutOfMemory, MiB(4*int64(n)), MiB(int64(avail)), what)
			}
			class = n // fits without the size class's rounding (such a slice is never cached)
		}
	}
	return storage{host: make([]float32, n, class)}, nil
}

// addressSpaceLeft names the address-space limit in available's messages.
const addressSpaceLeft = "of address space left under its limit (ulimit -v; 3 GiB for a 32-bit program)"

// addressSpaceMargin is what available keeps back of the address space for the Go runtime's own
// mappings when the heap grows (arenas are mapped 64 MiB at a time, with metadata beside them).
const addressSpaceMargin = 256 << 20

// available reports whether size bytes fit in the memory available now, that memory, and which
// limit it is (for messages): the least of hostAvailable and, under an address-space limit, what
// is left of it less addressSpaceMargin. The Go heap's free memory does not count: the runtime
// reuses a freed range for a large span only while no smaller allocation has taken a piece of it,
// which nothing here can see, so a large buffer may take new memory while the freed pages stay
// resident (counting them let a loop of large buffers and small ones grow the process until the
// kernel killed it, and a buffer of the size just released die of a fatal error under an
// address-space limit). When size does not fit in memory, it first drops the cache and returns
// the garbage collector's free memory to the system, and asks again. Under an address-space limit
// that cannot help (the runtime keeps freed ranges mapped), so there a buffer released and asked
// for again may be refused: a clean ErrOutOfMemory, never a crash.
func (c *cpuBackend) available(size uint64) (avail uint64, what string, ok bool) {
	ask := func() (uint64, string, bool) {
		avail, known := hostAvailable()
		what := "of memory available"
		if limit, used, ok := addressSpace(); ok {
			left := limit - min(limit, used) // not mapped yet
			left -= min(left, addressSpaceMargin)
			if !known || left < avail {
				avail, known, what = left, true, addressSpaceLeft
			}
		}
		if !known {
			return 0, "", true
		}
		return avail, what, size <= avail
	}
	if avail, what, ok := ask(); ok || what == addressSpaceLeft {
		return avail, what, ok
	}
	c.collect()
	debug.FreeOSMemory() // a garbage collection, then the free memory back to the system
	return ask()
}

func (c *cpuBackend) free(s storage, n int) {
	class := cap(s.host)
	size := 4 * int64(class)
	limit := c.limit
	if limit == 0 {
		limit = cpuCacheLimit()
	}
	// Slices allocated without their size class (alloc) and those past the limit are never
	// cached: the garbage collector takes them.
	if roundBytes(uint64(size)) != uint64(size) || size > limit {
		return
	}
	c.mu.Lock()
	if c.cached+size > limit {
		c.cache, c.cached = nil, 0
	}
	if c.cache == nil {
		c.cache = map[int][][]float32{}
	}
	c.cache[class] = append(c.cache[class], s.host[:class])
	c.cached += size
	c.mu.Unlock()
}

func (c *cpuBackend) cachedBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cached
}

func (c *cpuBackend) collect() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cache, c.cached = nil, 0
	return nil
}

func (*cpuBackend) sync() error                   { return nil }
func (*cpuBackend) memInfo() (free, total uint64) { return 0, 0 }

func (*cpuBackend) upload(dst storage, src []float32) error {
	copy(dst.host, src)
	return nil
}

func (*cpuBackend) uploadIndex(dst storage, src []uint32) error {
	for i, v := range src {
		dst.host[i] = math.Float32frombits(v)
	}
	return nil
}

func (*cpuBackend) download(dst []float32, src storage) error {
	copy(dst, src.host)
	return nil
}

func (*cpuBackend) fill(dst storage, n int, v float32) error {
	cpu.Parallel(n, grain, func(lo, hi int) {
		s := dst.host[lo:hi]
		for i := range s {
			s[i] = v
		}
	})
	return nil
}

func (*cpuBackend) copy(dst, src storage, n int) error {
	cpu.Parallel(n, grain, func(lo, hi int) { copy(dst.host[lo:hi], src.host[lo:hi]) })
	return nil
}

func (*cpuBackend) mapKernel(op *mapOp, outs, ins [3]storage, n int, s [2]float32) error {
	slice := func(lo, hi int) (o, in [3][]float32) {
		for k := range op.outs {
			o[k] = outs[k].host[lo:hi]
		}
		for k := range op.ins {
			in[k] = ins[k].host[lo:hi]
		}
		return o, in
	}
	if n < 2*grain {
		o, in := slice(0, n)
		op.cpu(o, in, s)
		return nil
	}
	cpu.Parallel(n, grain, func(lo, hi int) {
		o, in := slice(lo, hi)
		op.cpu(o, in, s)
	})
	return nil
}

func (*cpuBackend) randKernel(op *randOp, dst storage, n int, key drawKey, s [2]float32) error {
	k := key.at()
	cpu.Parallel(n, grain, func(lo, hi int) { op.cpu(dst.host[lo:hi], k, uint64(lo), s) })
	return nil
}

func (*cpuBackend) sumChunks(out, x storage, n int, divisor float32) error {
	chunks := (n + cpu.SumChunkLen - 1) / cpu.SumChunkLen
	cpu.Parallel(chunks, 4, func(lo, hi int) {
		cpu.SumChunks(out.host[lo:hi], x.host[lo*cpu.SumChunkLen:min(n, hi*cpu.SumChunkLen)], divisor)
	})
	return nil
}

func (*cpuBackend) kernel(op *kernelOp, a *launchArgs) error {
	h := hostArgs{b: make([][]float32, len(a.bufs)), idx: make([][]uint32, len(a.idx)), s: a.sizes, f: a.scalars}
	for k, ix := range a.idx {
		h.idx[k] = ix.host
	}
	total := 0
	for k, b := range a.bufs {
		h.b[k] = b.host
		total = max(total, len(b.host))
	}
	units := op.units(a.sizes)
	if op.whole {
		op.cpu(&h, 0, units)
		return nil
	}
	perUnit := max(1, total/max(1, units))
	cpu.Parallel(units, max(1, grain/perUnit), func(lo, hi int) { op.cpu(&h, lo, hi) })
	return nil
}
