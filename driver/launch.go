package driver

import (
	"math"
	"runtime"
	"strconv"
	"unsafe"
)

// MaxArgs is the number of kernel arguments an Args holds.
const MaxArgs = 24

// Args is a reusable pack of kernel arguments for Launch: MaxArgs slots of
// 8 bytes and the array of pointers to them that cuLaunchKernel reads as
// kernelParams. Each value is stored in its own slot in its C size (4 bytes
// for U32, I32 and F32, 8 bytes for Ptr, U64 and I64), matching the kernel's
// .param list in order.
//
// An Args that is ever passed to Launch lives on the heap (the compiler sees
// its address handed to C), so the slot addresses given to the driver stay
// valid; Launch rebuilds the pointer array each time, so copying an Args
// value is harmless. An Args must not be used by two goroutines at once.
// Adding more than MaxArgs values makes the next Launch fail.
type Args struct {
	n        int
	overflow bool
	slots    [MaxArgs]uint64
	ptrs     [MaxArgs]uintptr // kernelParams: ptrs[i] = &slots[i], set by Launch
	call     [11]uintptr      // cuLaunchKernel's argument block, set by Launch
}

// Values returns the values added since the last Reset, one 8-byte slot each as Launch passes
// them (a 4-byte value in the low half of a zeroed slot); at most MaxArgs of them.
func (a *Args) Values() []uint64 { return a.slots[:min(a.n, MaxArgs)] }

// SetValues makes the pack hold vals, slots as Values returns them, and nothing else; more
// than MaxArgs values make the next Launch fail.
func (a *Args) SetValues(vals []uint64) *Args {
	a.Reset()
	for _, v := range vals {
		a.U64(v)
	}
	return a
}

// Reset empties the pack.
func (a *Args) Reset() *Args {
	a.n = 0
	a.overflow = false
	return a
}

// Len returns the number of values added since the last Reset.
func (a *Args) Len() int { return a.n }

func (a *Args) next() *uint64 {
	if a.n >= MaxArgs {
		a.overflow = true
		return nil
	}
	p := &a.slots[a.n]
	*p = 0
	a.n++
	return p
}

// Ptr adds a device pointer.
func (a *Args) Ptr(p DevicePtr) *Args { return a.U64(uint64(p)) }

// U64 adds a 64-bit unsigned integer.
func (a *Args) U64(v uint64) *Args {
	if p := a.next(); p != nil {
		*p = v
	}
	return a
}

// I64 adds a 64-bit signed integer.
func (a *Args) I64(v int64) *Args { return a.U64(uint64(v)) }

// U32 adds a 32-bit unsigned integer.
func (a *Args) U32(v uint32) *Args {
	if p := a.next(); p != nil {
		*(*uint32)(unsafe.Pointer(p)) = v
	}
	return a
}

// I32 adds a 32-bit signed integer.
func (a *Args) I32(v int32) *Args { return a.U32(uint32(v)) }

// F32 adds a float32.
func (a *Args) F32(v float32) *Args { return a.U32(math.Float32bits(v)) }

// Launch queues f on s (cuLaunchKernel) with the given grid and block
// dimensions (in blocks and threads; zero components are the driver's
// error), sharedBytes of dynamic shared memory, and args as the kernel's
// parameters (nil for none). It does not allocate unless args is nil; it
// goes through purego.SyscallN with an argument block held in args.
// Requires Lock. Launch errors that only show up when the kernel runs
// (illegal address, ...) are reported by a later call, typically
// Synchronize or a copy.
func (x *Context) Launch(f Function, grid, block [3]uint32, sharedBytes uint32, s Stream, args *Args) error {
	if x.c.lost.Load() != 0 {
		return x.c.refused("cuLaunchKernel")
	}
	if args == nil {
		args = new(Args)
	}
	if args.overflow {
		return &Error{Call: "cuLaunchKernel", Err: ErrInvalidValue,
			Detail: "kernel " + f.name + ": more than " + strconv.Itoa(MaxArgs) + " arguments"}
	}
	for i := 0; i < args.n; i++ {
		args.ptrs[i] = uintptr(unsafe.Pointer(&args.slots[i]))
	}
	c := &args.call
	c[0] = f.h
	c[1], c[2], c[3] = uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2])
	c[4], c[5], c[6] = uintptr(block[0]), uintptr(block[1]), uintptr(block[2])
	c[7] = uintptr(sharedBytes)
	c[8] = uintptr(s)
	c[9] = uintptr(unsafe.Pointer(&args.ptrs[0]))
	c[10] = 0 // extra
	r := sysCallSlice(x.c.fn.launchKernel, c[:])
	runtime.KeepAlive(args)
	if r != 0 {
		err := x.c.check("cuLaunchKernel", Result(int32(r)))
		if e, ok := err.(*Error); ok {
			e.Detail = "kernel " + f.name
		}
		return err
	}
	return nil
}
