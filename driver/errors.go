package driver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Sentinel errors that are not CUDA result codes.
var (
	// ErrNoLibrary reports that libcuda or libcufft could not be opened. Loader
	// errors wrap it together with the dynamic loader's message for every path
	// that was tried. Builds without the loader (see Enabled) return an error
	// that also wraps it.
	ErrNoLibrary = errors.New("driver: library not found")

	// ErrMissingSymbol reports that a library was opened but lacks a function
	// this package needs (a driver or cuFFT that is too old). The loader error
	// wraps it and names the symbol.
	ErrMissingSymbol = errors.New("driver: missing symbol")

	// ErrDriverTooOld reports that libcuda loaded and initialised but its
	// version is below MinDriverVersion.
	ErrDriverTooOld = errors.New("driver: CUDA driver too old")

	// ErrDeviceLost matches (errors.Is) every sticky CUDA result: after one of
	// these the driver refuses all further work in the process, so this package
	// refuses it too (see CUDA.Lost). The sticky results are
	// ErrIllegalAddress (700), ErrLaunchTimeout (702), ErrAssert (710),
	// ErrHardwareStackError (714), ErrIllegalInstruction (715),
	// ErrMisalignedAddress (716), ErrInvalidAddressSpace (717), ErrInvalidPC
	// (718), ErrLaunchFailed (719) and ErrExternalDevice (911).
	// ErrUnknown (999) is deliberately not sticky: the driver also returns it
	// for failures that leave the context usable.
	ErrDeviceLost = errors.New("driver: device lost")

	// ErrReleased is returned by Context.Lock after Context.Release.
	ErrReleased = errors.New("driver: context released")
)

// Result is a CUresult. The zero value is success; every other value is an
// error whose text is "NAME: description", taken from cuGetErrorName and
// cuGetErrorString once any libcuda has been loaded in the process, and from
// a built-in table of the common codes otherwise.
//
// Results compare with == and errors.Is against the constants below, and
// errors.Is(r, ErrDeviceLost) is true for the sticky codes.
type Result int32

// CUDA result codes that callers branch on. The values are the driver API's.
const (
	Success                  Result = 0
	ErrInvalidValue          Result = 1
	ErrOutOfMemory           Result = 2
	ErrNotInitialized        Result = 3
	ErrDeinitialized         Result = 4
	ErrStubLibrary           Result = 34
	ErrDeviceUnavailable     Result = 46
	ErrNoDevice              Result = 100
	ErrInvalidDevice         Result = 101
	ErrInvalidImage          Result = 200
	ErrInvalidContext        Result = 201
	ErrNoBinaryForGPU        Result = 209
	ErrECCUncorrectable      Result = 214
	ErrInvalidPTX            Result = 218
	ErrJITCompilerNotFound   Result = 221
	ErrUnsupportedPTXVersion Result = 222
	ErrInvalidHandle         Result = 400
	ErrNotFound              Result = 500
	ErrNotReady              Result = 600
	ErrIllegalAddress        Result = 700
	ErrLaunchOutOfResources  Result = 701
	ErrLaunchTimeout         Result = 702
	ErrContextIsDestroyed    Result = 709
	ErrAssert                Result = 710
	ErrHardwareStackError    Result = 714
	ErrIllegalInstruction    Result = 715
	ErrMisalignedAddress     Result = 716
	ErrInvalidAddressSpace   Result = 717
	ErrInvalidPC             Result = 718
	ErrLaunchFailed          Result = 719
	ErrNotPermitted          Result = 800
	ErrNotSupported          Result = 801
	ErrSystemNotReady        Result = 802
	ErrSystemDriverMismatch  Result = 803
	ErrCompatNotSupported    Result = 804
	ErrExternalDevice        Result = 911
	ErrUnknown               Result = 999
)

// resultText is the fallback used while no libcuda is loaded. The names are
// the driver API's identifiers; the descriptions are short paraphrases.
var resultText = map[Result][2]string{
	Success:                  {"CUDA_SUCCESS", "no error"},
	ErrInvalidValue:          {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	ErrOutOfMemory:           {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	ErrNotInitialized:        {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	ErrDeinitialized:         {"CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
	ErrStubLibrary:           {"CUDA_ERROR_STUB_LIBRARY", "the loaded libcuda is a stub, not the real driver"},
	ErrDeviceUnavailable:     {"CUDA_ERROR_DEVICE_UNAVAILABLE", "device busy or unavailable"},
	ErrNoDevice:              {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	ErrInvalidDevice:         {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	ErrInvalidImage:          {"CUDA_ERROR_INVALID_IMAGE", "invalid module image"},
	ErrInvalidContext:        {"CUDA_ERROR_INVALID_CONTEXT", "invalid or missing context"},
	ErrNoBinaryForGPU:        {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image for this device"},
	ErrECCUncorrectable:      {"CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error"},
	ErrInvalidPTX:            {"CUDA_ERROR_INVALID_PTX", "PTX JIT compilation failed"},
	ErrJITCompilerNotFound:   {"CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
	ErrUnsupportedPTXVersion: {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "PTX version not supported by this driver"},
	ErrInvalidHandle:         {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	ErrNotFound:              {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	ErrNotReady:              {"CUDA_ERROR_NOT_READY", "work not yet complete"},
	ErrIllegalAddress:        {"CUDA_ERROR_ILLEGAL_ADDRESS", "illegal memory access"},
	ErrLaunchOutOfResources:  {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	ErrLaunchTimeout:         {"CUDA_ERROR_LAUNCH_TIMEOUT", "kernel launch timed out"},
	ErrContextIsDestroyed:    {"CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
	ErrAssert:                {"CUDA_ERROR_ASSERT", "device-side assert triggered"},
	ErrHardwareStackError:    {"CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
	ErrIllegalInstruction:    {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "illegal instruction"},
	ErrMisalignedAddress:     {"CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
	ErrInvalidAddressSpace:   {"CUDA_ERROR_INVALID_ADDRESS_SPACE", "invalid address space"},
	ErrInvalidPC:             {"CUDA_ERROR_INVALID_PC", "invalid program counter"},
	ErrLaunchFailed:          {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	ErrNotPermitted:          {"CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
	ErrNotSupported:          {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	ErrSystemNotReady:        {"CUDA_ERROR_SYSTEM_NOT_READY", "system not ready"},
	ErrSystemDriverMismatch:  {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "driver and kernel module versions differ"},
	ErrCompatNotSupported:    {"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility not supported on this device"},
	ErrExternalDevice:        {"CUDA_ERROR_EXTERNAL_DEVICE", "error on an external device"},
	ErrUnknown:               {"CUDA_ERROR_UNKNOWN", "unknown error"},
}

// errorFuncs holds cuGetErrorName and cuGetErrorString of the first libcuda
// loaded in the process; libcuda is never unloaded, so they stay valid.
type errorFuncs struct{ name, str uintptr }

var libErrorFuncs atomic.Pointer[errorFuncs]

// Error returns "NAME: description".
func (r Result) Error() string {
	name, desc := r.text()
	return name + ": " + desc
}

// Name returns the identifier of the code, e.g. "CUDA_ERROR_OUT_OF_MEMORY".
func (r Result) Name() string {
	name, _ := r.text()
	return name
}

func (r Result) text() (name, desc string) {
	if f := libErrorFuncs.Load(); f != nil {
		var n, s uintptr
		if int32(sysCall(f.name, uintptr(r), uintptr(unsafe.Pointer(&n)))) == 0 &&
			int32(sysCall(f.str, uintptr(r), uintptr(unsafe.Pointer(&s)))) == 0 && n != 0 && s != 0 {
			return goString(n), goString(s)
		}
	}
	return r.staticText()
}

// staticText is text without asking the library.
func (r Result) staticText() (name, desc string) {
	if t, ok := resultText[r]; ok {
		return t[0], t[1]
	}
	return "CUDA_ERROR_" + strconv.Itoa(int(r)), "unrecognised CUDA result"
}

// Sticky reports whether r leaves the process's CUDA state unusable.
func (r Result) Sticky() bool {
	switch r {
	case ErrIllegalAddress, ErrLaunchTimeout, ErrAssert, ErrHardwareStackError,
		ErrIllegalInstruction, ErrMisalignedAddress, ErrInvalidAddressSpace,
		ErrInvalidPC, ErrLaunchFailed, ErrExternalDevice:
		return true
	}
	return false
}

// Is makes errors.Is(r, ErrDeviceLost) true for sticky results.
func (r Result) Is(target error) bool {
	return target == ErrDeviceLost && r.Sticky()
}

// IsDeviceLost reports whether err (or anything it wraps) is a sticky CUDA
// result, including the errors returned for calls refused after one.
func IsDeviceLost(err error) bool { return errors.Is(err, ErrDeviceLost) }

// FFTResult is a cufftResult. The zero value is success; other values are
// errors whose text is "NAME: description" from a built-in table.
type FFTResult int32

// cuFFT result codes.
const (
	FFTSuccess                 FFTResult = 0
	FFTInvalidPlan             FFTResult = 1
	FFTAllocFailed             FFTResult = 2
	FFTInvalidType             FFTResult = 3
	FFTInvalidValue            FFTResult = 4
	FFTInternalError           FFTResult = 5
	FFTExecFailed              FFTResult = 6
	FFTSetupFailed             FFTResult = 7
	FFTInvalidSize             FFTResult = 8
	FFTUnalignedData           FFTResult = 9
	FFTIncompleteParameterList FFTResult = 10 // cuFFT < 12 (CUDA 12 and older)
	FFTInvalidDevice           FFTResult = 11
	FFTParseError              FFTResult = 12 // cuFFT < 12
	FFTNoWorkspace             FFTResult = 13
	FFTNotImplemented          FFTResult = 14
	FFTLicenseError            FFTResult = 15 // cuFFT < 12
	FFTNotSupported            FFTResult = 16
	FFTMissingDependency       FFTResult = 17 // cuFFT 12 (CUDA 13) and newer
	FFTNVRTCFailure            FFTResult = 18
	FFTNVJitLinkFailure        FFTResult = 19
	FFTNVSHMEMFailure          FFTResult = 20
)

var fftText = map[FFTResult][2]string{
	FFTSuccess:                 {"CUFFT_SUCCESS", "no error"},
	FFTInvalidPlan:             {"CUFFT_INVALID_PLAN", "invalid plan handle"},
	FFTAllocFailed:             {"CUFFT_ALLOC_FAILED", "memory allocation failed"},
	FFTInvalidType:             {"CUFFT_INVALID_TYPE", "invalid transform type"},
	FFTInvalidValue:            {"CUFFT_INVALID_VALUE", "invalid pointer or parameter"},
	FFTInternalError:           {"CUFFT_INTERNAL_ERROR", "internal cuFFT or driver error"},
	FFTExecFailed:              {"CUFFT_EXEC_FAILED", "transform execution failed on the GPU"},
	FFTSetupFailed:             {"CUFFT_SETUP_FAILED", "cuFFT initialisation failed"},
	FFTInvalidSize:             {"CUFFT_INVALID_SIZE", "invalid transform size"},
	FFTUnalignedData:           {"CUFFT_UNALIGNED_DATA", "unaligned data"},
	FFTIncompleteParameterList: {"CUFFT_INCOMPLETE_PARAMETER_LIST", "missing parameters"},
	FFTInvalidDevice:           {"CUFFT_INVALID_DEVICE", "plan used on a different device than it was made on"},
	FFTParseError:              {"CUFFT_PARSE_ERROR", "plan parse error"},
	FFTNoWorkspace:             {"CUFFT_NO_WORKSPACE", "no workspace provided"},
	FFTNotImplemented:          {"CUFFT_NOT_IMPLEMENTED", "not implemented"},
	FFTLicenseError:            {"CUFFT_LICENSE_ERROR", "license error"},
	FFTNotSupported:            {"CUFFT_NOT_SUPPORTED", "operation not supported for these parameters"},
	FFTMissingDependency:       {"CUFFT_MISSING_DEPENDENCY", "a library cuFFT needs is missing"},
	FFTNVRTCFailure:            {"CUFFT_NVRTC_FAILURE", "NVRTC failure inside cuFFT"},
	FFTNVJitLinkFailure:        {"CUFFT_NVJITLINK_FAILURE", "nvJitLink failure inside cuFFT"},
	FFTNVSHMEMFailure:          {"CUFFT_NVSHMEM_FAILURE", "NVSHMEM failure inside cuFFT"},
}

// Error returns "NAME: description".
func (r FFTResult) Error() string {
	if t, ok := fftText[r]; ok {
		return t[0] + ": " + t[1]
	}
	return "CUFFT_" + strconv.Itoa(int(r)) + ": unrecognised cuFFT result"
}

// Error is the error returned by every call into a library: the C function
// that failed and its result. errors.Is and errors.As see the Result or
// FFTResult through Unwrap, so errors.Is(err, ErrOutOfMemory) and
// IsDeviceLost(err) work on it.
type Error struct {
	Call    string // the C symbol, e.g. "cuMemAlloc_v2"
	Err     error  // a Result or an FFTResult
	Refused bool   // the call was not issued because the device was lost earlier
	Detail  string // extra text, e.g. the PTX JIT error log
}

// Error formats as "driver: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory".
func (e *Error) Error() string {
	s := "driver: " + e.Call + ": "
	if e.Refused {
		s += "not issued, device lost earlier: "
	}
	if e.Err != nil {
		s += e.Err.Error()
	} else {
		s += "error"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the Result or FFTResult.
func (e *Error) Unwrap() error { return e.Err }

// noLibrary wraps ErrNoLibrary with the loader messages of every try.
func noLibrary(lib string, tries []string) error {
	return fmt.Errorf("%w: %s: %s", ErrNoLibrary, lib, strings.Join(tries, "; "))
}
