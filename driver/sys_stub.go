//go:build !linux || !(amd64 || arm64) || nocuda

package driver

// Enabled reports whether this build contains the libcuda/libcufft loader.
// It is true on linux/amd64 and linux/arm64 unless built with -tags nocuda;
// elsewhere every loader returns an error wrapping ErrNoLibrary.
const Enabled = false

// errUnsupported is returned by every loader of this build.
var errUnsupported error = &unsupportedError{msg: stubReason}

// unsupportedError is what every loader returns in builds without the loader.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }
func (e *unsupportedError) Unwrap() error { return ErrNoLibrary }

func openLibrary(path string) (uintptr, error) { return 0, errUnsupported }

func lookupSymbol(lib uintptr, name string) (uintptr, error) { return 0, errUnsupported }

// sysCall never calls anything in this build: no library can be loaded, so
// no function pointer exists.
//
//go:uintptrescapes
//go:noinline
func sysCall(fn uintptr, args ...uintptr) uintptr { return uintptr(ErrNotInitialized) }

func sysCallSlice(fn uintptr, args []uintptr) uintptr { return uintptr(ErrNotInitialized) }
