package driver

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// MinDriverVersion is the oldest driver Load accepts, as cuDriverGetVersion
// reports it (1000*major + 10*minor): CUDA 11.8, the first to load PTX ISA 7.8.
const MinDriverVersion = 11080

// DevicePtr is a CUdeviceptr: an address in device memory.
type DevicePtr uint64

// CUDA is one loaded libcuda, initialised with cuInit. It is safe for
// concurrent use. The library is never unloaded.
type CUDA struct {
	path string
	lib  uintptr
	fake bool // made by NewFake: no real library behind the entry points
	fn   cudaFuncs
	gfn  graphFuncs // optional: stream capture and graphs (graph.go)
	// lost holds the first sticky Result seen by any call, 0 while healthy.
	lost atomic.Int32
}

// cudaFuncs is the table of libcuda entry points, filled by one loop over
// cudaSymbols.
type cudaFuncs struct {
	init, driverGetVersion, getErrorName, getErrorString                               uintptr
	deviceGetCount, deviceGet, deviceGetName, deviceGetAttribute, deviceTotalMem       uintptr
	primaryCtxRetain, primaryCtxRelease, ctxSetCurrent, ctxSynchronize                 uintptr
	memAlloc, memFree, memGetInfo, memcpyHtoD, memcpyDtoH, memcpyDtoDAsync             uintptr
	memsetD32Async, memcpyHtoDAsync, memcpyDtoHAsync, memAllocHost, memFreeHost        uintptr
	moduleLoadDataEx, moduleGetFunction, moduleUnload                                  uintptr
	funcGetAttribute, funcSetAttribute, launchKernel                                   uintptr
	streamCreate, streamSynchronize, streamDestroy                                     uintptr
	eventCreate, eventRecord, eventSynchronize, eventQuery, eventElapsed, eventDestroy uintptr
}

func (f *cudaFuncs) symbols() []symbol {
	return []symbol{
		{"cuInit", &f.init},
		{"cuDriverGetVersion", &f.driverGetVersion},
		{"cuGetErrorName", &f.getErrorName},
		{"cuGetErrorString", &f.getErrorString},
		{"cuDeviceGetCount", &f.deviceGetCount},
		{"cuDeviceGet", &f.deviceGet},
		{"cuDeviceGetName", &f.deviceGetName},
		{"cuDeviceGetAttribute", &f.deviceGetAttribute},
		{"cuDeviceTotalMem_v2", &f.deviceTotalMem},
		{"cuDevicePrimaryCtxRetain", &f.primaryCtxRetain},
		{"cuDevicePrimaryCtxRelease_v2", &f.primaryCtxRelease},
		{"cuCtxSetCurrent", &f.ctxSetCurrent},
		{"cuCtxSynchronize", &f.ctxSynchronize},
		{"cuMemAlloc_v2", &f.memAlloc},
		{"cuMemFree_v2", &f.memFree},
		{"cuMemGetInfo_v2", &f.memGetInfo},
		{"cuMemcpyHtoD_v2", &f.memcpyHtoD},
		{"cuMemcpyDtoH_v2", &f.memcpyDtoH},
		{"cuMemcpyDtoDAsync_v2", &f.memcpyDtoDAsync},
		{"cuMemsetD32Async", &f.memsetD32Async},
		{"cuMemcpyHtoDAsync_v2", &f.memcpyHtoDAsync},
		{"cuMemcpyDtoHAsync_v2", &f.memcpyDtoHAsync},
		{"cuMemAllocHost_v2", &f.memAllocHost},
		{"cuMemFreeHost", &f.memFreeHost},
		{"cuModuleLoadDataEx", &f.moduleLoadDataEx},
		{"cuModuleGetFunction", &f.moduleGetFunction},
		{"cuModuleUnload", &f.moduleUnload},
		{"cuFuncGetAttribute", &f.funcGetAttribute},
		{"cuFuncSetAttribute", &f.funcSetAttribute},
		{"cuLaunchKernel", &f.launchKernel},
		{"cuStreamCreate", &f.streamCreate},
		{"cuStreamSynchronize", &f.streamSynchronize},
		{"cuStreamDestroy_v2", &f.streamDestroy},
		{"cuEventCreate", &f.eventCreate},
		{"cuEventRecord", &f.eventRecord},
		{"cuEventSynchronize", &f.eventSynchronize},
		{"cuEventQuery", &f.eventQuery},
		{"cuEventElapsedTime", &f.eventElapsed},
		{"cuEventDestroy_v2", &f.eventDestroy},
	}
}

// symbol pairs a C symbol name with the field that receives its address.
type symbol struct {
	name string
	addr *uintptr
}

// openFirst opens the first path that loads, or returns an error wrapping
// ErrNoLibrary that lists every loader message.
func openFirst(lib string, paths []string) (uintptr, string, error) {
	if errUnsupported != nil {
		return 0, "", errUnsupported
	}
	var tries []string
	for _, p := range paths {
		h, err := openLibrary(p)
		if err == nil {
			return h, p, nil
		}
		tries = append(tries, err.Error())
	}
	return 0, "", noLibrary(lib, tries)
}

// resolve fills every symbol or names the first missing one.
func resolve(lib uintptr, path string, syms []symbol) error {
	for _, s := range syms {
		p, err := lookupSymbol(lib, s.name)
		if err != nil || p == 0 {
			return fmt.Errorf("%w: %s in %s", ErrMissingSymbol, s.name, path)
		}
		*s.addr = p
	}
	return nil
}

// Load opens libcuda and initialises it. The path is $TORCHLEAN_LIBCUDA when
// set (and then only that path), else libcuda.so.1, then libcuda.so, through
// the system's library search. Errors: one wrapping ErrNoLibrary when no
// library opens (always, in builds where Enabled is false), one wrapping
// ErrMissingSymbol, an *Error for cuInit's Result (ErrNoDevice on a machine
// with the driver but no GPU), or one wrapping ErrDriverTooOld.
func Load() (*CUDA, error) {
	if p := os.Getenv("TORCHLEAN_LIBCUDA"); p != "" {
		return LoadFrom(p)
	}
	return load([]string{"libcuda.so.1", "libcuda.so"})
}

// LoadFrom is Load with an explicit library path (ignoring TORCHLEAN_LIBCUDA).
func LoadFrom(path string) (*CUDA, error) { return load([]string{path}) }

func load(paths []string) (*CUDA, error) {
	lib, path, err := openFirst("libcuda", paths)
	if err != nil {
		return nil, err
	}
	c := &CUDA{path: path, lib: lib}
	if err := resolve(lib, path, c.fn.symbols()); err != nil {
		// A driver older than CUDA 11 lacks some of them: say that it is too old.
		if p, lerr := lookupSymbol(lib, "cuDriverGetVersion"); lerr == nil && p != 0 {
			var v int32
			if int32(sysCall(p, uintptr(unsafe.Pointer(&v)))) == 0 && v > 0 && int(v) < MinDriverVersion {
				return nil, fmt.Errorf("%w: %s reports %s, need %s or newer (%w)", ErrDriverTooOld,
					path, versionString(int(v)), versionString(MinDriverVersion), err)
			}
		}
		return nil, err
	}
	c.gfn.resolveGraph(func(name string) uintptr {
		p, err := lookupSymbol(lib, name)
		if err != nil {
			return 0
		}
		return p
	})
	libErrorFuncs.CompareAndSwap(nil, &errorFuncs{name: c.fn.getErrorName, str: c.fn.getErrorString})
	if err := c.call("cuInit", c.fn.init, 0); err != nil {
		return nil, err
	}
	v, err := c.DriverVersion()
	if err != nil {
		return nil, err
	}
	if v < MinDriverVersion {
		return nil, fmt.Errorf("%w: %s reports %s, need %s or newer", ErrDriverTooOld,
			path, versionString(v), versionString(MinDriverVersion))
	}
	return c, nil
}

func versionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// Path returns the library path that was opened.
func (c *CUDA) Path() string { return c.path }

// Fake reports whether c is NewFake's stand-in: its device addresses are not real, so no real
// library (cuFFT, NCCL) may be handed them.
func (c *CUDA) Fake() bool { return c.fake }

// call issues one libcuda call and turns its Result into an *Error,
// recording sticky results. Pointer arguments converted in the call
// expression are kept on the heap and alive for the call (go:uintptrescapes).
//
//go:uintptrescapes
//go:noinline
func (c *CUDA) call(name string, fn uintptr, args ...uintptr) error {
	return c.check(name, Result(int32(sysCall(fn, args...))))
}

// argBuf is a pooled argument block for callScalar.
type argBuf struct{ a [12]uintptr }

var argPool = sync.Pool{New: func() any { return new(argBuf) }}

// callScalar is call for arguments that carry no Go pointer; it does not
// allocate.
func (c *CUDA) callScalar(name string, fn uintptr, args ...uintptr) error {
	b := argPool.Get().(*argBuf)
	n := copy(b.a[:], args)
	r := sysCallSlice(fn, b.a[:n])
	argPool.Put(b)
	if r == 0 {
		return nil
	}
	return c.check(name, Result(int32(r)))
}

// check converts r to an error and records a sticky r as the lost state.
func (c *CUDA) check(name string, r Result) error {
	if r == Success {
		return nil
	}
	if r.Sticky() {
		c.lost.CompareAndSwap(0, int32(r))
	}
	return &Error{Call: name, Err: r}
}

// Lost returns nil while the device is usable, and after a sticky result
// (see ErrDeviceLost) an error wrapping that result. From then on every
// Context call returns such an error without calling the driver: the driver
// refuses all work in the process after a sticky error, and a process must
// restart to use the GPU again.
func (c *CUDA) Lost() error {
	if c.lost.Load() == 0 {
		return nil
	}
	return c.refused("cuCtxSetCurrent")
}

func (c *CUDA) refused(name string) error {
	return &Error{Call: name, Err: Result(c.lost.Load()), Refused: true}
}

// DriverVersion returns the driver's CUDA version, 1000*major + 10*minor
// (12080 for 12.8).
func (c *CUDA) DriverVersion() (int, error) {
	var v int32
	if err := c.call("cuDriverGetVersion", c.fn.driverGetVersion, uintptr(unsafe.Pointer(&v))); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceCount returns the number of CUDA devices.
func (c *CUDA) DeviceCount() (int, error) {
	var n int32
	if err := c.call("cuDeviceGetCount", c.fn.deviceGetCount, uintptr(unsafe.Pointer(&n))); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device returns the device with the given ordinal (0 <= ordinal < DeviceCount).
func (c *CUDA) Device(ordinal int) (Device, error) {
	if ordinal < 0 || ordinal > 1<<30 {
		return Device{}, &Error{Call: "cuDeviceGet", Err: ErrInvalidDevice}
	}
	var d int32
	if err := c.call("cuDeviceGet", c.fn.deviceGet, uintptr(unsafe.Pointer(&d)), uintptr(ordinal)); err != nil {
		return Device{}, err
	}
	return Device{c: c, h: d, ordinal: ordinal}, nil
}

// Device is a CUdevice of one CUDA. Its queries need no context.
type Device struct {
	c       *CUDA
	h       int32
	ordinal int
}

// Ordinal returns the index the device was opened with.
func (d Device) Ordinal() int { return d.ordinal }

// usable returns the error of a call on the zero Device (one not from CUDA.Device).
func (d Device) usable(call string) error {
	if d.c == nil {
		return &Error{Call: call, Err: ErrNotInitialized, Detail: "the zero Device (get one from CUDA.Device)"}
	}
	return nil
}

// Name returns the device's product name.
func (d Device) Name() (string, error) {
	if err := d.usable("cuDeviceGetName"); err != nil {
		return "", err
	}
	buf := new([256]byte)
	if err := d.c.call("cuDeviceGetName", d.c.fn.deviceGetName,
		uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)-1), uintptr(d.h)); err != nil {
		return "", err
	}
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	return string(buf[:n]), nil
}

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int32

// Device attributes (values from the driver API).
const (
	AttrMaxThreadsPerBlock           DeviceAttribute = 1
	AttrMaxBlockDimX                 DeviceAttribute = 2
	AttrMaxGridDimX                  DeviceAttribute = 5
	AttrMaxSharedMemoryPerBlock      DeviceAttribute = 8
	AttrWarpSize                     DeviceAttribute = 10
	AttrMultiprocessorCount          DeviceAttribute = 16
	AttrL2CacheSize                  DeviceAttribute = 38
	AttrComputeCapabilityMajor       DeviceAttribute = 75
	AttrComputeCapabilityMinor       DeviceAttribute = 76
	AttrMaxSharedMemoryPerSM         DeviceAttribute = 81
	AttrMaxSharedMemoryPerBlockOptin DeviceAttribute = 97
)

// Attribute returns one cuDeviceGetAttribute value.
func (d Device) Attribute(a DeviceAttribute) (int, error) {
	if err := d.usable("cuDeviceGetAttribute"); err != nil {
		return 0, err
	}
	var v int32
	if err := d.c.call("cuDeviceGetAttribute", d.c.fn.deviceGetAttribute,
		uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(d.h)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// ComputeCapability returns the SM version, e.g. 9, 0 for an H100.
func (d Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	if minor, err = d.Attribute(AttrComputeCapabilityMinor); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// SMCount returns the number of streaming multiprocessors.
func (d Device) SMCount() (int, error) { return d.Attribute(AttrMultiprocessorCount) }

// TotalMem returns the device memory size in bytes.
func (d Device) TotalMem() (uint64, error) {
	if err := d.usable("cuDeviceTotalMem_v2"); err != nil {
		return 0, err
	}
	var n uint64
	if err := d.c.call("cuDeviceTotalMem_v2", d.c.fn.deviceTotalMem,
		uintptr(unsafe.Pointer(&n)), uintptr(d.h)); err != nil {
		return 0, err
	}
	return n, nil
}

// PrimaryContext retains the device's primary context (cuDevicePrimaryCtxRetain).
// The primary context is the one the CUDA runtime, and so cuFFT, uses too.
// Call Release once when done.
func (c *CUDA) PrimaryContext(d Device) (*Context, error) {
	if d.c != c {
		return nil, &Error{Call: "cuDevicePrimaryCtxRetain", Err: ErrInvalidDevice,
			Detail: "device belongs to another CUDA"}
	}
	if c.lost.Load() != 0 {
		return nil, c.refused("cuDevicePrimaryCtxRetain")
	}
	var h uintptr
	if err := c.call("cuDevicePrimaryCtxRetain", c.fn.primaryCtxRetain,
		uintptr(unsafe.Pointer(&h)), uintptr(d.h)); err != nil {
		return nil, err
	}
	return &Context{c: c, dev: d, h: h, setArgs: []uintptr{h}}, nil
}
