//go:build linux && (amd64 || arm64) && !nocuda

package driver

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Fake is an in-process stand-in for libcuda, for tests of the packages above driver on
// machines without a GPU: the real call path runs (purego, Args, the lost state, everything that
// ops builds on a Context), while the "device" only keeps books. It allocates device addresses
// from a private range and records a violation when a command is issued whose start address is
// outside every live allocation (a launch's pointer parameters, a memset, a copy, a transfer;
// extents are not checked), when a device call comes from a thread on which cuCtxSetCurrent
// never ran in this process, and on a double free. It also counts the calls that use the legacy
// default stream (a stream argument of 0, or the synchronous cuMemcpyHtoD_v2 and cuMemcpyDtoH_v2):
// work of a non-blocking stream is not ordered with them (LegacyCalls). Kernels compute nothing
// and downloads leave the destination as it was.
//
// The C entry points are purego callbacks, created once per process, that serve the most
// recent Fake: use one Fake at a time (tests of one package run sequentially unless they call
// t.Parallel). Symbols it does not implement return CUDA_ERROR_NOT_SUPPORTED.
type Fake struct {
	o          FakeOptions
	mu         sync.Mutex
	next       uint64            // the next device address
	live       map[uint64]uint64 // allocation base -> bytes
	funcs      map[uintptr]string
	violations []string
	host       [][]byte         // pinned host memory handed out (kept reachable)
	legacy     []string         // calls on the legacy default stream
	launched   map[string]int64 // launches by kernel name
	streams    int              // streams created
	launches   atomic.Int64
	allocs     atomic.Int64
	frees      atomic.Int64
	failLaunch atomic.Int32
	syncResult atomic.Int32
	gr         *fakeGraphs // stream capture and graphs (fake_graph.go)
}

// FakeOptions configure a Fake.
type FakeOptions struct {
	// Pointers reports which parameters of the named kernel are device pointers (checked at
	// launch), false for a kernel it does not know (cuModuleGetFunction then fails).
	Pointers func(kernel string) (ptrs []bool, ok bool)
	// LaunchDelay is how long each cuLaunchKernel spins (a real one costs the host microseconds).
	LaunchDelay time.Duration
	// MemoryBytes, when nonzero, makes cuMemAlloc fail with out of memory beyond that many live
	// bytes.
	MemoryBytes uint64
}

// fakeBase is the first device address of a Fake.
const fakeBase = 0x7f0000000000

var (
	fakeCurrent atomic.Pointer[Fake]
	fakeOnce    sync.Once
	fakeSyms    map[string]uintptr
	fakeThreads sync.Map // thread id -> true once cuCtxSetCurrent ran there
)

// NewFake returns a fake libcuda and a context on it (device 0, "fake"), which becomes the
// one the callbacks serve.
func NewFake(o FakeOptions) (*Fake, *Context) {
	f := &Fake{o: o, next: fakeBase, live: map[uint64]uint64{}, funcs: map[uintptr]string{}, launched: map[string]int64{}, gr: newFakeGraphs()}
	fakeCurrent.Store(f)
	c := &CUDA{path: "fake", fake: true}
	syms := fakeSymbols()
	for _, s := range c.fn.symbols() {
		if p, ok := syms[s.name]; ok {
			*s.addr = p
		} else {
			*s.addr = syms[""]
		}
	}
	fakeGraphFuncs(c, syms)
	return f, &Context{c: c, dev: Device{c: c}, h: 1, setArgs: []uintptr{1}}
}

// LegacyCalls returns the names of the calls so far that used the legacy default stream.
func (f *Fake) LegacyCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.legacy...)
}

// onStream records call as a use of the legacy default stream when s is 0.
func (f *Fake) onStream(call string, s uintptr) {
	if s == 0 {
		f.mu.Lock()
		f.legacy = append(f.legacy, call)
		f.mu.Unlock()
	}
}

// Violations returns the violations recorded so far.
func (f *Fake) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

// Launched returns the number of launches of each kernel (by .entry name) that the fake accepted
// so far.
func (f *Fake) Launched() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int64, len(f.launched))
	for k, n := range f.launched {
		out[k] = n
	}
	return out
}

// Launches returns the number of cuLaunchKernel calls so far.
func (f *Fake) Launches() int64 { return f.launches.Load() }

// Allocs returns the number of successful cuMemAlloc calls so far.
func (f *Fake) Allocs() int64 { return f.allocs.Load() }

// Frees returns the number of successful cuMemFree calls so far.
func (f *Fake) Frees() int64 { return f.frees.Load() }

// LiveBytes returns the bytes of device memory allocated and not freed.
func (f *Fake) LiveBytes() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n uint64
	for _, b := range f.live {
		n += b
	}
	return n
}

// FailLaunches makes every later cuLaunchKernel return r (Success: launches succeed again).
func (f *Fake) FailLaunches(r Result) { f.failLaunch.Store(int32(r)) }

// FailSynchronize makes every later cuCtxSynchronize return r.
func (f *Fake) FailSynchronize(r Result) { f.syncResult.Store(int32(r)) }

func (f *Fake) violate(format string, args ...any) {
	f.mu.Lock()
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

// onThread records a violation when the calling thread never had the context made current.
func (f *Fake) onThread(call string) {
	if _, ok := fakeThreads.Load(syscall.Gettid()); !ok {
		f.violate("%s on a thread without the context current", call)
	}
}

// uses checks that the device addresses ps lie in live allocations, and returns the Result
// of the call (CUDA_ERROR_ILLEGAL_ADDRESS for a dead one).
func (f *Fake) uses(call string, ps ...uint64) uintptr {
	f.onThread(call)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range ps {
		if p < fakeBase || p >= fakeBase+1<<40 {
			continue // not a device address of this fake (a length, a host value)
		}
		ok := false
		for b, n := range f.live {
			if p >= b && p < b+n {
				ok = true
				break
			}
		}
		if !ok {
			f.violations = append(f.violations, fmt.Sprintf("%s uses %#x, which is not allocated", call, p))
			return uintptr(ErrIllegalAddress)
		}
	}
	return 0
}

// fakeAddr reinterprets the address p that the caller passed (memory the caller owns) without
// a uintptr->unsafe.Pointer conversion, which vet rejects (as goString does).
func fakeAddr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

func fakeWrite(p uintptr, v uint64) { *(*uint64)(fakeAddr(p)) = v }

// fakeSymbols creates the callbacks (once per process: purego keeps a bounded number).
func fakeSymbols() map[string]uintptr {
	fakeOnce.Do(func() {
		f := func() *Fake { return fakeCurrent.Load() }
		cb := purego.NewCallback
		fakeSyms = map[string]uintptr{
			"": cb(func() uintptr { return uintptr(ErrNotSupported) }),
			"cuCtxSetCurrent": cb(func(h uintptr) uintptr {
				fakeThreads.Store(syscall.Gettid(), true)
				return 0
			}),
			"cuCtxSynchronize": cb(func() uintptr {
				f().onThread("cuCtxSynchronize")
				if r := f().illegalWhileCapturing("cuCtxSynchronize", 0, true); r != 0 {
					return r
				}
				return uintptr(f().syncResult.Load())
			}),
			"cuStreamCreate": cb(func(ps, flags uintptr) uintptr {
				g := f()
				g.onThread("cuStreamCreate")
				g.mu.Lock()
				g.streams++
				h := uint64(0x5100 + g.streams)
				g.mu.Unlock()
				fakeWrite(ps, h)
				return 0
			}),
			"cuStreamSynchronize": cb(func(s uintptr) uintptr {
				g := f()
				g.onThread("cuStreamSynchronize")
				g.onStream("cuStreamSynchronize", s)
				if r := g.illegalWhileCapturing("cuStreamSynchronize", s, false); r != 0 {
					return r
				}
				return uintptr(g.syncResult.Load())
			}),
			"cuStreamDestroy_v2": cb(func(s uintptr) uintptr { return 0 }),
			"cuMemAlloc_v2": cb(func(pp, size uintptr) uintptr {
				g := f()
				g.onThread("cuMemAlloc")
				g.mu.Lock()
				defer g.mu.Unlock()
				if g.o.MemoryBytes > 0 {
					var used uint64
					for _, n := range g.live {
						used += n
					}
					if used+uint64(size) > g.o.MemoryBytes {
						return uintptr(ErrOutOfMemory)
					}
				}
				a := g.next
				g.next += (uint64(size)+4095)&^4095 + 4096 // a gap between allocations
				g.live[a] = uint64(size)
				g.allocs.Add(1)
				fakeWrite(pp, a)
				return 0
			}),
			"cuMemFree_v2": cb(func(p uintptr) uintptr {
				g := f()
				g.onThread("cuMemFree")
				if r := g.illegalWhileCapturing("cuMemFree", 0, true); r != 0 {
					return r
				}
				g.mu.Lock()
				defer g.mu.Unlock()
				if _, ok := g.live[uint64(p)]; !ok {
					g.violations = append(g.violations, fmt.Sprintf("cuMemFree of %#x, which is not allocated", p))
					return uintptr(ErrInvalidValue)
				}
				delete(g.live, uint64(p))
				g.frees.Add(1)
				return 0
			}),
			"cuMemGetInfo_v2": cb(func(free, total uintptr) uintptr {
				f().onThread("cuMemGetInfo")
				fakeWrite(free, 1<<30)
				fakeWrite(total, 2<<30)
				return 0
			}),
			"cuMemsetD32Async": cb(func(dst, v, n, s uintptr) uintptr {
				f().onStream("cuMemsetD32Async", s)
				if ok, r := f().captured("cuMemsetD32Async", "", s, uint64(dst)); ok {
					return r
				}
				return f().uses("cuMemsetD32Async", uint64(dst))
			}),
			"cuMemcpyDtoDAsync_v2": cb(func(dst, src, n, s uintptr) uintptr {
				f().onStream("cuMemcpyDtoDAsync", s)
				if ok, r := f().captured("cuMemcpyDtoDAsync", "", s, uint64(dst), uint64(src)); ok {
					return r
				}
				return f().uses("cuMemcpyDtoDAsync", uint64(dst), uint64(src))
			}),
			"cuMemcpyDtoH_v2": cb(func(dst, src, n uintptr) uintptr {
				f().onStream("cuMemcpyDtoH", 0)
				return f().uses("cuMemcpyDtoH", uint64(src))
			}),
			"cuMemcpyHtoD_v2": cb(func(dst, src, n uintptr) uintptr {
				f().onStream("cuMemcpyHtoD", 0)
				return f().uses("cuMemcpyHtoD", uint64(dst))
			}),
			"cuMemcpyHtoDAsync_v2": cb(func(dst, src, n, s uintptr) uintptr {
				f().onStream("cuMemcpyHtoDAsync", s)
				if r := f().illegalWhileCapturing("cuMemcpyHtoDAsync", s, false); r != 0 {
					return r
				}
				return f().uses("cuMemcpyHtoDAsync", uint64(dst))
			}),
			"cuMemcpyDtoHAsync_v2": cb(func(dst, src, n, s uintptr) uintptr {
				f().onStream("cuMemcpyDtoHAsync", s)
				if r := f().illegalWhileCapturing("cuMemcpyDtoHAsync", s, false); r != 0 {
					return r
				}
				return f().uses("cuMemcpyDtoHAsync", uint64(src))
			}),
			"cuMemAllocHost_v2": cb(func(pp, n uintptr) uintptr {
				g := f()
				b := make([]byte, n)
				g.mu.Lock()
				g.host = append(g.host, b)
				g.mu.Unlock()
				fakeWrite(pp, uint64(uintptr(unsafe.Pointer(&b[0]))))
				return 0
			}),
			"cuMemFreeHost": cb(func(p uintptr) uintptr { return 0 }),
			"cuDeviceGetName": cb(func(buf, n, dev uintptr) uintptr {
				if n >= 5 {
					copy(unsafe.Slice((*byte)(fakeAddr(buf)), 5), "fake\x00")
				}
				return 0
			}),
			"cuDevicePrimaryCtxRelease_v2": cb(func(dev uintptr) uintptr { return 0 }),
			"cuEventCreate":                cb(func(pe, flags uintptr) uintptr { fakeWrite(pe, 1); return 0 }),
			"cuEventRecord": cb(func(e, s uintptr) uintptr {
				f().onStream("cuEventRecord", s)
				_, r := f().captured("cuEventRecord", "", s)
				return r
			}),
			"cuEventSynchronize": cb(func(e uintptr) uintptr { return 0 }),
			"cuEventQuery":       cb(func(e uintptr) uintptr { return 0 }),
			"cuEventDestroy_v2":  cb(func(e uintptr) uintptr { return 0 }),
			"cuModuleLoadDataEx": cb(func(pm, image, n, opts, vals uintptr) uintptr {
				f().onThread("cuModuleLoadDataEx")
				fakeWrite(pm, 1)
				return 0
			}),
			"cuModuleUnload":     cb(func(m uintptr) uintptr { return 0 }),
			"cuFuncSetAttribute": cb(func(fn, attr, v uintptr) uintptr { return 0 }),
			"cuModuleGetFunction": cb(func(pf, m, name uintptr) uintptr {
				g := f()
				k := goString(name)
				if g.o.Pointers == nil {
					return uintptr(ErrNotFound)
				}
				if _, ok := g.o.Pointers(k); !ok {
					return uintptr(ErrNotFound)
				}
				g.mu.Lock()
				defer g.mu.Unlock()
				h := uintptr(len(g.funcs) + 1)
				g.funcs[h] = k
				fakeWrite(pf, uint64(h))
				return 0
			}),
			"cuLaunchKernel": cb(func(fn, gx, gy, gz, bx, by, bz, shared, s, params, extra uintptr) uintptr {
				g := f()
				if d := g.o.LaunchDelay; d > 0 {
					for t := time.Now(); time.Since(t) < d; {
					}
				}
				g.launches.Add(1)
				g.onStream("cuLaunchKernel", s)
				if r := g.failLaunch.Load(); r != 0 {
					return uintptr(r)
				}
				g.mu.Lock()
				k := g.funcs[fn]
				g.mu.Unlock()
				ptrs, _ := g.o.Pointers(k)
				var used []uint64
				for i, isPtr := range ptrs {
					if isPtr {
						slot := *(*uintptr)(unsafe.Add(fakeAddr(params), i*int(unsafe.Sizeof(uintptr(0)))))
						used = append(used, *(*uint64)(fakeAddr(slot)))
					}
				}
				if ok, r := g.captured("cuLaunchKernel("+k+")", k, s, used...); ok {
					return r // recorded, not run: counted in launched when a replay runs it
				}
				g.mu.Lock()
				g.launched[k]++
				g.mu.Unlock()
				return g.uses("cuLaunchKernel("+k+")", used...)
			}),
		}
		addFakeGraphSymbols(fakeSyms, f)
	})
	return fakeSyms
}
