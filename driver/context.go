package driver

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Context is a retained primary context of one device, from CUDA.PrimaryContext
// (the zero Context is not usable: its methods panic). It is safe for
// concurrent use by many goroutines, each bracketing its calls with Lock and
// Unlock.
//
// Every method except Lock, Unlock, Release, Lost and Device requires the
// calling goroutine to hold Lock: the driver reads the context current on the
// calling OS thread, and a goroutine that has not locked its thread may be
// moved to another thread (with another or no current context) between two
// calls.
//
// After a sticky error (see ErrDeviceLost) on any call of the CUDA this
// context came from, Lock and every method return an *Error with Refused set
// that wraps the first sticky Result, without calling the driver.
type Context struct {
	c        *CUDA
	dev      Device
	h        uintptr
	setArgs  []uintptr // {h}: the read-only argument block of cuCtxSetCurrent
	released atomic.Bool
}

// Device returns the context's device.
func (x *Context) Device() Device { return x.dev }

// CUDA returns the library the context came from.
func (x *Context) CUDA() *CUDA { return x.c }

// Lost is x.CUDA().Lost().
func (x *Context) Lost() error { return x.c.Lost() }

// Lock wires the calling goroutine to its OS thread (runtime.LockOSThread)
// and makes x current on that thread (cuCtxSetCurrent). It costs a fraction
// of a microsecond and does not allocate. Calls on one context nest like
// runtime.LockOSThread (Lock of another context inside leaves that one current
// after its Unlock). On error the thread is not locked and Unlock must not be
// called:
//
//	if err := x.Lock(); err != nil {
//		return err
//	}
//	defer x.Unlock()
func (x *Context) Lock() error {
	if x.released.Load() {
		return ErrReleased
	}
	if x.c.lost.Load() != 0 {
		return x.c.refused("cuCtxSetCurrent")
	}
	runtime.LockOSThread()
	// CUresult is 32 bits: the upper half of the return register is not defined.
	if r := Result(int32(sysCallSlice(x.c.fn.ctxSetCurrent, x.setArgs))); r != Success {
		runtime.UnlockOSThread()
		return x.c.check("cuCtxSetCurrent", r)
	}
	return nil
}

// Unlock undoes one successful Lock (runtime.UnlockOSThread). The context
// stays current on the thread: the previous current context is not restored.
// That is harmless within this module, whose every driver call sits between a
// Lock and its Unlock, but code that calls the CUDA driver itself on the same
// OS thread must make its own context current again.
func (x *Context) Unlock() { runtime.UnlockOSThread() }

// Release releases the primary context (cuDevicePrimaryCtxRelease_v2). Only
// the first call does anything; later ones return nil. Device memory,
// modules, streams and events of the context must not be used afterwards.
// It needs no Lock.
func (x *Context) Release() error {
	if !x.released.CompareAndSwap(false, true) {
		return nil
	}
	if x.c.lost.Load() != 0 {
		return x.c.refused("cuDevicePrimaryCtxRelease_v2")
	}
	return x.c.callScalar("cuDevicePrimaryCtxRelease_v2", x.c.fn.primaryCtxRelease, uintptr(x.dev.h))
}

// call is CUDA.call refused when the device is lost.
//
//go:uintptrescapes
//go:noinline
func (x *Context) call(name string, fn uintptr, args ...uintptr) error {
	if x.c.lost.Load() != 0 {
		return x.c.refused(name)
	}
	return x.c.check(name, Result(int32(sysCall(fn, args...))))
}

// callScalar is CUDA.callScalar refused when the device is lost; it does not
// allocate on success.
func (x *Context) callScalar(name string, fn uintptr, args ...uintptr) error {
	if x.c.lost.Load() != 0 {
		return x.c.refused(name)
	}
	return x.c.callScalar(name, fn, args...)
}

// MemAlloc allocates bytes of device memory (cuMemAlloc_v2), aligned to at
// least 256 bytes. MemAlloc(0) returns (0, nil) without calling the driver.
// Requires Lock.
func (x *Context) MemAlloc(bytes uint64) (DevicePtr, error) {
	if bytes == 0 {
		return 0, nil
	}
	var p DevicePtr
	if err := x.call("cuMemAlloc_v2", x.c.fn.memAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes)); err != nil {
		return 0, err
	}
	return p, nil
}

// MemFree frees memory from MemAlloc (cuMemFree_v2). MemFree(0) does
// nothing. Requires Lock.
func (x *Context) MemFree(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	return x.callScalar("cuMemFree_v2", x.c.fn.memFree, uintptr(p))
}

// MemGetInfo returns the free and total device memory in bytes
// (cuMemGetInfo_v2). Requires Lock.
func (x *Context) MemGetInfo() (free, total uint64, err error) {
	m := new([2]uint64)
	if err := x.call("cuMemGetInfo_v2", x.c.fn.memGetInfo,
		uintptr(unsafe.Pointer(&m[0])), uintptr(unsafe.Pointer(&m[1]))); err != nil {
		return 0, 0, err
	}
	return m[0], m[1], nil
}

// CopyHtoD copies len(src) float32 values from host memory to dst
// (cuMemcpyHtoD_v2, ordered on the legacy default stream: not with the work of
// a non-blocking stream; see CopyHtoDAsync). It returns when src may be
// reused. An empty src does nothing. Requires Lock.
func (x *Context) CopyHtoD(dst DevicePtr, src []float32) error {
	if len(src) == 0 {
		return nil
	}
	err := x.call("cuMemcpyHtoD_v2", x.c.fn.memcpyHtoD,
		uintptr(dst), uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src))*4)
	runtime.KeepAlive(src)
	return err
}

// CopyDtoH copies len(dst) float32 values from src to host memory
// (cuMemcpyDtoH_v2), after the work already queued on the legacy default
// stream (not after that of a non-blocking stream: see CopyDtoHAsync). An
// empty dst does nothing. Requires Lock.
func (x *Context) CopyDtoH(dst []float32, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	err := x.call("cuMemcpyDtoH_v2", x.c.fn.memcpyDtoH,
		uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(src), uintptr(len(dst))*4)
	runtime.KeepAlive(dst)
	return err
}

// CopyHtoDBytes is CopyHtoD for raw bytes.
func (x *Context) CopyHtoDBytes(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	err := x.call("cuMemcpyHtoD_v2", x.c.fn.memcpyHtoD,
		uintptr(dst), uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src)))
	runtime.KeepAlive(src)
	return err
}

// CopyHtoDU32 is CopyHtoD for uint32 values (index arrays).
func (x *Context) CopyHtoDU32(dst DevicePtr, src []uint32) error {
	if len(src) == 0 {
		return nil
	}
	err := x.call("cuMemcpyHtoD_v2", x.c.fn.memcpyHtoD,
		uintptr(dst), uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src))*4)
	runtime.KeepAlive(src)
	return err
}

// CopyDtoHBytes is CopyDtoH for raw bytes.
func (x *Context) CopyDtoHBytes(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	err := x.call("cuMemcpyDtoH_v2", x.c.fn.memcpyDtoH,
		uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(src), uintptr(len(dst)))
	runtime.KeepAlive(dst)
	return err
}

// CopyHtoDAsync copies len(src) float32 values from pageable host memory to
// dst in stream order on s (cuMemcpyHtoDAsync_v2): the copy comes after the
// work queued on s before it and before the work queued after it. From
// pageable memory the driver first waits for s, then stages src and returns
// once src may be reused (the DMA to dst may still be running). An empty src
// does nothing. Requires Lock.
func (x *Context) CopyHtoDAsync(dst DevicePtr, src []float32, s Stream) error {
	return x.copyHtoDAsync(dst, unsafe.Pointer(unsafe.SliceData(src)), 4*len(src), s)
}

// CopyHtoDAsyncU32 is CopyHtoDAsync for uint32 values (index arrays).
func (x *Context) CopyHtoDAsyncU32(dst DevicePtr, src []uint32, s Stream) error {
	return x.copyHtoDAsync(dst, unsafe.Pointer(unsafe.SliceData(src)), 4*len(src), s)
}

// CopyHtoDAsyncBytes is CopyHtoDAsync for raw bytes.
func (x *Context) CopyHtoDAsyncBytes(dst DevicePtr, src []byte, s Stream) error {
	return x.copyHtoDAsync(dst, unsafe.Pointer(unsafe.SliceData(src)), len(src), s)
}

func (x *Context) copyHtoDAsync(dst DevicePtr, src unsafe.Pointer, n int, s Stream) error {
	if n == 0 {
		return nil
	}
	err := x.call("cuMemcpyHtoDAsync_v2", x.c.fn.memcpyHtoDAsync, uintptr(dst), uintptr(src), uintptr(n), uintptr(s))
	runtime.KeepAlive(src)
	return err
}

// CopyDtoHAsync copies len(dst) float32 values from src to pageable host
// memory in stream order on s (cuMemcpyDtoHAsync_v2): after the work queued on
// s before it. To pageable memory the call returns only once the copy has
// completed, so dst holds the values on return. An empty dst does nothing.
// Requires Lock.
func (x *Context) CopyDtoHAsync(dst []float32, src DevicePtr, s Stream) error {
	if len(dst) == 0 {
		return nil
	}
	err := x.call("cuMemcpyDtoHAsync_v2", x.c.fn.memcpyDtoHAsync,
		uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(src), uintptr(len(dst))*4, uintptr(s))
	runtime.KeepAlive(dst)
	return err
}

// CopyDtoDAsync queues a copy of bytes from src to dst on s
// (cuMemcpyDtoDAsync_v2). Zero bytes does nothing. It does not allocate.
// Requires Lock.
func (x *Context) CopyDtoDAsync(dst, src DevicePtr, bytes uint64, s Stream) error {
	if bytes == 0 {
		return nil
	}
	return x.callScalar("cuMemcpyDtoDAsync_v2", x.c.fn.memcpyDtoDAsync,
		uintptr(dst), uintptr(src), uintptr(bytes), uintptr(s))
}

// MemsetD32Async queues setting count 32-bit words at dst to value on s
// (cuMemsetD32Async; value 0 zeroes float32 data, math.Float32bits(v) fills
// with v). A zero count does nothing. It does not allocate. Requires Lock.
func (x *Context) MemsetD32Async(dst DevicePtr, value uint32, count uint64, s Stream) error {
	if count == 0 {
		return nil
	}
	return x.callScalar("cuMemsetD32Async", x.c.fn.memsetD32Async,
		uintptr(dst), uintptr(value), uintptr(count), uintptr(s))
}

// Synchronize waits for all work of the context (cuCtxSynchronize). Errors
// of earlier asynchronous work, sticky ones included, surface here.
// Requires Lock.
func (x *Context) Synchronize() error {
	return x.callScalar("cuCtxSynchronize", x.c.fn.ctxSynchronize)
}

// Stream is a CUstream. The zero Stream is the legacy default stream, which
// orders work against all blocking streams of the context.
type Stream uintptr

// NewStream creates a stream (cuStreamCreate). A non-blocking stream does
// not synchronise with the legacy default stream. Requires Lock.
func (x *Context) NewStream(nonBlocking bool) (Stream, error) {
	var flags uintptr
	if nonBlocking {
		flags = 1 // CU_STREAM_NON_BLOCKING
	}
	var s Stream
	if err := x.call("cuStreamCreate", x.c.fn.streamCreate, uintptr(unsafe.Pointer(&s)), flags); err != nil {
		return 0, err
	}
	return s, nil
}

// StreamSynchronize waits for the work queued on s (cuStreamSynchronize).
// Requires Lock.
func (x *Context) StreamSynchronize(s Stream) error {
	return x.callScalar("cuStreamSynchronize", x.c.fn.streamSynchronize, uintptr(s))
}

// DestroyStream destroys s once its queued work is done (cuStreamDestroy_v2).
// Destroying the zero Stream does nothing. Requires Lock.
func (x *Context) DestroyStream(s Stream) error {
	if s == 0 {
		return nil
	}
	return x.callScalar("cuStreamDestroy_v2", x.c.fn.streamDestroy, uintptr(s))
}

// Event is a CUevent.
type Event uintptr

// NewEvent creates an event (cuEventCreate). Only events created with
// timing true can be passed to ElapsedMs; events without timing are cheaper
// to record. Requires Lock.
func (x *Context) NewEvent(timing bool) (Event, error) {
	var flags uintptr
	if !timing {
		flags = 2 // CU_EVENT_DISABLE_TIMING
	}
	var e Event
	if err := x.call("cuEventCreate", x.c.fn.eventCreate, uintptr(unsafe.Pointer(&e)), flags); err != nil {
		return 0, err
	}
	return e, nil
}

// RecordEvent queues e on s (cuEventRecord). It does not allocate.
// Requires Lock.
func (x *Context) RecordEvent(e Event, s Stream) error {
	return x.callScalar("cuEventRecord", x.c.fn.eventRecord, uintptr(e), uintptr(s))
}

// SynchronizeEvent waits until e has completed (cuEventSynchronize).
// Requires Lock.
func (x *Context) SynchronizeEvent(e Event) error {
	return x.callScalar("cuEventSynchronize", x.c.fn.eventSynchronize, uintptr(e))
}

// QueryEvent reports whether the work before e has completed (cuEventQuery);
// ErrNotReady becomes (false, nil). Requires Lock.
func (x *Context) QueryEvent(e Event) (done bool, err error) {
	if x.c.lost.Load() != 0 {
		return false, x.c.refused("cuEventQuery")
	}
	b := argPool.Get().(*argBuf)
	b.a[0] = uintptr(e)
	r := Result(int32(sysCallSlice(x.c.fn.eventQuery, b.a[:1])))
	argPool.Put(b)
	switch r {
	case Success:
		return true, nil
	case ErrNotReady:
		return false, nil
	}
	return false, x.c.check("cuEventQuery", r)
}

// ElapsedMs returns the milliseconds between two completed timing events
// (cuEventElapsedTime; resolution about 0.5 us). Requires Lock.
func (x *Context) ElapsedMs(start, end Event) (float32, error) {
	var ms float32
	if err := x.call("cuEventElapsedTime", x.c.fn.eventElapsed,
		uintptr(unsafe.Pointer(&ms)), uintptr(start), uintptr(end)); err != nil {
		return 0, err
	}
	return ms, nil
}

// DestroyEvent destroys e (cuEventDestroy_v2). Requires Lock.
func (x *Context) DestroyEvent(e Event) error {
	return x.callScalar("cuEventDestroy_v2", x.c.fn.eventDestroy, uintptr(e))
}
