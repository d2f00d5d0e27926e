//go:build linux && (amd64 || arm64) && !nocuda

package driver

import (
	"github.com/ebitengine/purego"
)

// Enabled reports whether this build contains the libcuda/libcufft loader.
// It is true on linux/amd64 and linux/arm64 unless built with -tags nocuda;
// elsewhere every loader returns an error wrapping ErrNoLibrary.
const Enabled = true

// errUnsupported is nil where the loader is built in.
var errUnsupported error

func openLibrary(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func lookupSymbol(lib uintptr, name string) (uintptr, error) {
	return purego.Dlsym(lib, name)
}

// sysCall calls the C function fn with integer-class arguments and returns
// its integer result (a CUresult or cufftResult in this package). Pointers
// converted to uintptr in the call expression are moved to the heap and kept
// alive for the call (go:uintptrescapes, as for syscall.Syscall); the
// variadic slice costs one allocation per call, so hot paths use
// sysCallSlice. A zero fn returns ErrNotInitialized instead of calling.
//
//go:uintptrescapes
//go:noinline
func sysCall(fn uintptr, args ...uintptr) uintptr {
	if fn == 0 {
		return uintptr(ErrNotInitialized)
	}
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// sysCallSlice is sysCall without allocation: args must live in heap memory
// (purego.SyscallN's argument slice escapes), and any Go memory that the
// arguments point to must be on the heap and kept alive by the caller
// (runtime.KeepAlive) until sysCallSlice returns.
func sysCallSlice(fn uintptr, args []uintptr) uintptr {
	if fn == 0 {
		return uintptr(ErrNotInitialized)
	}
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
