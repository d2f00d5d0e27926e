// Package driver binds the NVIDIA driver API (libcuda) and cuFFT (libcufft)
// without cgo: the libraries are opened at run time with purego's dlopen, and
// each C function is called through purego.SyscallN from one table of symbol
// addresses per library, filled by one loop over (name, field) pairs. A
// missing library or symbol is an error value, never a panic. It is the only
// package of the module that imports unsafe or purego.
//
// # Platforms
//
// The loader exists on linux/amd64 and linux/arm64 (Enabled is true). On every
// other platform, and with the build tag nocuda, the package compiles without
// purego and every loader returns an error wrapping ErrNoLibrary, so callers
// fall back to the CPU with the reason in hand. Load distinguishes the other
// fallback reasons: ErrNoLibrary (no libcuda), an *Error for cuInit's
// ErrNoDevice (driver installed, no GPU), and ErrDriverTooOld.
//
// # Threads and contexts
//
// A CUDA context is current per OS thread, and goroutines migrate between
// threads. Every path into the driver that needs a context therefore runs
// between Context.Lock, which locks the calling goroutine to its thread and
// makes the context current there (a fraction of a microsecond, no
// allocation), and Context.Unlock. The alternative, one goroutine locked to a
// thread that owns the context and receives every operation over a channel,
// costs tens of microseconds per round trip, far more than a kernel launch
// (BENCHMARKS.md, "Figures behind the code"), so it is not used.
// Any number of goroutines may use one Context concurrently this way; the
// driver API itself is thread safe.
//
// # Errors
//
// A failed call returns an *Error naming the C function, wrapping its Result
// (a CUresult) or FFTResult: "driver: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY:
// out of memory", with errors.Is(err, ErrOutOfMemory) true. Sticky results
// (illegal address, launch failure, ...; see ErrDeviceLost) leave the
// process's CUDA state unusable: the first one seen is recorded on the CUDA,
// IsDeviceLost reports it, and every later Context call returns an error
// wrapping it without calling the driver.
//
// # Memory passed to C
//
// Go memory handed to the driver (host slices of copies, out-parameters, the
// JIT logs, kernel arguments) is on the heap, which the Go collector never
// moves, and is kept alive until the call returns: either the pointer is
// converted to uintptr in the call expression of a go:uintptrescapes
// function (the rule syscall.Syscall follows), or, on the allocation-free
// paths (Lock, Launch and the calls without pointer arguments), the argument
// block itself lives in heap memory owned by the Context, the Args or a pool.
// No copy is asynchronous with respect to Go memory.
package driver
